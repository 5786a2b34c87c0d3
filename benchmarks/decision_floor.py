"""The floor beneath the API's burst goal: the engine's decisions behind the leanest
server this machine can run, in one process and split over two.

The goal (issue 14): 256 requests sent within 10 ms over 16 connections, each answered
within 10 ms of being sent. ``benchmarks/controller_api.py`` measures the controller
against it; this benchmark asks what *any* controller built on the engine could reach
here, by taking away everything but the decision. Each server runs in child processes
and answers ``POST /v1/transfers``:

- ``bare``: requests split by their ``Content-Length``, a fixed answer, the answers to
  one read in one write (:class:`benchmarks.http_floor._Floor`'s framing): the event
  loop and the socket calls alone;
- ``engine``: the same framing, each body parsed with :mod:`json`, the controller's own
  engine deciding it (:class:`controller.engine.Engine` on the 2 x 2 fabric the API
  benchmark drives, 4 hosts, telemetry fresh: a poll of every switch and a tick every
  100 ms, as the service does) and its decision encoded as the API's answer: no schema
  checks, metrics, traces, ledger or readiness, which the controller adds;
- ``split``: the same work over two processes, so that a burst uses both cores: framing
  and JSON in one, the engine in the other; the requests of one turn of the front's
  event loop go to the engine in one message over a socket pair, and their decisions
  come back in one.

Each server gets ``--rounds`` bursts of ``--burst`` requests over ``--connections``
connections (:mod:`benchmarks._pipelined`), sent within ``--window-ms`` as the goal
words it (each answer timed from its own send), then as many written at once (each
answer timed from its connection's write). After each burst the engine completes all
but ``--inflight`` of its transfers, so that every burst starts from the same number in
flight. Per server and way of sending it reports the median and worst round's slowest
answer, how many rounds met the goal, and the CPU time per request of each process
(from the kernel's scheduler statistics, which on a virtual machine include the time
the hypervisor stole; the split server's front first, then its engine).

    .venv/bin/python -m benchmarks.decision_floor [--burst 256] [--connections 16]
        [--rounds 12] [--window-ms 10] [--inflight 32]

Prints a table and, last, one JSON line with each server's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import pickle
import random
import select
import socket
import statistics
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from benchmarks._pipelined import cpu_s, paced, pipelined
from benchmarks.controller_api import _asks
from benchmarks.http_floor import ANSWER
from benchmarks.scheduler import _Poller
from controller.config import ControllerSettings, KvClassSettings, SafetySettings
from controller.config.generate import leaf_spine
from controller.engine import Decision, Demand, Engine
from controller.topology import Topology

SERVERS = ("bare", "engine", "split")
GOAL_MS = 10.0
POLL_S = 0.1
RESET = b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
"""Completes all but ``--inflight`` of the engine's transfers between bursts."""

