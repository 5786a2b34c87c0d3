"""The coordinators' fast lane: their hot requests answered without aiohttp's per-request
machinery, every other request by aiohttp.

A prefill coordinator asks for a path per transfer (``POST /v1/transfers``), maybe for
many at once (``/v1/transfers/batch``), and reports each completion; the design's burst
is 256 such requests within 10 ms, under 39 us of CPU each on one core. On the 2-core
development machine, with an empty handler (``benchmarks/http_floor.py``), a request
through aiohttp's protocol and the API's limits of :mod:`server` costs about 205 us of CPU
(aiohttp's bare low-level server about 110 us, uvicorn with httptools, measured once,
about 100 us): one process answers at most 5,000 requests a second before the API does
anything. Through this lane it costs 44 us; the event loop and the socket calls alone,
25 us (15 us when the answers to one read leave in one write).

Each connection starts here. :class:`Lane` takes each request received whole and plain
(below) and has the API's one entry point (:meth:`Api.answer
<controller.service.http.api.Api.answer>`, the one aiohttp's side calls) answer it: a
decision, a batch or a completion at once, any other request awaited. The answers to
the requests of one read leave in one write. At the first request that is not plain,
or is a stream (``/ui/events``), the lane hands the connection, from that request's
first byte, to aiohttp's protocol, which keeps it: everything the API promises about
hostile or unusual input (:mod:`server`'s limits and JSON errors for what its parser
refuses, timeouts for slow clients, streams) is aiohttp's, unchanged.

A plain request is a strict subset of HTTP/1.1 that every parser frames alike: the
request line ``METHOD /path HTTP/1.1`` (at most :data:`MAX_REQUEST_LINE` bytes; GET,
POST, PUT or DELETE; a path with no percent-escape, empty or dot segment; a query
without ``%`` or ``+``, so that nothing is decoded), then header lines ``Name: value``
(a token name, each at most once, no control character, no folding, at most
:data:`MAX_HEADERS` lines of at most :data:`MAX_FIELD` bytes) with ``Host``, without
``Transfer-Encoding``, ``Expect``, ``Upgrade`` or ``TE``, ``Connection`` at most ``keep-
alive``, a ``Content-Length`` of at most six plain digits within :data:`MAX_BODY`. The
lane waits for the rest of a request partly received (a client may send the head and the
body apart) for :data:`PARTIAL_GRACE_S`; a request still partial then goes to aiohttp (a
slow client is aiohttp's), as does one cut short by the client's end of stream.

The lane keeps what a server must: answers in the order of the requests (an answer
that has to wait for a switch write holds back those after it), no reading while the
client does not read its answers (``pause_writing``), the idle timeout of kept-alive
connections, and an answer to every request received before the client's end of
stream.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import http
import logging
import re
import time
import types
from collections.abc import Awaitable, Callable, Mapping

from aiohttp.http import SERVER_SOFTWARE

from controller.service.http.server import (
    MAX_BODY,
    MAX_FIELD,
    MAX_HEAD,
    MAX_HEADERS,
    MAX_REQUEST_LINE,
    HttpError,
    Request,
    Response,
    encode_json,
    error_response,
)

log = logging.getLogger("kvfabric.controller.http")

LaneAnswer = Callable[[Request], Response | Awaitable[Response] | None]
"""The API's answer as the lane asks for it: at once, awaitable, or None for a request it
leaves to aiohttp (a stream)."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters a plain head line has none of (tab is allowed)."""
_HANDED = frozenset({"transfer-encoding", "expect", "upgrade", "te"})
"""Header fields whose requests aiohttp answers."""
_METHODS = frozenset({b"GET", b"POST", b"PUT", b"DELETE"})
_TARGET = re.compile(rb"(/[!$&'()*,\-.0-9:;=@A-Z_a-z~]+)*/?(\?[!$&'()*,\-./0-9:;=?@A-Z_a-z~]*)?")
"""A plain origin-form target: no percent-escape, no fragment, no ``+`` in the query."""
_SERVER = SERVER_SOFTWARE.encode()
_FLUSH = 64 * 1024
"""Answers gathered past this many bytes are written before the next request is read."""
PARTIAL_GRACE_S = 0.5
"""How long the lane waits for the rest of a request partly received before aiohttp
takes the connection (and counts its own body timeout from then)."""


class Lanes:
    """The lane's connections, and what each is made with."""

    def __init__(self, answer: LaneAnswer, handed_off: Callable[[], object] = lambda: None) -> None:
        self.answer = answer
        self.handed_off = handed_off
        """Called at each connection the lane hands to aiohttp (a metric counts them)."""
        self.open: set[Lane] = set()

    def factory(
        self, hand_off: Callable[[], asyncio.Protocol], idle_timeout_s: float
    ) -> Callable[[], asyncio.Protocol]:
        """The protocol factory of a server whose connections start in the lane and go
        to ``hand_off()``'s protocol at their first request the lane does not answer."""

        def to_aiohttp() -> asyncio.Protocol:
            self.handed_off()
            return hand_off()

        def lane() -> asyncio.Protocol:
            return Lane(self.answer, to_aiohttp, self.open, idle_timeout_s)

        return lane

    def close(self) -> None:
        """Close every connection still in the lane."""
        for lane in list(self.open):
            lane.close()


