"""The blocking client: :class:`Client` over ``http.client``, one keep-alive connection
per controller."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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


def _tcp() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


class Client:
    """The controller's API for a sender (see :mod:`kvfabric.client`).

    ``controllers`` are ``HOST:PORT`` addresses, the primary first. ``deadline_s``
    bounds how long a path request may take before the ECMP fallback; a completion's
    report gets the same bound.
    """

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
        self._conns: dict[Endpoint, http.client.HTTPConnection] = {}

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    # -- the API calls ----------------------------------------------------------------

    def request_path(
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
            answer, endpoint = self.call("POST", "/v1/transfers", body)
        except Unavailable as exc:
            return Placement(None, "fallback", fallbacks=(f"no controller answered: {exc}",))
        return Placement.from_answer(answer, str(endpoint))

    def report(self, transfer_id: str, duration_s: float) -> None:
        """``POST /v1/transfers/{id}/complete``; :class:`Unavailable` or :class:`Refused`."""
        self.call("POST", f"/v1/transfers/{transfer_id}/complete", {"duration_s": duration_s})

    def call(self, method: str, path: str, body: object = None) -> tuple[Any, Endpoint]:
        """One API call with the retry policy; the decoded answer and who gave it."""
        attempts = Attempts(self.endpoints, self.clock() + self.deadline_s, self.backoff_s)
        while True:
            endpoint = attempts.endpoint
            timeout = max(attempts.left(self.clock()), 0.001)
            try:
                status, headers, payload = self._exchange(endpoint, method, path, body, timeout)
            except (OSError, http.client.HTTPException) as exc:
                self._drop(endpoint)
                pause = attempts.failed(_why(exc), self.clock())
            else:
                if status < 500:
                    return decode_answer(status, payload), endpoint
                why = f"HTTP {status}: {payload[:200].decode('utf-8', 'replace')}"
                pause = attempts.failed(why, self.clock(), retry_after(headers.get("retry-after")))
            if pause is None:
                raise Unavailable(f"in {self.deadline_s:g}s: {attempts.summary()}")
            time.sleep(pause)

    def _exchange(
        self, endpoint: Endpoint, method: str, path: str, body: object, timeout: float
    ) -> tuple[int, dict[str, str], bytes]:
        """One request; a kept-alive connection the server has closed meanwhile is
        replaced once by a new one (that is not the controller failing)."""
        data, headers = request_bytes(method, path, body, endpoint, self.token)
        reused = endpoint in self._conns
        conn = self._conns.get(endpoint) or self._open(endpoint, timeout)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        try:
            conn.request(method, path, body=data or None, headers=headers)
            response = conn.getresponse()
        except (ConnectionError, http.client.RemoteDisconnected):
            if not reused:
                raise
            self._drop(endpoint)
            conn = self._open(endpoint, timeout)
            conn.request(method, path, body=data or None, headers=headers)
            response = conn.getresponse()
        payload = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload

    def _open(self, endpoint: Endpoint, timeout: float) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
        self._conns[endpoint] = conn
        return conn

    def _drop(self, endpoint: Endpoint) -> None:
        conn = self._conns.pop(endpoint, None)
        if conn is not None:
            conn.close()

    # -- a transfer -------------------------------------------------------------------

    @contextmanager
    def transfer(
        self,
        src: str,
        dst: str,
        nbytes: int,
        *,
        connect: tuple[str, int] | None = None,
        bind: tuple[str, int] | None = None,
        spine: str | None = None,
        sockets: SocketFactory = _tcp,
    ) -> Iterator[Transfer]:
        """Ask for the path; with ``connect``, a socket tagged, bound and connected there.
        On a clean exit the completion is reported with the measured duration."""
        t0 = self.clock()
        placement = self.request_path(src, dst, nbytes, spine=spine)
        t = Transfer(placement, Result(placement, self.clock() - t0))
        if connect is not None:
            sock = sockets()
            try:
                tag_socket(sock, placement, bind)
                sock.connect(connect)
            except BaseException:
                sock.close()
                raise
            t.socket = sock
        started = self.clock()
        try:
            yield t
        finally:
            if t.socket is not None:
                t.socket.close()
        t.result.duration_s = self.clock() - started
        if placement.transfer_id is not None:
            try:
                self.report(placement.transfer_id, t.result.duration_s)
                t.result.reported = True
            except (Unavailable, Refused) as exc:
                t.result.report_error = str(exc)


class Transfer:
    """The transfer inside ``with client.transfer(...) as t``: ``t.socket`` (when the
    client connected one), ``t.tag`` (what to set on a connection of one's own, None
    for plain ECMP), ``t.placement``, and ``t.result`` once the block is left."""

    def __init__(self, placement: Placement, result: Result) -> None:
        self.placement = placement
        self.result = result
        self.socket: socket.socket | None = None

    @property
    def tag(self) -> Tag | None:
        """The placement's tag (None: no tag, plain ECMP)."""
        return self.placement.tag


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