Ask = tuple[str, str, int] | None
"""A transfer request's source, destination and size; None for :data:`RESET`."""
Fields = tuple[Any, ...] | int
"""A decision's answer fields; for :data:`RESET`, how many transfers it completed."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the table, the last line one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=256)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--window-ms", type=float, default=10.0)
    parser.add_argument("--inflight", type=int, default=32, help="transfers kept in flight")
    args = parser.parse_args(argv)
    asks = _asks(args.burst)
    per = [
        args.burst // args.connections + (k < args.burst % args.connections)
        for k in range(args.connections)
    ]
    at_once, start = [], 0
    for count in per:
        at_once.append(b"".join(asks[start : start + count]))
        start += count
    results: dict[str, dict[str, dict[str, object]]] = {}
    print(
        f"{'server':<8} {'sent':<8} {'slowest answer: median':>23} {'worst':>9} "
        f"{'rounds met':>11} {'CPU/request':>16} {'pinned':>7}"
    )
    for name in SERVERS:
        port, processes = _start(name, args.inflight)
        children = [p.pid for p in processes if p.pid is not None]
        try:
            pipelined("127.0.0.1", port, at_once, per)  # warm-up
            _reset(port)
            figures: dict[str, dict[str, object]] = {}
            for way in ("paced", "at-once"):
                slowest, cpu, pinned = [], [], 0
                for _ in range(args.rounds):
                    cpu0 = [cpu_s(pid) for pid in children]
                    if way == "paced":
                        _, took, answers = paced(
                            "127.0.0.1", port, asks, args.connections, args.window_ms / 1e3
                        )
                    else:
                        _, took, answers = pipelined("127.0.0.1", port, at_once, per)
                    used = [cpu_s(pid) - c for pid, c in zip(children, cpu0, strict=True)]
                    if any(status != 201 for status, _ in answers):
                        raise SystemExit(f"{name}: a request was not answered 201")
                    slowest.append(max(took))
                    pinned += sum(b'"placement": "pinned"' in body for _, body in answers)
                    cpu.append(used)
                    _reset(port)
                figures[way] = _figures(slowest, cpu, args.burst)
                figures[way]["pinned_share"] = round(pinned / (args.rounds * args.burst), 3)
                _row(name, way, figures[way])
            results[name] = figures
        finally:
            for p in processes:
                p.terminate()
                p.join(10)
    print(
        json.dumps(
            {
                "benchmark": "decision_floor",
                "burst": args.burst,
                "connections": args.connections,
                "rounds": args.rounds,
                "window_ms": args.window_ms,
                "goal_ms": GOAL_MS,
                "servers": results,
                "load": round(os.getloadavg()[0], 2),
            }
        )
    )
    return 0


def _figures(slowest: list[float], cpu: list[list[float]], burst: int) -> dict[str, object]:
    ordered = sorted(slowest)
    per_process = [statistics.median(c[k] for c in cpu) / burst * 1e6 for k in range(len(cpu[0]))]
    return {
        "slowest_median_ms": round(statistics.median(ordered), 2),
        "slowest_worst_ms": round(ordered[-1], 2),
        "rounds_met": sum(s < GOAL_MS for s in slowest),
        "rounds": len(slowest),
        "cpu_us_per_request": [round(us, 1) for us in per_process],
    }


def _row(name: str, way: str, f: dict[str, object]) -> None:
    cpu = f["cpu_us_per_request"]
    assert isinstance(cpu, list)
    print(
        f"{name:<8} {way:<8} {f['slowest_median_ms']:>20} ms {f['slowest_worst_ms']:>6} ms "
        f"{f['rounds_met']:>5} of {f['rounds']:<3} {' + '.join(f'{c:g}' for c in cpu):>13} us "
        f"{f['pinned_share']:>7.0%}",
        flush=True,
    )


def _reset(port: int) -> None:
    _, _, answers = pipelined("127.0.0.1", port, [RESET], [1])
    if answers[0][0] != 201:
        raise SystemExit(f"the reset was answered {answers[0][0]}")


def _start(name: str, inflight: int) -> tuple[int, list[multiprocessing.Process]]:
    """Start server ``name``: its port and its processes."""
    ready: multiprocessing.Queue[int] = multiprocessing.Queue()
    processes = []
    if name == "split":
        front_end, engine_end = socket.socketpair()
        processes.append(multiprocessing.Process(target=_front_process, args=(front_end, ready)))
        processes.append(
            multiprocessing.Process(target=_engine_process, args=(engine_end, inflight))
        )
    else:
        processes.append(multiprocessing.Process(target=_one_process, args=(name, inflight, ready)))
    for p in processes:
        p.daemon = True
        p.start()
    try:
        port = ready.get(timeout=60)
    except BaseException:
        for p in processes:
            p.terminate()
            p.join(10)
        raise
    return port, processes


# -- the engine --------------------------------------------------------------------------


class _Decider:
    """The controller's engine on the 2 x 2 fabric, its telemetry kept fresh."""

    def __init__(self, inflight: int) -> None:
        settings = replace(
            ControllerSettings(),
            kv_class=KvClassSettings(10, 1024, 1024 + 4000),
            safety=replace(SafetySettings(), transfer_timeout_s=3600.0, reroute_limit=10**9),
        )
        config = leaf_spine(2, 2, 2, link_bps=10_000_000_000, controller=settings, name="floor")
        topology = Topology(config)
        now = time.monotonic()
        self.engine = Engine(topology, now=now - 2 * POLL_S)
        self.poller = _Poller(self.engine, topology, random.Random(1))
        self.poller.poll(now - POLL_S)
        self.poller.poll(now)
        self.next_poll = now + POLL_S
        self.inflight = inflight
        self.live: deque[int] = deque()

    def poll_due(self) -> None:
        """A poll of every switch and a tick, if one is due."""
        now = time.monotonic()
        if now >= self.next_poll:
            self.poller.poll(now)
            self.next_poll = now + POLL_S

    def answer(self, ask: Ask) -> Fields:
        if ask is None:
            done = 0
            while len(self.live) > self.inflight:
                self.engine.complete(self.live.popleft(), 0.05, time.monotonic())
                done += 1
            return done
        d, _ = self.engine.decide(Demand(*ask), time.monotonic())
        self.live.append(d.transfer_id)
        return _fields(d)


