"""A progress bar for long runs: one redrawn line on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Counts transfers done out of ``total`` and shows the current stage."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stage = ""
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        self.tty = self.stream.isatty()
        self._last_decile = -1

    def set_stage(self, text: str) -> None:
        """Name what runs now (``kv-aware, repeat 2/3``)."""
        self.stage = text
        if self.tty:
            self._draw()
        else:
            print(f"[{self._elapsed()}] {text}", file=self.stream, flush=True)

    def advance(self, n: int = 1) -> None:
        """``n`` more transfers are done."""
        self.done = min(self.total, self.done + n)
        if self.tty:
            self._draw()
        else:
            decile = self.done * 10 // self.total
            if decile != self._last_decile:
                self._last_decile = decile
                print(
                    f"[{self._elapsed()}] {self.done}/{self.total} transfers",
                    file=self.stream,
                    flush=True,
                )

    def close(self) -> None:
        """End the progress line."""
        if self.tty:
            self._draw()
            print(file=self.stream, flush=True)

    def line(self) -> str:
        """The progress line as drawn on a terminal."""
        filled = self.done * self.width // self.total
        bar = "#" * filled + "." * (self.width - filled)
        pct = self.done * 100 // self.total
        counts = f"{self.done}/{self.total} transfers"
        return f"[{bar}] {pct:3d}% {counts} | {self.stage} | {self._elapsed()}"

    def _draw(self) -> None:
        print("\r" + self.line() + "\x1b[K", end="", file=self.stream, flush=True)

    def _elapsed(self) -> str:
        s = int(time.monotonic() - self.started)
        return f"{s // 60}m{s % 60:02d}s"
