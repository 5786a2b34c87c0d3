"""Held transfers' starts: who waits for a release, and the timer that releases.

The engine holds a transfer (:mod:`controller.engine.schedule`) and later returns a
:class:`~controller.engine.Released` update; this module turns that into the answer
of its sender's long poll, ``GET /v1/transfers/{id}/start``:

- :meth:`Starts.on_released` (the enforcer calls it for each such update) wakes the
  transfer's waiters and observes its queueing time
  (``kvfabric_transfer_queue_seconds``: request to granted start);
- :meth:`Starts.wait` is the long poll: released at once when the transfer is not
  held, else when its release comes or the timeout passes;
- :meth:`Starts.run` is a task that calls ``engine.releases`` at
  ``engine.next_release()`` (a transfer never waits past ``max_wait`` for the next
  telemetry tick), woken early by :meth:`Starts.poke` when a new transfer is held.

A long poll rather than server-sent events: any HTTP client can do it (C with libcurl,
``curl`` itself, ``http.client``), it is one plain request per held transfer, with no
stream to parse and no connection to keep open between transfers; the operators'
event stream (``/ui/events``) is for watching, not for a sender waiting on one id.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from controller.engine import Engine, Released, Update
from controller.errors import UnknownTransferError
from controller.service.metrics import Metrics

_FORGOTTEN_KEPT = 4096
"""Cancelled ids remembered, to say so in a 404 (the oldest are forgotten)."""


class Starts:
    """The waiters of held transfers, by engine id (see the module docstring)."""

    def __init__(self, engine: Engine, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.metrics = metrics
        self.clock = clock
        self._events: dict[int, asyncio.Event] = {}
        self._cancelled: OrderedDict[int, None] = OrderedDict()
        self._wake = asyncio.Event()

    def on_released(self, u: Released) -> None:
        """A held transfer may start: wake its waiters, observe its time in the queue."""
        self.metrics.queue_seconds.observe(u.queued_s)
        event = self._events.pop(u.transfer_id, None)
        if event is not None:
            event.set()

    def decided(self, transfer_id: int, held: bool) -> None:
        """A transfer was answered: one that goes now has waited 0; a held one may
        move the next release earlier."""
        if held:
            self.poke()
        else:
            self.metrics.queue_seconds.observe(0.0)

    def cancelled(self, transfer_id: int) -> None:
        """A held transfer was given up: its waiters learn it (404, naming the cancel)."""
        self._cancelled[transfer_id] = None
        while len(self._cancelled) > _FORGOTTEN_KEPT:
            self._cancelled.popitem(last=False)
        event = self._events.pop(transfer_id, None)
        if event is not None:
            event.set()

    async def wait(self, transfer_id: int, api_id: str, timeout_s: float) -> float | None:
        """Wait up to ``timeout_s`` for ``transfer_id``'s release: None once it may start,
        else the expected wait still ahead (seconds). UnknownTransferError when it is not
        in flight, or is cancelled meanwhile."""
        left = self._waiting(transfer_id, api_id)
        if left is None or timeout_s <= 0:
            return left
        event = self._events.setdefault(transfer_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout_s)
        return self._waiting(transfer_id, api_id)

    def _waiting(self, transfer_id: int, api_id: str) -> float | None:
        """The expected wait of a held transfer, None once it may start."""
        if transfer_id in self._cancelled:
            raise UnknownTransferError(f"transfer {api_id!r} was cancelled")
        try:
            left = self.engine.waiting(transfer_id, self.clock())
        except UnknownTransferError:
            self._events.pop(transfer_id, None)
            raise UnknownTransferError(
                f"no transfer {api_id!r} is held or in flight (completed, timed out or never "
                "decided)"
            ) from None
        if not self.engine.is_held(transfer_id):
            self._events.pop(transfer_id, None)
            return None
        return left

    def poke(self) -> None:
        """The next release may be earlier: the timer looks again."""
        self._wake.set()

    async def run(self, apply: Callable[[list[Update]], Awaitable[object]]) -> None:
        """Release held transfers when due, forever (``apply`` applies the updates)."""
        while True:
            due = self.engine.next_release()
            timeout = None if due is None else max(0.0, due - self.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            await apply(self.engine.releases(self.clock()))