def _fields(d: Decision) -> tuple[Any, ...]:
    tag = (d.tag.dscp, d.tag.src_port) if d.tag is not None else None
    return (
        d.transfer_id, d.trace_id, d.src, d.dst, d.bytes,
        str(d.path) if d.path is not None else None,
        d.path.spine if d.path is not None else None,
        str(d.best) if d.best is not None else None,
        str(d.mode), d.reason, d.expected_s, list(d.fallbacks), tag, d.held,
    )  # fmt: skip


def _answer(fields: Fields) -> bytes:
    """The HTTP answer of one decision (the API's fields) or of a reset."""
    if isinstance(fields, int):
        body = b'{"completed":%d}' % fields
    else:
        (
            tid,
            trace,
            src,
            dst,
            size,
            path,
            spine,
            best,
            mode,
            reason,
            expected,
            fallbacks,
            tag,
            held,
        ) = fields
        body = json.dumps(
            {
                "id": f"floor-{tid}",
                "trace_id": trace,
                "src": src,
                "dst": dst,
                "bytes": size,
                "path": path,
                "spine": spine,
                "placement": "pinned" if path else "ecmp",
                "best": best,
                "mode": mode,
                "reason": reason,
                "expected_s": expected,
                "fallbacks": fallbacks,
                "tag": {"dscp": tag[0], "tos": tag[0] << 2, "src_port": tag[1]} if tag else None,
                "held": held,
                "wait_ms": 0.0,
                "start_at": None,
            }
        ).encode()
    return (
        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (
            len(body),
            body,
        )
    )


def _parse(buf: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The whole requests at the start of ``buf`` (request line, body), and the rest."""
    requests = []
    while (head_end := buf.find(b"\r\n\r\n")) >= 0:
        at = buf.find(b"Content-Length: ", 0, head_end) + 16
        end = head_end + 4 + int(buf[at : buf.find(b"\r\n", at)])
        if len(buf) < end:
            break
        requests.append((buf[: buf.find(b"\r\n")], buf[head_end + 4 : end]))
        buf = buf[end:]
    return requests, buf


def _ask(line: bytes, body: bytes) -> Ask:
    if b"/reset" in line:
        return None
    fields = json.loads(body)
    return (fields["src"], fields["dst"], fields["bytes"])


# -- one process -------------------------------------------------------------------------


class _Server(asyncio.Protocol):
    """Answers each whole request with ``handle``'s answer, one write per read."""

    def __init__(self, handle: Callable[[bytes, bytes], bytes]) -> None:
        self.handle = handle
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        requests, self.buf = _parse(self.buf + data)
        if requests:
            self.transport.write(b"".join(self.handle(line, body) for line, body in requests))


def _one_process(name: str, inflight: int, ready: multiprocessing.Queue[int]) -> None:
    asyncio.run(_serve_one(name, inflight, ready))


async def _serve_one(name: str, inflight: int, ready: multiprocessing.Queue[int]) -> None:
    loop = asyncio.get_running_loop()
    handle: Callable[[bytes, bytes], bytes] = lambda _line, _body: ANSWER  # noqa: E731
    if name != "bare":
        decider = _Decider(inflight)

        def decide(line: bytes, body: bytes) -> bytes:
            return _answer(decider.answer(_ask(line, body)))

        def poll() -> None:
            decider.poll_due()
            loop.call_later(POLL_S, poll)

        handle = decide
        loop.call_later(POLL_S, poll)
    server = await loop.create_server(lambda: _Server(handle), "127.0.0.1", 0)
    gc.collect()
    gc.freeze()
    ready.put(server.sockets[0].getsockname()[1])
    await asyncio.Event().wait()


# -- two processes -----------------------------------------------------------------------


def _send(sock: socket.socket, obj: object) -> None:
    blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("!I", len(blob)) + blob)


