"""A small HTTP/1.1 server on asyncio streams: requests in, JSON (or text) out.

Only what the controller's API needs: one request at a time per connection,
keep-alive (HTTP/1.1 default, ``Connection: close`` honoured), ``Content-Length``
bodies up to :data:`MAX_BODY` bytes, no chunked uploads. The server knows nothing
about the API: it parses, calls ``handler(request)``, and writes the
:class:`Response`. A handler raises :class:`HttpError` for a 4xx/5xx answer; the
error body is always JSON, ``{"error": message, "status": code}``.

Hostile input gets an answer, never a traceback or a silent close:

- a request line over :data:`MAX_LINE` bytes is 400; a header line over it, more
  than :data:`MAX_HEADER_LINES` header lines or a head over :data:`MAX_HEAD` bytes
  is 431; a ``Content-Length`` that is not ASCII digits (``²`` passes
  ``str.isdigit``) or that differs between two headers is 400, one over
  :data:`MAX_BODY` is 413;
- :meth:`Request.json` refuses, with 400, nesting deeper than :data:`MAX_DEPTH`,
  integers beyond 64 bits (``10**400`` would overflow ``float``, and ``int()``
  refuses over 4,300 digits), non-finite numbers (``1e400``) and ``NaN``;
- after an error in the request itself the server stops reading requests: it
  answers, closes its sending side, and discards what the client still sends for
  a moment (:data:`LINGER_S`), so that the client reads the answer instead of a
  connection reset.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

log = logging.getLogger("kvfabric.controller.http")

MAX_BODY = 64 * 1024
MAX_LINE = 16 * 1024
MAX_HEAD = 64 * 1024
MAX_HEADER_LINES = 100
MAX_DEPTH = 32
MAX_INT = (1 << 64) - 1
LINGER_S = 2.0
_LINGER_BYTES = 1 << 20
_OWS = " \t\r\n"
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    431: "Request Header Fields Too Large",
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
        """The body as JSON; 400 if it is not, or is beyond the limits of the module docstring."""
        if not self.body:
            raise HttpError(400, "the request needs a JSON body")
        depth = _depth(self.body)
        if depth > MAX_DEPTH:
            raise HttpError(400, f"the body nests {depth} deep; the limit is {MAX_DEPTH}")
        try:
            return json.loads(
                self.body, parse_int=_int, parse_float=_float, parse_constant=_constant
            )
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HttpError(400, f"the body is not valid JSON: {exc}") from None


def _depth(body: bytes) -> int:
    """How deep arrays and objects nest in a JSON text (strings skipped)."""
    depth = deepest = 0
    for bracket in _NOT_BRACKET.sub(b"", _STRING.sub(b"", body)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > 20 or int(digits) > MAX_INT:
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(digits)} digits)"
        raise HttpError(400, f"the body has an integer beyond 64 bits: {shown}")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        shown = text if len(text) <= 24 else f"{text[:20]}..."
        raise HttpError(400, f"the body has a number beyond a double's range: {shown}")
    return value


def _constant(text: str) -> float:
    raise HttpError(400, f"the body is not valid JSON: {text} is not a JSON number")


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
        self.server = await asyncio.start_server(self._serve, host, port, limit=MAX_LINE)
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
                    await _linger(reader, writer)
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


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Close the sending side, then discard what the client still sends, for a while."""
    if writer.can_write_eof():
        writer.write_eof()
    deadline = time.monotonic() + LINGER_S
    discarded = 0
    while discarded < _LINGER_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            chunk = await asyncio.wait_for(reader.read(65536), left)
        except (TimeoutError, ConnectionError):
            return
        if not chunk:
            return
        discarded += len(chunk)


async def _line(reader: asyncio.StreamReader, status: int, what: str) -> bytes:
    """One line; ``status`` when it is longer than :data:`MAX_LINE` bytes."""
    try:
        return await reader.readline()
    except ValueError:  # the stream's limit (MAX_LINE) was reached before a newline
        raise HttpError(status, f"the {what} is longer than {MAX_LINE} bytes") from None


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    """One request, or None when the client closed the connection between requests."""
    line = await _line(reader, 400, "request line")
    if not line:
        return None
    parts = line.decode("latin-1").strip().split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"malformed request line {line[:80]!r}")
    method, target, _version = parts
    headers = await _read_headers(reader, len(line))
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(411, "chunked bodies are not supported; send Content-Length")
    length = _content_length(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    path = target.split("?", 1)[0]
    return Request(method.upper(), path, headers, body)


async def _read_headers(reader: asyncio.StreamReader, head_size: int) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        raw = await _line(reader, 431, "header line")
        if raw in (b"\r\n", b"\n", b""):
            return headers
        head_size += len(raw)
        if head_size > MAX_HEAD:
            raise HttpError(431, f"the request head is longer than {MAX_HEAD} bytes")
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise HttpError(400, f"malformed header line {raw[:80]!r}")
        # only HTTP's whitespace: str.strip() would also eat bytes 0x85 and 0xa0 of UTF-8 text
        key, value = name.strip(_OWS).lower(), value.strip(_OWS)
        if key == "content-length" and headers.get(key, value) != value:
            raise HttpError(400, "two different Content-Length headers")
        headers[key] = value
    raise HttpError(431, f"more than {MAX_HEADER_LINES} header lines")


def _content_length(text: str) -> int:
    if not _DIGITS.fullmatch(text):
        raise HttpError(400, f"bad Content-Length {text[:40]!r}: expected ASCII digits")
    if len(text) > 20 or int(text) > MAX_BODY:
        raise HttpError(413, f"the body is {text[:20]} bytes; the limit is {MAX_BODY}")
    return int(text)
