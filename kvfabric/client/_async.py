"""The asyncio client: :class:`AsyncClient` over asyncio streams, with a small pool of
kept-alive connections per controller (many transfers ask at once)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from kvfabric.client._core import (
    Attempts,
    Endpoint,
    Placement,
    Refused,
    Result,
    Tag,
    Unavailable,
    decode_answer,
    endpoints_of,
    request_bytes,
    retry_after,
    tag_socket,
)

SocketFactory = Callable[[], socket.socket]
_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_MAX_IDLE = 16


def _tcp() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


class AsyncClient:
    """The asyncio flavour of :class:`kvfabric.client.Client`: the same calls, awaited."""

    def __init__(
        self,
        controllers: Sequence[str | tuple[str, int]],
        *,
        token: str | None = None,
        deadline_s: float = 0.25,
        backoff_s: float = 0.005,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoints: tuple[Endpoint, ...] = endpoints_of(controllers)
        self.token = token
        self.deadline_s = deadline_s
        self.backoff_s = backoff_s
        self.clock = clock
        self._idle: dict[Endpoint, list[_Conn]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the idle connections."""
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for _reader, writer in conns:
                writer.close()

    # -- the API calls ----------------------------------------------------------------

    async def request_path(
        self, src: str, dst: str, nbytes: int, *, spine: str | None = None,
        trace_id: str | None = None,
    ) -> Placement:  # fmt: skip
        """``POST /v1/transfers``; the ECMP fallback when no controller answers in time.
        :class:`Refused` when the request itself is wrong."""
        body: dict[str, object] = {"src": src, "dst": dst, "bytes": nbytes}
        if spine is not None:
            body["spine"] = spine
        if trace_id is not None:
            body["trace_id"] = trace_id
        try:
            answer, endpoint = await self.call("POST", "/v1/transfers", body)
        except Unavailable as exc:
            return Placement(None, "fallback", fallbacks=(f"no controller answered: {exc}",))
        return Placement.from_answer(answer, str(endpoint))

    async def report(self, transfer_id: str, duration_s: float) -> None:
        """``POST /v1/transfers/{id}/complete``; :class:`Unavailable` or :class:`Refused`."""
        path = f"/v1/transfers/{transfer_id}/complete"
        await self.call("POST", path, {"duration_s": duration_s})

    async def call(self, method: str, path: str, body: object = None) -> tuple[Any, Endpoint]:
        """One API call with the retry policy; the decoded answer and who gave it."""
        attempts = Attempts(self.endpoints, self.clock() + self.deadline_s, self.backoff_s)
        while True:
            endpoint = attempts.endpoint
            timeout = max(attempts.left(self.clock()), 0.001)
            try:
                status, headers, payload = await asyncio.wait_for(
                    self._exchange(endpoint, method, path, body), timeout
                )
            except TimeoutError:
                pause = attempts.failed("no answer in time", self.clock())
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                pause = attempts.failed(_why(exc), self.clock())
            else:
                if status < 500:
                    return decode_answer(status, payload), endpoint
                why = f"HTTP {status}: {payload[:200].decode('utf-8', 'replace')}"
                pause = attempts.failed(why, self.clock(), retry_after(headers.get("retry-after")))
            if pause is None:
                raise Unavailable(f"in {self.deadline_s:g}s: {attempts.summary()}")
            await asyncio.sleep(pause)

    async def _exchange(
        self, endpoint: Endpoint, method: str, path: str, body: object
    ) -> tuple[int, dict[str, str], bytes]:
        """One request on an idle connection (or a new one when the server closed it)."""
        data, headers = request_bytes(method, path, body, endpoint, self.token)
        head = [f"{method} {path} HTTP/1.1", f"Content-Length: {len(data)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        message = ("\r\n".join(head) + "\r\n\r\n").encode() + data
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections of another (finished) event loop
            self._idle, self._loop = {}, loop
        while True:
            idle = self._idle.get(endpoint)
            reused = bool(idle)
            reader, writer = idle.pop() if idle else await _connect(endpoint)
            try:
                writer.write(message)
                status, answer_headers = await _read_head(reader)
                length = int(answer_headers.get("content-length", "0"))
                payload = await reader.readexactly(length)
            except (ConnectionError, asyncio.IncompleteReadError):
                writer.close()
                if reused:
                    continue  # the server closed a kept-alive connection: a new one
                raise
            except BaseException:
                writer.close()
                raise
            pool = self._idle.setdefault(endpoint, [])
            if answer_headers.get("connection", "").lower() == "close" or len(pool) >= _MAX_IDLE:
                writer.close()
            else:
                pool.append((reader, writer))
            return status, answer_headers, payload

    # -- a transfer -------------------------------------------------------------------

    @asynccontextmanager
    async def transfer(
        self,
        src: str,
        dst: str,
        nbytes: int,
        *,
        connect: tuple[str, int] | None = None,
        bind: tuple[str, int] | None = None,
        spine: str | None = None,
        sockets: SocketFactory = _tcp,
    ) -> AsyncIterator[AsyncTransfer]:
        """Ask for the path; with ``connect``, a non-blocking socket tagged, bound and
        connected there. On a clean exit the completion is reported with the measured
        duration."""
        t0 = self.clock()
        placement = await self.request_path(src, dst, nbytes, spine=spine)
        t = AsyncTransfer(placement, Result(placement, self.clock() - t0))
        if connect is not None:
            sock = sockets()
            try:
                tag_socket(sock, placement, bind)
                sock.setblocking(False)
                await asyncio.get_running_loop().sock_connect(sock, connect)
            except BaseException:
                sock.close()
                raise
            t.socket = sock
        started = self.clock()
        try:
            yield t
        finally:
            if t.socket is not None and t.socket.fileno() != -1 and not t.keep_socket:
                t.socket.close()
        t.result.duration_s = self.clock() - started
        if placement.transfer_id is not None:
            try:
                await self.report(placement.transfer_id, t.result.duration_s)
                t.result.reported = True
            except (Unavailable, Refused) as exc:
                t.result.report_error = str(exc)


class AsyncTransfer:
    """The transfer inside ``async with client.transfer(...) as t`` (see
    :class:`kvfabric.client.Transfer`). A caller that hands ``t.socket`` to asyncio
    streams sets ``keep_socket`` and closes the stream's writer itself."""

    def __init__(self, placement: Placement, result: Result) -> None:
        self.placement = placement
        self.result = result
        self.socket: socket.socket | None = None
        self.keep_socket = False

    @property
    def tag(self) -> Tag | None:
        """The placement's tag (None: no tag, plain ECMP)."""
        return self.placement.tag


async def _connect(endpoint: Endpoint) -> _Conn:
    reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
    return reader, writer


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    line = await reader.readline()
    if not line:
        raise ConnectionResetError("the controller closed the connection")
    parts = line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP answer: {line[:80]!r}")
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            return int(parts[1]), headers
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()


def _why(exc: BaseException) -> str:
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the controller closed the connection mid-answer"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