def _messages(buf: bytes) -> tuple[list[Any], bytes]:
    """The whole length-prefixed messages at the start of ``buf``, and the rest."""
    out = []
    while len(buf) >= 4:
        (n,) = struct.unpack_from("!I", buf)
        if len(buf) < 4 + n:
            break
        out.append(pickle.loads(buf[4 : 4 + n]))
        buf = buf[4 + n :]
    return out, buf


def _engine_process(sock: socket.socket, inflight: int) -> None:
    """Decide each message's requests in order and send their answer fields back."""
    decider = _Decider(inflight)
    gc.collect()
    gc.freeze()
    buf = b""
    while True:
        readable, _, _ = select.select(
            [sock], [], [], max(0.0, decider.next_poll - time.monotonic())
        )
        decider.poll_due()
        if not readable:
            continue
        chunk = sock.recv(1 << 20)
        if not chunk:
            return
        messages, buf = _messages(buf + chunk)
        for asks in messages:
            _send(sock, [decider.answer(ask) for ask in asks])


class _Front:
    """The front process's link to the engine: the requests of one turn of the event
    loop leave in one message; answers are written to their connections in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.pending: list[tuple[_Split, Ask]] = []
        self.waiting: deque[list[_Split]] = deque()
        self.buf = b""
        sock.setblocking(True)
        self.loop.add_reader(sock, self._answers)

    def ask(self, conn: _Split, ask: Ask) -> None:
        if not self.pending:
            self.loop.call_soon(self._flush)
        self.pending.append((conn, ask))

    def _flush(self) -> None:
        batch, self.pending = self.pending, []
        self.waiting.append([conn for conn, _ in batch])
        _send(self.sock, [ask for _, ask in batch])

    def _answers(self) -> None:
        messages, self.buf = _messages(self.buf + self.sock.recv(1 << 20))
        for fields in messages:
            out: dict[_Split, list[bytes]] = {}
            for conn, f in zip(self.waiting.popleft(), fields, strict=True):
                out.setdefault(conn, []).append(_answer(f))
            for conn, parts in out.items():
                assert conn.transport is not None
                conn.transport.write(b"".join(parts))


class _Split(_Server):
    """A connection of the front process: its requests go to the engine's process."""

    def __init__(self, front: _Front) -> None:
        super().__init__(lambda _line, _body: b"")
        self.front = front

    def data_received(self, data: bytes) -> None:
        requests, self.buf = _parse(self.buf + data)
        for line, body in requests:
            self.front.ask(self, _ask(line, body))


def _front_process(sock: socket.socket, ready: multiprocessing.Queue[int]) -> None:
    async def serve() -> None:
        front = _Front(sock)
        server = await asyncio.get_running_loop().create_server(
            lambda: _Split(front), "127.0.0.1", 0
        )
        gc.collect()
        gc.freeze()
        ready.put(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    raise SystemExit(main())
