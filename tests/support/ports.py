"""Local TCP ports for tests: one that nothing listens on (yet)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
