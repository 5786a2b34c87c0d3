"""The fast lane's connection handling on a real server (an ephemeral port, real sockets):
the idle timeout of kept-alive connections and a client that does not read its answers.
"""

from __future__ import annotations

import asyncio

from controller.service.http.lane import Lanes
from controller.service.http.server import HttpServer, Request, Response

BIG = 64 * 1024


def answer(request: Request) -> Response | None:
    """Answers ``GET /n/<k>`` with ``k`` and 64 KiB of padding at once, and ``GET /nan``
    with a body JSON cannot hold (a handler's bug)."""
    if request.path == "/nan":
        return Response(200, {"value": float("nan")})
    if request.method == "GET" and request.path.startswith("/n/"):
        k = request.path.rsplit("/", 1)[1]
        return Response(200, text=k.encode() + b" " + b"x" * BIG, content_type="text/plain")
    return None


async def aiohttp_side(request: Request) -> Response:
    return Response(200, {"path": request.path})


async def serve(idle_timeout_s: float = 30.0) -> tuple[HttpServer, int, list[int]]:
    handed: list[int] = []
    server = HttpServer(
        aiohttp_side,
        lanes=Lanes(answer, lambda: handed.append(1)),
        idle_timeout_s=idle_timeout_s,
    )
    _, port = await server.start("127.0.0.1", 0)
    return server, port, handed


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) != b"\r\n":
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, await reader.readexactly(length)


def test_an_idle_connection_is_closed_and_a_busy_one_kept() -> None:
    async def run() -> None:
        server, port, _ = await serve(idle_timeout_s=0.3)
        try:
            idle_r, _idle_w = await asyncio.open_connection("127.0.0.1", port)
            busy_r, busy_w = await asyncio.open_connection("127.0.0.1", port)
            for k in range(8):
                busy_w.write(b"GET /n/%d HTTP/1.1\r\nHost: x\r\n\r\n" % k)
                status, body = await read_answer(busy_r)
                assert status == 200 and body.startswith(b"%d " % k)
                await asyncio.sleep(0.1)
            assert await asyncio.wait_for(idle_r.read(), 1.0) == b""  # closed by the server
            busy_w.write(b"GET /n/9 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await read_answer(busy_r))[0] == 200
            busy_w.close()
        finally:
            await server.close()

    asyncio.run(run())


def test_a_client_that_does_not_read_loses_no_answer() -> None:
    """600 pipelined requests whose answers (38 MiB) wait unread: the lane stops reading
    while the socket's buffer is full, then answers every one, in order."""

    async def run() -> None:
        server, port, handed = await serve()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**20)
            n = 600
            writer.write(b"".join(b"GET /n/%d HTTP/1.1\r\nHost: x\r\n\r\n" % k for k in range(n)))
            await writer.drain()
            await asyncio.sleep(0.5)
            lane = next(iter(server.lanes.open)) if server.lanes else None
            assert lane is not None and lane.transport is not None
            buffered = lane.transport.get_write_buffer_size()
            assert buffered < 4 * BIG, f"{buffered} bytes of answers buffered"
            for k in range(n):
                status, body = await read_answer(reader)
                assert status == 200 and body.split(b" ", 1)[0] == b"%d" % k
                assert len(body) == len(b"%d " % k) + BIG
            writer.write(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
            assert await read_answer(reader) == (200, b'{"path":"/other"}')
            assert handed == [1]  # the lane answered the 600, aiohttp the last
            writer.close()
        finally:
            await server.close()

    asyncio.run(run())


def test_an_answer_that_cannot_be_encoded_is_a_500_not_a_dropped_connection() -> None:
    async def run() -> None:
        server, port, _ = await serve()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                b"GET /nan HTTP/1.1\r\nHost: x\r\n\r\nGET /n/1 HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            status, body = await read_answer(reader)
            assert status == 500 and b"internal error" in body
            assert (await read_answer(reader))[0] == 200  # the connection goes on
            writer.close()
        finally:
            await server.close()

    asyncio.run(run())
