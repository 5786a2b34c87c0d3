"""The blocking client: :class:`Client` over ``http.client``, one keep-alive connection
per controller."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
    Transfer,
    Unavailable,
    batch_placements,
    batch_request,
    connections_of,
    request_bytes,
    tagged_socket,
    tcp_socket,
    transfer_request,
)


class Client(BaseClient):
    """The controller's API for a sender (see :mod:`kvfabric.client`).

    ``controllers`` are ``HOST:PORT`` addresses, the primary first. ``deadline_s``
    bounds how long a path request may take before the ECMP fallback; a completion's
    report gets the same bound.
    """

    _conns: dict[Endpoint, http.client.HTTPConnection]

    def _reset(self) -> None:
        self._conns = {}

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
        trace_id: str | None = None, deadline_ms: int | None = None,
    ) -> Placement:  # fmt: skip
        """``POST /v1/transfers``; the ECMP fallback when no controller answers in time.
        :class:`Refused` when the request itself is wrong."""
        body = transfer_request(src, dst, nbytes, spine, trace_id, deadline_ms=deadline_ms)
        try:
            answer, endpoint = self.call("POST", "/v1/transfers", body)
        except Unavailable as exc:
            return Placement.fallback(exc)
        return Placement.from_answer(answer, str(endpoint))

    def transfers(self, asks: Sequence[Ask]) -> list[Placement | Refused]:
        """``POST /v1/transfers/batch``: many transfers decided as one by the controller
        (the design's burst: ``Engine.decide_batch`` places them together and orders
        those that share a path), for a coordinator that holds many completions. Each
        member's :class:`Placement`, or the :class:`Refused` that turned it down (the
        others are still decided), in order; every member falls back to plain ECMP when
        no controller answers in time. A wrong batch as a whole raises :class:`Refused`."""
        try:
            answer, endpoint = self.call("POST", "/v1/transfers/batch", batch_request(asks))
        except Unavailable as exc:
            return [Placement.fallback(exc) for _ in asks]
        return batch_placements(answer, str(endpoint), len(asks))

    def report(self, transfer_id: str, duration_s: float) -> None:
        """``POST /v1/transfers/{id}/complete``; :class:`Unavailable` or :class:`Refused`."""
        self.call("POST", f"/v1/transfers/{transfer_id}/complete", {"duration_s": duration_s})

    def call(
        self, method: str, path: str, body: object = None, *, deadline_s: float | None = None
    ) -> tuple[Any, Endpoint]:
        """One API call with the retry policy; the decoded answer and who gave it."""
        attempts = self.attempts(deadline_s)
        while True:
            endpoint = attempts.endpoint
            reply: Reply | str
            try:
                reply = self._exchange(endpoint, method, path, body, attempts.timeout(self.clock()))
            except (OSError, http.client.HTTPException) as exc:
                self._drop(endpoint)
                reply = _why(exc)
            outcome = attempts.settle(reply, self.clock())
            if isinstance(outcome, tuple):
                return outcome
            time.sleep(outcome)

    def wait_release(self, placement: Placement) -> Release:
        """Wait for a held transfer's release (long polls; at once when not held)."""
        release = Release.of(placement, self.clock(), self.release_slack_s)
        while (poll := release.next(self.clock())) is not None:
            try:
                release.settle(self.call("GET", poll[0], deadline_s=poll[1])[0])
            except ClientError as exc:
                release.settle(exc)
        return release

    def _exchange(
        self, endpoint: Endpoint, method: str, path: str, body: object, timeout: float
    ) -> Reply:
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
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, payload)

    def _open(self, endpoint: Endpoint, timeout: float) -> http.client.HTTPConnection:
        conn = Connection(endpoint.host, endpoint.port, timeout=timeout)
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
        deadline_ms: int | None = None,
        sockets: SocketFactory = tcp_socket,
    ) -> Iterator[Transfer]:
        """Ask for the path; with ``connect``, a socket tagged, bound and connected there
        (one per slice when the controller split the transfer over spines: ``t.sockets``).
        On a clean exit the completion is reported with the measured duration."""
        t0 = self.clock()
        placement = self.request_path(src, dst, nbytes, spine=spine, deadline_ms=deadline_ms)
        answered = self.clock()
        t = Transfer(placement, Result(placement, answered - t0))
        t.released(self.wait_release(placement), self.clock() - answered)
        if connect is not None:
            try:
                for part in connections_of(placement):
                    with tagged_socket(sockets, part, bind) as sock:
                        sock.connect(connect)
                    t.sockets.append(sock)
            except BaseException:
                t.close_sockets()
                raise
        started = self.clock()
        try:
            yield t
        finally:
            t.close_sockets()
        t.result.duration_s = self.clock() - started
        if placement.transfer_id is not None:
            try:
                self.report(placement.transfer_id, t.result.duration_s)
            except (Unavailable, Refused) as exc:
                t.reported(exc)
            else:
                t.reported(None)


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class Connection(http.client.HTTPConnection):
    """``http.client``'s connection with Nagle's algorithm off: it sends a request's head
    and body in two writes, and the body would otherwise wait for the head's
    acknowledgement, which the server may delay (up to 40 ms) while it waits for the
    body."""

    def connect(self) -> None:
        super().connect()
        assert self.sock is not None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
