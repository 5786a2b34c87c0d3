"""Driving a tutorial's Mininet CLI through pipes, one command per prompt.

``make run`` ends in Mininet's CLI.  Its host commands (``h1 ping h2``) forward
whatever arrives on stdin to the host while they run, so a script piped in
whole would be eaten by the first command.  :class:`MininetSession` therefore
writes one command, reads until the next ``mininet>`` prompt, and only then
writes the next: the way a person types.  Everything read is kept in
:attr:`transcript`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

PROMPT = b"mininet> "


class SessionError(Exception):
    """The exercise's Mininet did not reach, or did not come back to, its prompt."""


class MininetSession:
    """``argv`` (e.g. ``make run``) in ``cwd``, with its Mininet CLI on pipes."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.transcript = bytearray()

    def read_until_prompt(self, timeout: float) -> str:
        """Output up to the next prompt; SessionError if it does not come in ``timeout`` s."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        start = len(self.transcript)
        deadline = time.monotonic() + timeout
        while not self.transcript[start:].endswith(PROMPT):
            left = deadline - time.monotonic()
            if left <= 0:
                raise SessionError(f"no Mininet prompt within {timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise SessionError(f"make run ended (status {self.proc.wait()}) before a prompt")
            self.transcript += chunk
        return self.transcript[start:].decode("utf-8", "replace")

    def command(self, line: str, timeout: float = 120.0) -> str:
        """Type ``line`` at the prompt; its output.

        A command still running after ``timeout`` s is interrupted as Ctrl-C
        would (SIGINT to Mininet, which stops the host command and prompts
        again), so that the session can still exit and Mininet clean up; then
        SessionError says which command it was.
        """
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        try:
            return self.read_until_prompt(timeout)
        except SessionError:
            if self.proc.poll() is not None:
                raise
            self.interrupt()
            self.read_until_prompt(60)
            raise SessionError(f"{line!r} did not finish within {timeout:.0f} s") from None

    def interrupt(self) -> None:
        """SIGINT to the Python processes of the session (Mininet), as Ctrl-C sends."""
        for pid in [self.proc.pid, *_descendants(self.proc.pid)]:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"python" in cmdline.split(b"\0")[0]:
                os.kill(pid, signal.SIGINT)

    def exit(self, timeout: float = 120.0) -> int:
        """``exit`` the CLI and wait for ``make run`` to end; its status."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(b"exit\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self.transcript += chunk
        try:
            return self.proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise SessionError("Mininet did not stop after exit") from None

    def kill(self) -> None:
        """Stop ``make run`` and everything it started in its session."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from /proc's children lists)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            found.extend(children)
            todo.extend(children)
    return found
