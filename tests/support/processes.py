"""Stopping a child process a test started: by its pid, politely first."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace_s: float = 10.0) -> None:
    """Send ``sig`` to ``proc``'s pid if it still runs, wait up to ``grace_s`` for it,
    then SIGKILL it; it is reaped either way."""
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
