"""The asyncio client: :class:`AsyncClient` over asyncio streams, with a small pool of
kept-alive connections per controller (many transfers ask at once)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from kvfabric.client._core import (
    Ask,
    BaseClient,
    ClientError,
    Endpoint,
    Placement,
    Refused,
    Release,
    Reply,
    Result,
    SocketFactory,
    TransferBase,
    Unavailable,
    batch_placements,
    batch_request,
    connections_of,
    request_bytes,
    tagged_socket,
    tcp_socket,
    transfer_request,
)

_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_MAX_IDLE = 16


BATCH_MAX = 512
"""The most transfers ``POST /v1/transfers/batch`` takes at once."""


class AsyncClient(BaseClient):
    """The asyncio flavour of :class:`kvfabric.client.Client`: the same calls, awaited.

    ``batch_window_s`` (default 0: off) makes it a coordinator's client: the path
    requests (``request_path``, and so ``transfer``) made within that long of the first
    one go to the controller as one ``POST /v1/transfers/batch``, which it decides as
    one (the design's burst), each caller getting its own answer.
    """

    _idle: dict[Endpoint, list[_Conn]]
    _loop: asyncio.AbstractEventLoop | None

    def __init__(
        self, controllers: Sequence[str | tuple[str, int]], *, batch_window_s: float = 0.0,
        **options: Any,
    ) -> None:  # fmt: skip
        if batch_window_s < 0:
            raise ValueError(f"batch_window_s must be 0 or more, got {batch_window_s}")
        self.batch_window_s = batch_window_s
        self._waiting: list[tuple[Ask, asyncio.Future[Placement]]] = []
        self._sending: set[asyncio.Task[None]] = set()
        super().__init__(controllers, **options)

    def _reset(self) -> None:
        self._idle = {}
        self._loop = None

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
        trace_id: str | None = None, deadline_ms: int | None = None,
    ) -> Placement:  # fmt: skip
        """See :meth:`kvfabric.client.Client.request_path` (gathered into a batch with
        ``batch_window_s``)."""
        if self.batch_window_s > 0:
            return await self._in_batch(Ask(src, dst, nbytes, spine, trace_id, deadline_ms))
        body = transfer_request(src, dst, nbytes, spine, trace_id, deadline_ms=deadline_ms)
        try:
            answer, endpoint = await self.call("POST", "/v1/transfers", body)
        except Unavailable as exc:
            return Placement.fallback(exc)
        return Placement.from_answer(answer, str(endpoint))

    async def _in_batch(self, ask: Ask) -> Placement:
        """Wait for the batch ``ask`` goes in; its placement (:class:`Refused` raised)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Placement] = loop.create_future()
        if not self._waiting:
            loop.call_later(self.batch_window_s, self._send_batch)
        self._waiting.append((ask, answer))
        if len(self._waiting) >= BATCH_MAX:
            self._send_batch()
        return await answer

    def _send_batch(self) -> None:
        waiting, self._waiting = self._waiting, []
        if waiting:
            task = asyncio.ensure_future(self._answer_batch(waiting))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _answer_batch(self, waiting: list[tuple[Ask, asyncio.Future[Placement]]]) -> None:
        outcomes: list[Placement | ClientError] | None = None
        try:
            outcomes = list(await self.transfers([ask for ask, _ in waiting]))
        except ClientError as exc:  # every caller learns why, as if it had asked alone
            outcomes = [exc] * len(waiting)
        finally:
            for k, (_, answer) in enumerate(waiting):
                if answer.done():  # its caller gave up (cancelled)
                    continue
                outcome = outcomes[k] if outcomes is not None else None
                if outcome is None:  # cancelled, or a bug: the callers do not hang
                    answer.cancel()
                elif isinstance(outcome, ClientError):
                    answer.set_exception(outcome)
                else:
                    answer.set_result(outcome)

    async def transfers(self, asks: Sequence[Ask]) -> list[Placement | Refused]:
        """See :meth:`kvfabric.client.Client.transfers`."""
        try:
            answer, endpoint = await self.call("POST", "/v1/transfers/batch", batch_request(asks))
        except Unavailable as exc:
            return [Placement.fallback(exc) for _ in asks]
        return batch_placements(answer, str(endpoint), len(asks))

    async def report(self, transfer_id: str, duration_s: float) -> None:
        """See :meth:`kvfabric.client.Client.report`."""
        path = f"/v1/transfers/{transfer_id}/complete"
        await self.call("POST", path, {"duration_s": duration_s})

    async def call(
        self, method: str, path: str, body: object = None, *, deadline_s: float | None = None
    ) -> tuple[Any, Endpoint]:
        """See :meth:`kvfabric.client.Client.call`."""
        attempts = self.attempts(deadline_s)
        while True:
            endpoint = attempts.endpoint
            timeout = attempts.timeout(self.clock())
            reply: Reply | str
            try:
                async with asyncio.timeout(timeout):  # wait_for (3.11) can lose a cancellation
                    reply = await self._exchange(endpoint, method, path, body)
            except TimeoutError:
                reply = "no answer in time"
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                reply = _why(exc)
            outcome = attempts.settle(reply, self.clock())
            if isinstance(outcome, tuple):
                return outcome
            await asyncio.sleep(outcome)

    async def wait_release(self, placement: Placement) -> Release:
        """See :meth:`kvfabric.client.Client.wait_release`."""
        release = Release.of(placement, self.clock(), self.release_slack_s)
        while (poll := release.next(self.clock())) is not None:
            try:
                release.settle((await self.call("GET", poll[0], deadline_s=poll[1]))[0])
            except ClientError as exc:
                release.settle(exc)
        return release

    async def _exchange(self, endpoint: Endpoint, method: str, path: str, body: object) -> Reply:
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
            return Reply(status, answer_headers, payload)

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
        deadline_ms: int | None = None,
        sockets: SocketFactory = tcp_socket,
    ) -> AsyncIterator[AsyncTransfer]:
        """Ask for the path; with ``connect``, a non-blocking socket tagged, bound and
        connected there (one per slice when the controller split the transfer over
        spines: ``t.sockets``). On a clean exit the completion is reported with the
        measured duration."""
        t0 = self.clock()
        placement = await self.request_path(src, dst, nbytes, spine=spine, deadline_ms=deadline_ms)
        answered = self.clock()
        t = AsyncTransfer(placement, Result(placement, answered - t0))
        t.released(await self.wait_release(placement), self.clock() - answered)
        if connect is not None:
            loop = asyncio.get_running_loop()
            try:
                for part in connections_of(placement):
                    with tagged_socket(sockets, part, bind) as sock:
                        sock.setblocking(False)
                        await loop.sock_connect(sock, connect)
                    t.sockets.append(sock)
            except BaseException:
                t.close_sockets()
                raise
        started = self.clock()
        try:
            yield t
        finally:
            if not t.keep_socket:
                t.close_sockets()
        t.result.duration_s = self.clock() - started
        if placement.transfer_id is not None:
            try:
                await self.report(placement.transfer_id, t.result.duration_s)
            except (Unavailable, Refused) as exc:
                t.reported(exc)
            else:
                t.reported(None)


class AsyncTransfer(TransferBase):
    """The transfer inside ``async with client.transfer(...) as t`` (see
    :class:`kvfabric.client.Transfer`; ``await t.sendall(data)`` sends each slice's
    part on its socket, all at once). A caller that hands ``t.sockets`` to asyncio
    streams sets ``keep_socket`` and closes the streams' writers itself."""

    def __init__(self, placement: Placement, result: Result) -> None:
        super().__init__(placement, result)
        self.keep_socket = False

    async def sendall(self, data: bytes | memoryview) -> None:
        """Send ``data`` over the connected sockets, each its slice's part, at once."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.sock_sendall(sock, part) for sock, part in self.parts(data)))


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
