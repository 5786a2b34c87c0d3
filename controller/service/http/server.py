"""The API's HTTP server: aiohttp's HTTP/1.1 protocol, the API's limits and JSON errors.

aiohttp parses requests (its C llhttp parser), keeps connections alive, pipelines,
applies flow control and closes lingering connections; this module adds only what
the API promises on top, and knows nothing about the API itself. It turns each
request into a frozen :class:`Request` (method, path, lower-case headers, body), calls
``answer(request)`` (the API's one entry point: a :class:`Response` at once, or an
awaitable of it), and writes the :class:`Response`. An answer raises
:class:`HttpError` for a 4xx/5xx answer; an error body is always JSON,
``{"error": message, "status": code}``, whoever refused the request. A response may
instead stream its body (server-sent events): it is written chunk by chunk as the
stream yields them, until the stream ends, the client leaves or the server closes.

Hostile input gets an answer, never a traceback or a silent close:

- aiohttp's parser refuses a request line over :data:`MAX_REQUEST_LINE` bytes (400),
  a header field over :data:`MAX_FIELD` bytes or more than :data:`MAX_HEADERS` of
  them (431), a ``Content-Length`` that is not ASCII digits (``²`` passes
  ``str.isdigit``) or two of them (400), one that overflows 64 bits (413), and an
  HTTP/1.1 request without ``Host`` (400). :class:`_Protocol` only rewrites its
  text answers as the API's JSON ones, with 431 and 413 where they apply, and logs
  one line instead of a traceback;
- this module refuses a head over :data:`MAX_HEAD` bytes (431), a chunked upload
  (411: send ``Content-Length``), a body over :data:`MAX_BODY` bytes (413, before
  reading it) and a body that does not arrive within ``body_timeout_s`` (408);
- :func:`parse_json` refuses, with 400, nesting deeper than :data:`MAX_DEPTH`,
  integers beyond 64 bits (``10**400`` would overflow ``float``, and ``int()``
  refuses over 4,300 digits), non-finite numbers (``1e400``) and ``NaN``.

An answer that raises anything else is a bug: the answer is 500 and the traceback
goes to the log. A slow client holds only its own connection: each connection is
served by its own task.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import ERROR

if TYPE_CHECKING:
    from controller.service.http.lane import Lanes

log = logging.getLogger("kvfabric.controller.http")
access_log = logging.getLogger("kvfabric.controller.access")

MAX_BODY = 64 * 1024
MAX_REQUEST_LINE = 16 * 1024
MAX_FIELD = 8190
MAX_HEAD = 64 * 1024
MAX_HEADERS = 100
MAX_DEPTH = 32
MAX_INT = (1 << 64) - 1
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


class HttpError(Exception):
    """An error answer: ``status`` and a message for the JSON body."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


@dataclass(frozen=True, slots=True)
class Request:
    """A request as the API sees it; header names are lower case, values as aiohttp
    decodes them (UTF-8, undecodable bytes kept as surrogates)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    query: str = ""

    def json(self) -> object:
        """The body as JSON (see :func:`parse_json`)."""
        return parse_json(self.body)


def parse_json(body: bytes) -> object:
    """``body`` as JSON; 400 if it is not, or is beyond the limits of the module docstring."""
    if not body:
        raise HttpError(400, "the request needs a JSON body")
    opened = body.count(b"[") + body.count(b"{")
    depth = _depth(body) if opened > MAX_DEPTH else opened  # fewer cannot nest deeper
    if depth > MAX_DEPTH:
        raise HttpError(400, f"the body nests {depth} deep; the limit is {MAX_DEPTH}")
    try:
        return _DECODER.decode(body.decode(json.detect_encoding(body), "surrogatepass"))
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


# made once: ``json.loads`` and ``json.dumps`` with options build a new one per call
_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=str)


@dataclass(frozen=True, slots=True)
class Response:
    """An answer: a JSON-ready object, or raw ``text`` with its content type, or a
    ``stream`` of chunks written as they come (server-sent events)."""

    status: int = 200
    body: object = None
    text: bytes | None = None
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    stream: AsyncIterator[bytes] | None = None

    def to_web(self) -> web.Response:
        """The aiohttp response."""
        payload = self.text if self.text is not None else encode_json(self.body)
        headers = {"Content-Type": self.content_type, **self.headers}
        return web.Response(status=self.status, body=payload, headers=headers)


def encode_json(body: object) -> bytes:
    """A JSON answer's body."""
    return _ENCODER.encode(body).encode()


