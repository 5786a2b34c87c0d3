"""Processes the lab starts: tracked by pid, stopped by pid, measured from /proc.

Every process the lab launches (switches, iperf3 servers and clients, the
controller) is started in its own session, so that its pid is also its process
group: stopping it signals that group (SIGTERM, then SIGKILL after a grace period)
and never anything found by name. :class:`ProcessTable` keeps the processes of one
lab so that a normal exit, an exception and Ctrl-C all stop the same set.

:func:`cpu_seconds` reads a pid's user + system time from ``/proc/PID/stat``: the
validity check compares it with wall-clock time to see whether a switch process
saturated its core.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def terminate(process: subprocess.Popen[bytes], grace_s: float = 5.0) -> int:
    """Stop ``process`` (and its session) by pid: SIGTERM, wait, then SIGKILL."""
    if process.poll() is None:
        signal_session(process.pid, signal.SIGTERM)
        try:
            return process.wait(grace_s)
        except subprocess.TimeoutExpired:
            signal_session(process.pid, signal.SIGKILL)
    return process.wait()


def signal_session(pid: int, signum: int) -> None:
    """Signal the process group that ``pid`` leads (it was started in its own session)."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
    except PermissionError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    # fields[0] is the state (field 3 of proc(5)); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


@dataclass(slots=True)
class Tracked:
    """A process the lab started, with a name for messages."""

    name: str
    process: subprocess.Popen[bytes]
    log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        """The process's pid (also its process group id)."""
        return self.process.pid


Launcher = Callable[..., "subprocess.Popen[bytes]"]
"""Popen or a node's ``popen`` (Mininet's, which enters the node's namespace)."""


@dataclass(slots=True)
class ProcessTable:
    """The processes of one lab, stopped together by pid."""

    entries: list[Tracked] = field(default_factory=list)

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path | None = None,
        launcher: Launcher | None = None,
        stdout: int | None = None,
    ) -> Tracked:
        """Start ``argv`` in its own session, output to ``log_path`` (or ``stdout``)."""
        log = open(log_path, "wb") if log_path is not None else None  # noqa: SIM115
        out: int | IO[bytes] | None = log if log is not None else stdout
        try:
            if launcher is None:
                process = subprocess.Popen(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=out if out is not None else subprocess.DEVNULL,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            else:  # Mininet's node.popen: `mnexec -da PID` makes the new session
                process = launcher(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=out if out is not None else subprocess.DEVNULL,
                    stderr=subprocess.STDOUT,
                )
        except OSError:
            if log is not None:
                log.close()
            raise
        entry = Tracked(name, process, log)
        self.entries.append(entry)
        return entry

    def stop(self, entry: Tracked, grace_s: float = 3.0) -> int:
        """Stop one process and forget it; return its exit status."""
        code = terminate(entry.process, grace_s)
        if entry.log is not None:
            entry.log.close()
        if entry in self.entries:
            self.entries.remove(entry)
        return code

    def stop_all(self, grace_s: float = 3.0) -> None:
        """Stop every process, newest first: SIGTERM to all, one grace period, then SIGKILL."""
        entries, self.entries = list(reversed(self.entries)), []
        for e in entries:
            if e.process.poll() is None:
                signal_session(e.pid, signal.SIGTERM)
        for e in entries:
            try:
                e.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                signal_session(e.pid, signal.SIGKILL)
                e.process.wait()
            if e.log is not None:
                e.log.close()

    @property
    def pids(self) -> list[int]:
        """The pids of the processes still tracked."""
        return [e.pid for e in self.entries]
