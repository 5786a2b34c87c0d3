"""A small HTTP/1.1 server on asyncio streams: requests in, JSON (or text) out.

Only what the controller's API needs: one request at a time per connection,
keep-alive (HTTP/1.1 default, ``Connection: close`` honoured), ``Content-Length``
bodies up to :data:`MAX_BODY` bytes, no chunked uploads. The server knows nothing
about the API: it parses, calls ``handler(request)``, and writes the
:class:`Response`. A handler raises :class:`HttpError` for a 4xx/5xx answer; the
error body is always JSON, ``{"error": message, "status": code}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

log = logging.getLogger("kvfabric.controller.http")

MAX_BODY = 64 * 1024
MAX_HEADER_LINES = 100
REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class HttpError(Exception):
    """An error answer: ``status`` and a message for the JSON body."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed request; header names are lower case."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> object:
        """The body as JSON; 400 if it is not."""
        if not self.body:
            raise HttpError(400, "the request needs a JSON body")
        try:
            return json.loads(self.body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HttpError(400, f"the body is not valid JSON: {exc}") from None


@dataclass(frozen=True, slots=True)
class Response:
    """An answer: a JSON-ready object, or raw ``text`` with its content type."""

    status: int = 200
    body: object = None
    text: bytes | None = None
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)

    def encode(self, keep_alive: bool) -> bytes:
        """The response bytes, head and body."""
        payload = self.text if self.text is not None else _json(self.body)
        head = [
            f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Unknown')}",
            f"Content-Type: {self.content_type}",
            f"Content-Length: {len(payload)}",
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
            *(f"{k}: {v}" for k, v in self.headers.items()),
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


def _json(body: object) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False, default=str).encode()


def error_response(exc: HttpError) -> Response:
    """The JSON answer of an :class:`HttpError`."""
    return Response(exc.status, {"error": exc.message, "status": exc.status}, headers=exc.headers)


Handler = Callable[[Request], Awaitable[Response]]


class HttpServer:
    """Serves ``handler`` on a TCP address (see the module docstring)."""

    def __init__(self, handler: Handler, *, idle_timeout_s: float = 30.0) -> None:
        self.handler = handler
        self.idle_timeout_s = idle_timeout_s
        self.server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen; returns the address actually bound (``port`` 0 picks one)."""
        self.server = await asyncio.start_server(self._serve, host, port)
        sockname = self.server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    async def close(self) -> None:
        """Stop listening and wait for the listener to close."""
        if self.server is not None:
            self.server.close()
        for writer in list(self._writers):
            writer.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=1.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    request = await asyncio.wait_for(_read_request(reader), self.idle_timeout_s)
                except HttpError as exc:
                    writer.write(error_response(exc).encode(keep_alive=False))
                    await writer.drain()
                    return
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return
                if request is None:
                    return
                keep_alive = request.headers.get("connection", "").lower() != "close"
                response = await self._respond(request)
                writer.write(response.encode(keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        except ConnectionError:
            return
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            writer.close()

    async def _respond(self, request: Request) -> Response:
        try:
            return await self.handler(request)
        except HttpError as exc:
            return error_response(exc)
        except Exception:  # the server answers 500 rather than drop the client
            log.exception("%s %s failed", request.method, request.path)
            return error_response(HttpError(500, "internal error; see the controller's log"))


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    """One request, or None when the client closed the connection between requests."""
    line = await reader.readline()
    if not line:
        return None
    parts = line.decode("latin-1").strip().split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"malformed request line {line[:80]!r}")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise HttpError(400, f"malformed header line {raw[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    else:
        raise HttpError(400, "too many header lines")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(411, "chunked bodies are not supported; send Content-Length")
    length_text = headers.get("content-length", "0")
    if not length_text.isdigit():
        raise HttpError(400, f"bad Content-Length {length_text!r}")
    length = int(length_text)
    if length > MAX_BODY:
        raise HttpError(413, f"the body is {length} bytes; the limit is {MAX_BODY}")
    body = await reader.readexactly(length) if length else b""
    path = target.split("?", 1)[0]
    return Request(method.upper(), path, headers, body)