def finite(value: object) -> object:
    """``value`` with NaN and infinities replaced by None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def error_response(exc: HttpError) -> Response:
    """The JSON answer of an :class:`HttpError`."""
    return Response(exc.status, {"error": exc.message, "status": exc.status}, headers=exc.headers)


Answer = Callable[[Request], Response | Awaitable[Response]]
"""What answers a request: at once, or an awaitable of the answer."""


async def respond(answer: Answer, request: Request) -> Response:
    """``answer``'s answer to ``request``; an :class:`HttpError` is its JSON answer, and
    anything else raised a 500 (the server answers rather than drop the client) with
    the traceback in the log."""
    try:
        given = answer(request)
        return given if isinstance(given, Response) else await given
    except HttpError as exc:
        return error_response(exc)
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return error_response(HttpError(500, "internal error; see the controller's log"))


class HttpServer:
    """Serves ``answer`` on a TCP address (see the module docstring)."""

    def __init__(
        self,
        answer: Answer,
        *,
        lanes: Lanes | None = None,
        idle_timeout_s: float = 30.0,
        body_timeout_s: float = 10.0,
    ) -> None:
        self.answer = answer
        self.lanes = lanes
        """:mod:`lane`'s connections, which take each new one (None: aiohttp takes it)."""
        self.idle_timeout_s = idle_timeout_s
        self.body_timeout_s = body_timeout_s
        self.server: asyncio.Server | None = None
        self._manager: web.Server | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen; returns the address actually bound (``port`` 0 picks one)."""
        loop = asyncio.get_running_loop()
        manager = web.Server(self._serve, request_factory=_make_request)
        self._manager = manager

        def protocol() -> _Protocol:
            return _Protocol(
                manager,
                loop=loop,
                keepalive_timeout=self.idle_timeout_s,
                access_log=access_log,
                max_line_size=MAX_REQUEST_LINE,
                max_field_size=MAX_FIELD,
                max_headers=MAX_HEADERS,
            )

        factory: Callable[[], asyncio.Protocol] = protocol
        if self.lanes is not None:
            factory = self.lanes.factory(protocol, self.idle_timeout_s)
        self.server = await loop.create_server(factory, host, port, reuse_address=True)
        sockname = self.server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    async def close(self) -> None:
        """Stop listening, then end the connections (requests under way get 1 s)."""
        if self.server is not None:
            self.server.close()
        if self.lanes is not None:
            self.lanes.close()
        if self._manager is not None:
            await self._manager.shutdown(1.0)
        if self.server is not None:
            await self.server.wait_closed()

    async def _serve(self, raw: web.BaseRequest) -> web.StreamResponse:
        try:
            request = await self._request(raw)
        except HttpError as exc:
            response = error_response(exc)
        else:
            response = await respond(self.answer, request)
        if response.stream is not None:
            return await _write_stream(raw, response, response.stream)
        answer = response.to_web()
        if isinstance(raw.protocol, _Protocol) and raw.protocol.answering_last:
            answer.force_close()
        return answer

    async def _request(self, raw: web.BaseRequest) -> Request:
        head = len(raw.method) + len(raw.raw_path) + 11
        head += sum(len(name) + len(value) + 4 for name, value in raw.raw_headers)
        if head > MAX_HEAD:
            raise HttpError(431, f"the request head is longer than {MAX_HEAD} bytes")
        if "chunked" in raw.headers.get("Transfer-Encoding", "").lower():
            raise HttpError(411, "chunked bodies are not supported; send Content-Length")
        length = raw.content_length or 0
        if length > MAX_BODY:
            raise HttpError(413, f"the body is {length} bytes; the limit is {MAX_BODY}")
        body = b""
        if length and raw.content.is_eof():  # all received: no timer needed
            body = await raw.read()
        elif length:
            try:
                body = await asyncio.wait_for(raw.read(), self.body_timeout_s)
            except TimeoutError:
                raise HttpError(
                    408, f"the body did not arrive within {self.body_timeout_s:g} s"
                ) from None
        headers = {name.lower(): value for name, value in raw.headers.items()}
        return Request(raw.method.upper(), raw.path, headers, body, raw.query_string)


async def _write_stream(
    raw: web.BaseRequest, response: Response, stream: AsyncIterator[bytes]
) -> web.StreamResponse:
    """Write a streamed body until it ends or the client goes away; the connection then
    closes (the server's shutdown cancels a stream that is still running)."""
    headers = {"Content-Type": response.content_type, "Cache-Control": "no-cache",
               **response.headers}  # fmt: skip
    answer = web.StreamResponse(status=response.status, headers=headers)
    answer.force_close()
    try:
        await answer.prepare(raw)
        async for chunk in stream:
            await answer.write(chunk)
    except ConnectionError:  # the client left
        pass
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return answer


def _make_request(
    message: RawRequestMessage,
    payload: StreamReader,
    protocol: web.RequestHandler,
    writer: AbstractStreamWriter,
    task: asyncio.Task[None],
) -> web.BaseRequest:
    """aiohttp's request; the one standing for an unparsable request says HTTP/1.1 (not
    aiohttp's 1.0), so that the error answer's status line is HTTP/1.1 like every other."""
    if message is ERROR:
        message = message._replace(version=HttpVersion11)
    return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop())


