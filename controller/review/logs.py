"""Read transfer logs: JSON lines in, usable records out, bad lines counted by reason.

A record is usable when it is a JSON object with a string ``event`` and a wall-clock
time (``time_wall``, which the controller adds to every record with a ``time``).
``transfer`` records also need ``src``, ``dst`` and, unless timed out, a positive
``duration_s``. Anything else is skipped and counted under one reason; the first few
examples of each reason keep their ``file:line`` so the report can point at them.
Records older than ``since`` (wall-clock seconds) are left out, and counted apart.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = 3
"""Locations kept per skip reason."""


@dataclass(slots=True)
class Records:
    """The usable records of one or more logs, and what was skipped."""

    records: list[dict[str, object]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    too_old: int = 0

    def skip(self, reason: str, where: str) -> None:
        """Count one unusable line."""
        self.skipped[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < EXAMPLES:
            shown.append(where)


def read_logs(paths: Iterable[Path], since: float | None = None) -> Records:
    """Every usable record of ``paths`` at or after wall-clock ``since``, sorted by time.

    A file that cannot be read raises OSError (the command reports it)."""
    out = Records()
    for path in paths:
        out.files.append(str(path))
        with path.open("rb") as f:
            for number, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                out.lines += 1
                record = _record(raw, out, f"{path}:{number}")
                if record is None:
                    continue
                if since is not None and float(record["time_wall"]) < since:  # type: ignore[arg-type]
                    out.too_old += 1
                    continue
                out.records.append(record)
    out.records.sort(key=lambda r: float(r["time_wall"]))  # type: ignore[arg-type]
    return out


def _record(raw: bytes, out: Records, where: str) -> dict[str, object] | None:
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        out.skip("not JSON", where)
        return None
    if not isinstance(value, dict):
        out.skip("not a JSON object", where)
        return None
    if not isinstance(value.get("event"), str):
        out.skip("no 'event'", where)
        return None
    if not _number(value.get("time_wall")):
        out.skip("no wall-clock time ('time_wall')", where)
        return None
    if value["event"] == "transfer":
        if not isinstance(value.get("src"), str) or not isinstance(value.get("dst"), str):
            out.skip("transfer without 'src' and 'dst'", where)
            return None
        duration = value.get("duration_s")
        if not value.get("timed_out") and not (_number(duration) and float(duration) > 0):  # type: ignore[arg-type]
            out.skip("transfer without a positive 'duration_s'", where)
            return None
    return value


def _number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
