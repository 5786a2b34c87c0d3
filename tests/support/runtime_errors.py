"""What the runtime's checks say: the code of the :class:`RuntimeConfigError` a call raises.

The runtime's objects (tables, profiles, externs, the replication engine, value
sets) refuse bad control-plane input with a :class:`RuntimeConfigError` whose
``code`` is the gRPC status the P4Runtime server answers with; the runtime's
tests assert on that code.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from softswitch.errors import RuntimeConfigError


def code_of(fn: Callable[..., object], *args: object) -> str:
    """The code of the RuntimeConfigError that ``fn(*args)`` raises (it must raise one)."""
    with pytest.raises(RuntimeConfigError) as info:
        fn(*args)
    return info.value.code
