"""Running ``kvfabric`` as a user does: a child process from the tree's root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kvfabric(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m kvfabric.cli ARGS`` in the tree's root, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=timeout,
    )
