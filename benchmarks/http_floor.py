"""What an HTTP server costs here before the API does anything: an empty handler behind
each of the controller's server paths, and the floor beneath them.

Each server runs alone in a child process and answers ``POST /v1/transfers`` with a
fixed 57-byte JSON body, whatever the request:

- ``aiohttp``: :class:`controller.service.http.server.HttpServer` without the lane (aiohttp's
  protocol, the API's limits and JSON errors): what every request cost before the lane;
- ``lane``: the same server with :mod:`controller.service.http.lane` in front, the handler
  answering through ``now`` as the API's decisions do;
- ``floor-each``: an asyncio protocol that splits requests by their ``Content-Length``
  and writes each answer at once: the event loop and the socket calls alone;
- ``floor-joined``: the same, the answers to one read in one write.

For each, ``--rounds`` bursts of ``--burst`` requests written at once over
``--connections`` connections (:mod:`benchmarks._pipelined`), timing every answer
from its connection's write, and the server process's CPU time per request (from the
kernel's scheduler statistics). The design's goal for the API, every answer of such a
burst within 10 ms, needs under 39 us of CPU per request on one core.

    .venv/bin/python -m benchmarks.http_floor [--burst 256] [--connections 16] [--rounds 20]

Prints a table and, last, one JSON line with each server's ``cpu_us``, ``last_ms``
(the median round's last answer) and ``worst_ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
from collections.abc import Callable

from benchmarks._pipelined import cpu_s, pipelined
from controller.service.http.lane import Lanes
from controller.service.http.server import HttpServer, Request, Response

BODY = b'{"id":"t-1","path":"leaf1>spine1>leaf2","spine":"spine1"}'
ANSWER = (
    b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    % (
        len(BODY),
        BODY,
    )
)
SERVERS = ("aiohttp", "lane", "floor-each", "floor-joined")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=256)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    request = json.dumps({"src": "h11", "dst": "h21", "bytes": 4_000_000}).encode()
    one = (
        b"POST /v1/transfers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(request), request)
    )
    per = [
        args.burst // args.connections + (k < args.burst % args.connections)
        for k in range(args.connections)
    ]
    payloads = [one * n for n in per]
    results: dict[str, dict[str, float]] = {}
    print(f"{'server':<14} {'CPU/request':>12} {'last answer':>12} {'worst':>9}")
    for name in SERVERS:
        ready = multiprocessing.Queue()  # type: ignore[var-annotated]
        child = multiprocessing.Process(target=_serve, args=(name, ready), daemon=True)
        child.start()
        try:
            port = int(ready.get(timeout=30))
            assert child.pid is not None
            pipelined("127.0.0.1", port, payloads, per)  # warm-up
            cpu0 = cpu_s(child.pid)
            last = []
            for _ in range(args.rounds):
                _, took, answers = pipelined("127.0.0.1", port, payloads, per)
                if any(status != 201 for status, _ in answers):
                    raise SystemExit(f"{name}: a request was not answered 201")
                last.append(max(took))
            cpu = (cpu_s(child.pid) - cpu0) / (args.rounds * args.burst)
        finally:
            child.terminate()
            child.join(5)
        last.sort()
        results[name] = {
            "cpu_us": round(cpu * 1e6, 1),
            "last_ms": round(statistics.median(last), 2),
            "worst_ms": round(last[-1], 2),
        }
        r = results[name]
        print(
            f"{name:<14} {r['cpu_us']:>9.1f} us {r['last_ms']:>9.2f} ms {r['worst_ms']:>6.2f} ms",
            flush=True,
        )
    print(
        json.dumps(
            {
                "benchmark": "http_floor",
                "burst": args.burst,
                "connections": args.connections,
                "rounds": args.rounds,
                "servers": results,
                "load": round(os.getloadavg()[0], 2),
            }
        )
    )


def _serve(name: str, ready: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    asyncio.run(_run(name, ready))


async def _run(name: str, ready: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    loop = asyncio.get_running_loop()
    if name.startswith("floor"):
        joined = name == "floor-joined"
        server = await loop.create_server(lambda: _Floor(joined), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
    else:

        async def handler(_request: Request) -> Response:
            return Response(201, text=BODY)

        def at_once(_request: Request) -> Response:
            return Response(201, text=BODY)

        http = HttpServer(handler, lanes=Lanes(at_once) if name == "lane" else None)
        _, port = await http.start("127.0.0.1", 0)
    ready.put(port)
    await asyncio.Event().wait()


class _Floor(asyncio.Protocol):
    """Splits requests by ``Content-Length`` and answers each with :data:`ANSWER`."""

    def __init__(self, joined: bool) -> None:
        self.joined = joined
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        write: Callable[[bytes], None] = self.transport.write
        buf, out = self.buf + data, []
        while (head_end := buf.find(b"\r\n\r\n")) >= 0:
            at = buf.find(b"Content-Length: ", 0, head_end) + 16
            end = head_end + 4 + int(buf[at : buf.find(b"\r\n", at)])
            if len(buf) < end:
                break
            buf = buf[end:]
            if self.joined:
                out.append(ANSWER)
            else:
                write(ANSWER)
        if out:
            write(b"".join(out))
        self.buf = buf


if __name__ == "__main__":
    main()
