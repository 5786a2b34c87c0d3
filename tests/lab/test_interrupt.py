"""Ctrl-C (SIGINT by pid) reaches the lab's sender and controller calls at any moment.

``run_experiment`` runs its session under ``asyncio.run``, which turns the first SIGINT
into a cancellation of the session's task; a ``KeyboardInterrupt`` comes out only if
that cancellation goes all the way up. Python 3.11's ``asyncio.wait_for`` drops it
when the call it guards has finished by the time the cancellation lands (CPython
gh-86296): the experiment then ran on as if nothing had been pressed. The first modes
(``ecmp``, ``flowlet``) send through :func:`lab.kvtransfer.send` without the client,
every mode asks the controller through :class:`lab.control.HttpControl`, and the
kv-aware senders ask through :class:`kvfabric.client.AsyncClient`: all three ran under
``wait_for``.

The test runs those calls back to back in a child process, as the session's task
does, and interrupts it by pid over and over: every SIGINT must stop the loop
promptly. With ``wait_for`` about one interrupt in a few was lost.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 30
PROMPT_S = 3.0

CHILD = f"""
import asyncio
from lab.control import HttpControl
from lab.kvtransfer import Receiver, TransferJob, send
from lab.netns import plain_factory
from tests.lab.fake_controller import FakeController
from tests.support.ports import free_port


async def busy() -> None:
    ctl = FakeController()
    await ctl.start()
    port = free_port()
    receiver = Receiver()
    await receiver.start(plain_factory(), ("127.0.0.1", port))
    api = HttpControl("127.0.0.1", ctl.port)
    t = TransferJob("h11", "h21", "127.0.0.1", "127.0.0.1", 2_000, dst_port=port)
    try:
        print("running", flush=True)
        while True:
            await api.set_mode("ecmp")
            await send(t)
            await api.client.request_path("h11", "h21", 2_000)
    finally:
        await receiver.close()
        await ctl.close()


for _ in range({ROUNDS}):
    try:
        asyncio.run(busy())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    else:
        raise SystemExit("the loop ended without an interrupt")
"""


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The child's lines of output as they come (a thread reads them)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.strip())

    threading.Thread(target=read, daemon=True).start()
    return lines


def _next(lines: queue.Queue[str], timeout_s: float) -> str:
    """The next line, or '' if none comes within ``timeout_s``."""
    try:
        return lines.get(timeout=timeout_s)
    except queue.Empty:
        return ""


def test_every_sigint_stops_sends_and_controller_calls_promptly():
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = _lines(proc)
    try:
        for n in range(1, ROUNDS + 1):
            assert _next(lines, 30.0) == "running", f"round {n}: the child did not start"
            time.sleep(0.05)  # well inside the loop of calls
            os.kill(proc.pid, signal.SIGINT)
            assert _next(lines, PROMPT_S) == "interrupted", f"SIGINT {n} of {ROUNDS} was ignored"
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