class Lane(asyncio.Protocol):
    """One connection, answered here until its first request that is not plain (see the
    module docstring)."""

    def __init__(
        self,
        answer: LaneAnswer,
        hand_off: Callable[[], asyncio.Protocol],
        lanes: set[Lane],
        idle_timeout_s: float,
    ) -> None:
        self.answer = answer
        self.hand_off = hand_off
        self.lanes = lanes
        self.idle_timeout_s = idle_timeout_s
        self.transport: asyncio.Transport | None = None
        self._buf = b""
        self._waiting: asyncio.Task[None] | None = None
        self._paused = False
        self._eof = False
        self._last = 0.0
        self._idle: asyncio.TimerHandle | None = None
        self._partial: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()

    # -- asyncio's callbacks ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.lanes.add(self)
        self._last = self._loop.time()
        self._idle = self._loop.call_later(self.idle_timeout_s, self._check_idle)

    def data_received(self, data: bytes) -> None:
        self._buf = self._buf + data if self._buf else data
        self._last = self._loop.time()  # the idle timer looks at it when it fires
        if self._waiting is None and not self._paused:
            self._serve()

    def eof_received(self) -> bool:
        self._eof = True
        if self._partial is not None:  # the rest of that request will not come now
            self._to_aiohttp()
            return True
        # open until what was received is answered (or handed off), then closed
        return self._waiting is not None or bool(self._buf)

    def connection_lost(self, exc: Exception | None) -> None:
        # an answer under way is left to finish, its writes to switches included, as
        # aiohttp leaves a handler whose client went away; its answer is dropped
        self._leave()
        self._buf = b""

    def pause_writing(self) -> None:
        self._paused = True
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._paused = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()
            if self._waiting is None:
                self._serve()

    def close(self) -> None:
        """Close the connection (the server's shutdown)."""
        if self.transport is not None:
            self.transport.close()

    # -- serving ----------------------------------------------------------------------

    def _serve(self) -> None:
        """Answer every plain request received, in one write; hand the connection to
        aiohttp at the first other one; wait at an answer that needs a switch write, and
        for the rest of a request partly received."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self._partial is not None:
            self._partial.cancel()
            self._partial = None
        buf, pos, out, size = self._buf, 0, [], 0
        taken: tuple[Request, int] | bool = False
        while pos < len(buf) and not self._paused:
            try:
                taken = _take(buf, pos)
            except Exception:  # a bug: aiohttp frames and answers the request instead
                log.exception("the lane could not read a request; aiohttp takes it")
                taken = False
            if not isinstance(taken, tuple):
                break
            request, end = taken
            try:
                answer = self.answer(request)
            except Exception:  # a bug: answered 500 like aiohttp's side, never dropped
                log.exception("%s %s failed", request.method, request.path)
                answer = error_response(HttpError(500, "internal error; see the controller's log"))
            if answer is None:
                taken = False
                break
            pos = end
            if isinstance(answer, Response):
                out.append(_encode_safely(answer))
                size += len(out[-1])
                if size > _FLUSH:  # write now: a full socket buffer pauses the loop
                    transport.write(b"".join(out))
                    out, size = [], 0
                continue
            self._waiting = asyncio.ensure_future(self._later(answer))
            break
        self._buf = buf[pos:]
        if out:
            transport.write(b"".join(out))
        if self._waiting is not None or self._paused:
            return
        if self._buf and (taken is False or self._eof):
            self._to_aiohttp()
        elif self._buf:  # the rest of the request is on its way (a head and a body sent apart)
            self._partial = self._loop.call_later(PARTIAL_GRACE_S, self._to_aiohttp)
        elif self._eof:
            transport.close()

    async def _later(self, answer: Awaitable[Response]) -> None:
        try:
            response = await answer
        except Exception:
            log.exception("an answer failed")
            response = error_response(HttpError(500, "internal error; see the controller's log"))
        self._waiting = None
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.write(_encode_safely(response))
        if not self._paused:
            self._serve()

    def _to_aiohttp(self) -> None:
        """Give the connection, from the first byte not answered, to aiohttp's protocol."""
        transport, rest = self.transport, self._buf
        self._leave()
        if transport is None or transport.is_closing():
            return
        self._buf = b""
        self.transport = None
        protocol = self.hand_off()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        protocol.data_received(rest)
        if self._eof:
            # after aiohttp's connection task has begun waiting for a request: told of
            # the end before, it would keep waiting, the connection open and unanswered
            self._loop.call_soon(protocol.eof_received)

    def _leave(self) -> None:
        self.lanes.discard(self)
        if self._partial is not None:
            self._partial.cancel()
            self._partial = None
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _check_idle(self) -> None:
        left = self._last + self.idle_timeout_s - self._loop.time()
        if self._waiting is None and left <= 0:
            self._idle = None
            self.close()
            return
        self._idle = self._loop.call_later(max(left, 0.1), self._check_idle)


