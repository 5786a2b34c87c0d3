"""The JSON-lines transfer log: one object per line, flushed as written.

The engine's records (``transfer``, ``mode``, ``link``, ``efficiency``) carry times on
the service's monotonic clock; :class:`TransferLog` adds their wall-clock twins
(``time_wall``, ``requested_at_wall``, ``completed_at_wall``, seconds since the Unix
epoch) so a line can be read without knowing when the controller started. The shell
adds its own records (``decision``, ``alert``, ``adopted``, ``pin_error``, and every
10 s ``tiers``, each tier's mean and p95 utilisation). Without a
file the log is kept only in memory (the last ``keep`` lines), which is what tests
and ``GET /v1/fabric`` read.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

_TIMES = ("time", "requested_at", "granted_start_at", "started_at", "completed_at")


class TransferLog:
    """Append JSON lines to ``path`` (if any) and keep the last ``keep`` in memory."""

    def __init__(self, path: Path | None, wall_offset: float, keep: int = 1000) -> None:
        self.path = path
        self.wall_offset = wall_offset
        self.recent: deque[dict[str, object]] = deque(maxlen=keep)
        self.listeners: list[Callable[[dict[str, object]], None]] = []
        """Called with every record as written (the tracer ends spans on them)."""
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8", buffering=1)

    def write(self, event: str, fields: Mapping[str, object]) -> dict[str, object]:
        """Write one record; returns it as written."""
        record: dict[str, object] = {"event": event, **fields}
        for name in _TIMES:
            value = record.get(name)
            if isinstance(value, float | int) and not isinstance(value, bool):
                record[f"{name}_wall"] = round(float(value) + self.wall_offset, 6)
        self.recent.append(record)
        for listener in self.listeners:
            listener(record)
        if self._file is not None:
            self._file.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
        return record

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None
