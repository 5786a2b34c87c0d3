"""Per-packet trace messages, in the words of BMv2's simple_switch log.

Users of the p4lang tutorials debug by reading ``simple_switch``'s log: for
each packet the parser states and select keys, the headers extracted, each
table applied with its key, hit (and entry handle) or miss and the action
entry, each action run, and where the packet goes.  A traced pipeline (built
with ``trace=True``) writes the same lines to the ``softswitch.packets``
logger, each prefixed as BMv2 prefixes them: ``[packet id.copy id] [cxt 0]``.
Messages BMv2 logs at its trace level use :data:`TRACE` (5, below DEBUG);
its debug messages use DEBUG.  An untraced pipeline calls nothing here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

LOG = logging.getLogger("softswitch.packets")
TRACE = 5
DEBUG = logging.DEBUG
logging.addLevelName(TRACE, "TRACE")


def log(level: int, pid: str, message: str) -> None:
    """One message about packet ``pid``."""
    LOG.log(level, "[%s] [cxt 0] %s", pid, message)


def hexkey(fields: Sequence[tuple[int, int]]) -> str:
    """A select key as BMv2 prints it: each (value, width) field in whole bytes of hex."""
    return "".join(_hex(value, width) for value, width in fields)


def _hex(value: int, width: int) -> str:
    return format(int(value), f"0{max(1, (width + 7) // 8) * 2}x")


def table(
    pid: str, name: str, keys: Sequence[tuple[str, int]], values: Sequence[int], result: Any
) -> None:
    """A table applied: its key, hit or miss, and the action entry it runs."""
    log(TRACE, pid, f"Applying table '{name}'")
    if keys:
        lines = "".join(
            f"* {key:<20}: {_hex(v, width)}\n" for (key, width), v in zip(keys, values, strict=True)
        )
        log(DEBUG, pid, "Looking up key:\n" + lines)
    entry = result.entry
    if result.hit and entry is not None:
        log(DEBUG, pid, f"Table '{name}': hit with handle {entry.seq - 1}")
    else:
        log(DEBUG, pid, f"Table '{name}': miss")
    call = result.action_call
    args = "".join(f"{int(a):x}," for a in call.args)
    log(DEBUG, pid, f"Action entry is {call.name} - {args}")