def _take(buf: bytes, pos: int) -> tuple[Request, int] | bool:
    """The plain request starting at ``pos`` and where it ends; True for the start of
    a request whose rest has yet to come, False for a request that is not plain (see the
    module docstring: the lane hands it to aiohttp)."""
    head_end = buf.find(b"\r\n\r\n", pos, pos + MAX_HEAD)
    if head_end < 0:
        return len(buf) - pos < MAX_HEAD
    line_end = buf.find(b"\r\n", pos, head_end)
    if line_end < 0:
        return False  # a request line and no header field: no Host
    line = _request_line(buf[pos:line_end])
    fields = buf[line_end + 2 : head_end]
    read = _FIELDS.get(fields)
    if read is None:
        read = _fields(fields)
        if read is None:
            return False
        if len(_FIELDS) >= _FIELDS_KEPT:
            _FIELDS.clear()
        _FIELDS[fields] = read
    if line is None:
        return False
    headers, length = read
    end = head_end + 4 + length
    if end > len(buf):
        return True
    method, path, query = line
    return Request(method, path, headers, buf[head_end + 4 : end], query), end


_FIELDS: dict[bytes, tuple[Mapping[str, str], int]] = {}
"""Header fields read before, by their bytes, with the body's length they give. A
client sends the same fields again and again (only the body's length changes them,
where the request line changes with every transfer's id), and the bytes decide the
reading: the lane reads each block once (reading them was 10-15% of a request's time),
up to :data:`_FIELDS_KEPT` of them. Requests with the same fields share the mapping,
which is read only."""
_FIELDS_KEPT = 256


def _request_line(line: bytes) -> tuple[str, str, str] | None:
    """Method, path and query of a plain request line; None if it is not one."""
    parts = line.split(b" ")
    if len(line) > MAX_REQUEST_LINE or len(parts) != 3 or parts[2] != b"HTTP/1.1":
        return None
    method, target = parts[0], parts[1]
    if method not in _METHODS or not _TARGET.fullmatch(target) or b"/." in target:
        return None
    path, _, query = target.partition(b"?")
    return method.decode(), path.decode(), query.decode()


def _fields(block: bytes) -> tuple[Mapping[str, str], int] | None:
    """The header fields of a plain request (lower-case names) and its body's length;
    None if they are not plain."""
    if _CONTROL.search(block.replace(b"\r\n", b"\t")):
        return None  # a bare CR or LF, or another control character
    lines = block.split(b"\r\n")
    if len(lines) > MAX_HEADERS:
        return None
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or len(line) > MAX_FIELD or not _TOKEN.fullmatch(name):
            return None
        key = name.decode("ascii").lower()
        if key in headers or key in _HANDED:
            return None
        headers[key] = value.strip(b" \t").decode("utf-8", "surrogateescape")
    if "host" not in headers or headers.get("connection", "keep-alive").lower() != "keep-alive":
        return None
    length_text = headers.get("content-length", "0")
    plain = length_text.isascii() and length_text.isdigit() and len(length_text) <= 6
    if not plain or int(length_text) > MAX_BODY:
        return None
    return types.MappingProxyType(headers), int(length_text)


def _encode_safely(response: Response) -> bytes:
    """:func:`_encode`, or a 500 if the answer cannot be encoded (a bug: the connection
    still gets an answer, as aiohttp's side gives one)."""
    try:
        return _encode(response)
    except (TypeError, ValueError):
        log.exception("an answer could not be encoded")
        return _encode(error_response(HttpError(500, "internal error; see the controller's log")))


def _encode(response: Response) -> bytes:
    """A whole HTTP/1.1 answer, with the headers aiohttp gives."""
    payload = response.text if response.text is not None else encode_json(response.body)
    head = [
        b"HTTP/1.1 %d %s" % (response.status, _reason(response.status)),
        b"Content-Type: " + response.content_type.encode(),
        b"Content-Length: %d" % len(payload),
        b"Date: " + _date(),
        b"Server: " + _SERVER,
    ]
    head += [f"{k}: {v}".encode() for k, v in response.headers.items()]
    return b"\r\n".join(head) + b"\r\n\r\n" + payload


_REASONS: dict[int, bytes] = {}


def _reason(status: int) -> bytes:
    phrase = _REASONS.get(status)
    if phrase is None:
        phrase = _REASONS[status] = http.HTTPStatus(status).phrase.encode()
    return phrase


def _date() -> bytes:
    """The ``Date`` header's value."""
    return _date_of(int(time.time()))


@functools.lru_cache(maxsize=2)
def _date_of(second: int) -> bytes:
    return email.utils.formatdate(second, usegmt=True).encode()
