"""A ``kvfabric switch`` child process, started and stopped by pid.

:class:`SwitchProcess` runs ``python -m kvfabric.cli switch ARGV...`` and
returns once the switch printed ``Server listening on HOST:PORT``, the line
it prints only after its ports are open, its program is loaded and its gRPC
port is bound (so ``--grpc-server-addr 127.0.0.1:0`` works: the real port is
read from that line).  Standard error goes to a file, so that a chatty
``--log-console`` can never fill a pipe and stall the switch; :meth:`stop`
sends SIGTERM to that one pid, waits, and kills it only if it does not stop.

Tests, benchmarks and the Mininet lab start switches through this class.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from softswitch.errors import SoftswitchError

READY_PREFIX = "Server listening on "


class LaunchError(SoftswitchError):
    """The switch exited, or did not get ready in time; the message has its stderr."""


class SwitchProcess:
    """One switch process; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        python: str = sys.executable,
        ready_timeout: float = 60.0,
        netns: str | None = None,
    ) -> None:
        self.argv = list(argv)
        self.python = python
        self.ready_timeout = ready_timeout
        self.netns = netns
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self._stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop)
            "w+", prefix="kvfabric-switch-", suffix=".stderr", delete=False
        )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def command(self) -> list[str]:
        base = [self.python, "-m", "kvfabric.cli", "switch", *self.argv]
        return ["ip", "netns", "exec", self.netns, *base] if self.netns else base

    def start(self) -> SwitchProcess:
        """Start the switch and wait until it serves; LaunchError if it does not."""
        self.proc = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = _read_line(self.proc.stdout, self.ready_timeout)
        if line is None or not line.startswith(READY_PREFIX):
            code = self.stop()
            reason = "did not get ready" if code is None else f"exited with status {code}"
            raise LaunchError(f"kvfabric switch {reason}:\n{self.stderr_text()}")
        host, _, port = line[len(READY_PREFIX) :].strip().rpartition(":")
        self.address = f"{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM this pid, wait, SIGKILL if needed; returns the exit status (None if killed)."""
        proc = self.proc
        if proc is None:
            return None
        killed = False
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                killed = True
        if proc.stdout is not None:
            proc.stdout.close()
        return None if killed else proc.returncode

    def stderr_text(self) -> str:
        self._stderr.flush()
        return Path(self._stderr.name).read_text(errors="replace")

    def close(self) -> None:
        """Stop the process and remove the stderr file."""
        self.stop()
        self._stderr.close()
        Path(self._stderr.name).unlink(missing_ok=True)

    def __enter__(self) -> SwitchProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _read_line(stream: object, timeout: float) -> str | None:
    """One line of a child's stdout, or None at end of file or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
        while (left := deadline - time.monotonic()) > 0:
            if sel.select(left):
                line: str = stream.readline()  # type: ignore[attr-defined]
                return line or None
    return None
