"""Resources that a ``with`` block closes.

:class:`Closing` is the one ``__exit__`` of the switch's resources (a pcap file, a
switch process): leaving the block calls ``close()``, whatever the outcome, and
lets an exception through.  ``__enter__`` returns the resource itself; a class
whose resource must be started first (:class:`~softswitch.switch.process.SwitchProcess`)
overrides it.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """A context manager that closes itself on exit."""

    def close(self) -> None:
        """Release the resource; called once on leaving a ``with`` block."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
