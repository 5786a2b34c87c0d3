"""A switch child process, started and stopped by pid.

:class:`SwitchProcess` runs ``python -m kvfabric.cli switch ARGV...`` (or another
command speaking simple_switch_grpc's command line, such as BMv2's
``simple_switch_grpc``) and knows when it is ready to serve:

- by default, once the switch printed ``Server listening on HOST:PORT``, the line
  ``kvfabric switch`` prints only after its ports are open, its program is loaded
  and its gRPC port is bound (so ``--grpc-server-addr 127.0.0.1:0`` works: the real
  port is read from that line). It is read from the stdout pipe, or from the log
  file when the output goes to one;
- with ``ready_addr``, once that address accepts a TCP connection (the switch binds
  it only when ready). This suits a target whose ready line cannot be relied on:
  BMv2 prints it through C++'s buffered stdout, which may sit in the buffer while
  the output goes to a file.

Starting is two steps, :meth:`~SwitchProcess.launch` and
:meth:`~SwitchProcess.wait_ready`, so that a caller can launch many switches and
wait for them together under one deadline; :meth:`~SwitchProcess.start` does both.
A switch that exits before it is ready, or is not ready by the deadline, is a
:class:`LaunchError` carrying its exit status (None if it still runs) and the
output it wrote. Standard error goes to a file (or, with ``log_path``, stdout and
stderr both go to that log), so that a chatty ``--log-console`` can never fill a
pipe and stall the switch.

:meth:`~SwitchProcess.stop` sends SIGTERM to that one pid, waits, and kills it only
if it does not stop; with ``new_session`` the switch runs in its own session and
the signal goes to its process group, which it leads. Nothing is ever killed by
name.

Tests, benchmarks and the Mininet lab (:mod:`lab.nodes`) start switches through
this class.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from softswitch.errors import SoftswitchError
from softswitch.switch.closing import Closing

READY_PREFIX = "Server listening on "


class LaunchError(SoftswitchError):
    """The switch exited, or did not get ready in time; the message has its output.

    ``status`` is the exit status, or None if the switch had not exited when it
    was given up on; ``output`` is what it wrote to stderr (or to its log).
    """

    def __init__(self, message: str, *, status: int | None, output: str) -> None:
        super().__init__(message)
        self.status = status
        self.output = output


class SwitchProcess(Closing):
    """One switch process; use as a context manager or call :meth:`start` / :meth:`stop`.

    Give ``argv``, the arguments of ``kvfabric switch``, or ``command``, a whole
    command line (BMv2's ``simple_switch_grpc ARGV...``, or a stand-in).
    """

    def __init__(
        self,
        argv: Sequence[str] = (),
        *,
        command: Sequence[str] | None = None,
        python: str = sys.executable,
        ready_timeout: float = 60.0,
        netns: str | None = None,
        ready_addr: str | None = None,
        log_path: Path | None = None,
        new_session: bool = False,
    ) -> None:
        if command is not None and argv:
            raise ValueError("give the switch's argv or a whole command, not both")
        self.argv = list(argv)
        self.python = python
        self.ready_timeout = ready_timeout
        self.netns = netns
        self.ready_addr = ready_addr
        self.log_path = log_path
        self.new_session = new_session
        self._command = list(command) if command is not None else None
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self._stderr: IO[str] | None = None
        if log_path is None:
            self._stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in close)
                "w+", prefix="kvfabric-switch-", suffix=".stderr", delete=False
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def command(self) -> list[str]:
        if self._command is not None:
            base = self._command
        else:
            base = [self.python, "-m", "kvfabric.cli", "switch", *self.argv]
        return ["ip", "netns", "exec", self.netns, *base] if self.netns else base

    # -- starting ----------------------------------------------------------------------

    def start(self) -> SwitchProcess:
        """Launch the switch and wait until it serves; stop it and raise LaunchError if not."""
        self.launch()
        try:
            self.wait_ready()
        except LaunchError:
            self.stop()
            raise
        return self

    def launch(self) -> SwitchProcess:
        """Start the process without waiting for it (OSError if it cannot be started)."""
        if self.log_path is None:
            self.proc = self._popen(subprocess.PIPE, self._stderr)
        else:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "w") as log:
                self.proc = self._popen(log, subprocess.STDOUT)
        return self

    def _popen(self, stdout: int | IO[str], stderr: int | IO[str] | None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=self.new_session,
        )

    def wait_ready(self, deadline: float | None = None) -> SwitchProcess:
        """Block until the switch serves, or raise LaunchError; the process is left as is.

        ``deadline`` is a :func:`time.monotonic` time (default: ``ready_timeout`` from
        now); readiness is checked at least once, even past it.
        """
        if self.proc is None:
            raise LaunchError("the switch was not launched", status=None, output="")
        deadline = deadline if deadline is not None else time.monotonic() + self.ready_timeout
        if self.ready_addr is not None:
            self._wait_connect(self.ready_addr, deadline)
            self.address = _local(self.ready_addr)
        elif self.log_path is not None:
            self.address = _local(self._wait_log_line(self.log_path, deadline))
        else:
            self.address = _local(self._wait_stdout_line(deadline))
        return self

    def _wait_stdout_line(self, deadline: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        line = _read_line(self.proc.stdout, deadline - time.monotonic())
        if line is not None and line.startswith(READY_PREFIX):
            return line[len(READY_PREFIX) :].strip()
        if line == "":  # end of file: the switch is exiting
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(1.0)
        raise self._not_ready()

    def _wait_log_line(self, log_path: Path, deadline: float) -> str:
        while True:
            exited = self._exited()
            for line in log_path.read_text(errors="replace").splitlines(keepends=True):
                if line.startswith(READY_PREFIX) and line.endswith("\n"):
                    return line[len(READY_PREFIX) :].strip()
            if exited or time.monotonic() > deadline:
                raise self._not_ready()
            time.sleep(0.05)

    def _wait_connect(self, addr: str, deadline: float) -> None:
        host, _, port = _local(addr).rpartition(":")
        while True:
            if self._exited():
                raise self._not_ready()
            with (
                contextlib.suppress(OSError),
                socket.create_connection((host.strip("[]"), int(port)), 0.2),
            ):
                return
            if time.monotonic() > deadline:
                raise self._not_ready()
            time.sleep(0.05)

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def _not_ready(self) -> LaunchError:
        assert self.proc is not None
        code = self.proc.poll()
        reason = "did not get ready" if code is None else f"exited with status {code}"
        output = self.stderr_text()
        return LaunchError(f"kvfabric switch {reason}:\n{output}", status=code, output=output)

    # -- running and stopping ------------------------------------------------------------

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM this pid, wait, SIGKILL if needed; returns the exit status (None if killed)."""
        proc = self.proc
        if proc is None:
            return None
        killed = False
        if proc.poll() is None:
            self._signal(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(proc.pid, signal.SIGKILL)
                proc.wait()
                killed = True
        if proc.stdout is not None:
            proc.stdout.close()
        return None if killed else proc.returncode

    def _signal(self, pid: int, signum: int) -> None:
        """Signal the pid, or with ``new_session`` the process group it leads."""
        with contextlib.suppress(ProcessLookupError):
            if self.new_session:
                try:
                    os.killpg(pid, signum)
                except PermissionError:
                    os.kill(pid, signum)
            else:
                os.kill(pid, signum)

    def stderr_text(self) -> str:
        """What the switch wrote to stderr (with ``log_path``: its whole log)."""
        if self.log_path is not None:
            try:
                return self.log_path.read_text(errors="replace")
            except OSError:
                return ""
        assert self._stderr is not None
        self._stderr.flush()
        return Path(self._stderr.name).read_text(errors="replace")

    def close(self) -> None:
        """Stop the process and remove the stderr file (a ``log_path`` is kept)."""
        self.stop()
        if self._stderr is not None:
            self._stderr.close()
            Path(self._stderr.name).unlink(missing_ok=True)

    def __enter__(self) -> SwitchProcess:
        return self.start()


def _local(addr: str) -> str:
    """``addr`` with a wildcard host replaced by the loopback address, to connect to."""
    host, _, port = addr.rpartition(":")
    return f"{'127.0.0.1' if host in ('0.0.0.0', '', '[::]') else host}:{port}"


def _read_line(stream: object, timeout: float) -> str | None:
    """One line of a child's stdout ("" at end of file), or None after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
        while (left := deadline - time.monotonic()) > 0:
            if sel.select(left):
                line: str = stream.readline()  # type: ignore[attr-defined]
                return line
    return None