class _Protocol(web.RequestHandler):
    """aiohttp's connection handler, with the API's JSON answers to malformed requests,
    and answers for a client that closes its sending side after its requests (aiohttp
    would close the connection at once and lose them)."""

    peer_closed = False

    def eof_received(self) -> bool:  # type: ignore[override]  # asyncio: bool | None
        """Keep the connection open to answer what was received, then close it: at once
        when idle, after the request under way when it is the last, or (``_serve``) after
        the last of those queued."""
        self.peer_closed = True
        if not self._messages:
            if self._waiter is not None:
                self.force_close()
            else:
                self.close()
        return True

    @property
    def answering_last(self) -> bool:
        """True when the client closed its side and no request of it is left."""
        return self.peer_closed and not self._messages

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """The JSON answer to a request aiohttp could not parse (or, 500, a bug here)."""
        if request.writer.output_size > 0:
            raise ConnectionError("an answer was already being sent; cannot send an error")
        if status >= 500:
            log.error("answering %s: %s", status, message or exc, exc_info=exc)
            answer = HttpError(500, "internal error; see the controller's log")
        else:
            answer = _refusal(exc, message or "malformed request")
            log.info("refused a malformed request (%s): %s", answer.status, answer.message)
        response = error_response(answer).to_web()
        response.force_close()
        return response


def _refusal(exc: BaseException | None, message: str) -> HttpError:
    """The status and message of a parse error: 431 for header fields too large or too
    many, 413 for a ``Content-Length`` beyond 64 bits, 400 otherwise."""
    text = message.split("\n", 1)[0].strip().rstrip(":")
    if isinstance(exc, LineTooLong):
        limit = exc.args[1]
        if limit == MAX_FIELD:
            return HttpError(431, f"a header field is longer than {MAX_FIELD} bytes")
        return HttpError(400, f"the request line is longer than {limit} bytes")
    if isinstance(exc, BadHttpMessage) and "Too many headers" in text:
        return HttpError(431, f"more than {MAX_HEADERS} header lines")
    if isinstance(exc, BadHttpMessage) and "Content-Length overflow" in text:
        return HttpError(413, f"the Content-Length is beyond 64 bits; the limit is {MAX_BODY}")
    return HttpError(400, f"malformed request: {text[:200]}")
