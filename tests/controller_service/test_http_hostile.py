"""Hostile requests to a real controller's HTTP API, over raw sockets.

Two ``kvfabric controller`` processes over four switch processes, one of them with
a non-ASCII ``--token``. Each case is bytes on a TCP socket and a check of the answer's status
line, so the tests hold for any HTTP server put behind the API; every case also
checks that the controller logged no traceback and still answers.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.controller_service.harness import ControllerProc, RunningSwitches

TOKEN = "pàss-Å-ключ…"  # UTF-8 holds bytes 0xa0, 0x85 and 0xa6, which str.strip() would eat
AUTH = b"Authorization: Bearer " + TOKEN.encode()
TRANSFER = b'{"src": "h11", "dst": "h21", "bytes": %s}'


@pytest.fixture(scope="module")
def controller(fabric: RunningSwitches, pipeline: tuple[Path, Path]) -> Iterator[ControllerProc]:
    """A controller without a token (the ``Authorization`` header is ignored)."""
    proc = ControllerProc(fabric.path, pipeline, "--no-audit")
    try:
        yield proc.start()
    finally:
        proc.close()


@pytest.fixture(scope="module")
def guarded(fabric: RunningSwitches, pipeline: tuple[Path, Path]) -> Iterator[ControllerProc]:
    """A controller with the non-ASCII token."""
    proc = ControllerProc(fabric.path, pipeline, "--no-audit", "--token", TOKEN)
    try:
        yield proc.start()
    finally:
        proc.close()


def exchange(c: ControllerProc, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data``, close the sending side, and return everything the server answers."""
    with socket.create_connection((c.host, c.port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and stopped reading early: read its answer
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), f"no answer: {answer[:200]!r}"
    return int(answer[9:12])


def request(method: str, path: str, body: bytes = b"", *headers: bytes) -> bytes:
    head = [f"{method} {path} HTTP/1.1".encode(), b"Host: x", AUTH, *headers]
    if body:
        head += [b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
    return b"\r\n".join([*head, b"", body])


def healthy(c: ControllerProc, log_from: int) -> None:
    """No traceback logged since offset ``log_from``, and the server still answers."""
    assert "Traceback" not in c.log()[log_from:]
    assert status_of(exchange(c, request("GET", "/healthz"))) == 200


# HTTP/1.1 requires Host (RFC 9112, 3.2: 400 without it), so each raw case names one
POST_MODE = b"POST /v1/mode HTTP/1.1\r\nHost: x\r\n"
NESTED = b"[" * 60_000 + b"]" * 4_000
CASES = {
    "deeply nested array": (request("POST", "/v1/transfers", NESTED), 400),
    "deep value in an object": (
        request("POST", "/v1/transfers", TRANSFER % (b"[" * 500 + b"1" + b"]" * 500)),
        400,
    ),
    "integer of 4,301 digits": (
        request("POST", "/v1/transfers", TRANSFER % (b"9" * 4301)),
        400,
    ),
    "integer of 50,000 digits": (
        request("POST", "/v1/transfers", TRANSFER % (b"9" * 50_000)),
        400,
    ),
    "integer beyond 64 bits": (
        request("POST", "/v1/transfers", TRANSFER % b"18446744073709551616"),
        400,
    ),
    "10**400 as a duration": (
        request("POST", "/v1/transfers/x/complete", b'{"duration_s": 1%s}' % (b"0" * 400)),
        400,
    ),
    "10**400 ms": (
        request("POST", "/v1/transfers/x/complete", b'{"duration_ms": 1%s}' % (b"0" * 400)),
        400,
    ),
    "1e400 as a duration": (
        request("POST", "/v1/transfers/x/complete", b'{"duration_s": 1e400}'),
        400,
    ),
    "NaN as a duration": (request("POST", "/v1/transfers/x/complete", b'{"duration_s": NaN}'), 400),
    "request line over 64 KiB": (request("GET", "/" + "a" * 70_000), 400),
    "request line over the line limit": (request("GET", "/" + "a" * 20_000), 400),
    "header line over 64 KiB": (request("GET", "/v1/mode", b"", b"X-Pad: " + b"p" * 70_000), 431),
    "head over 64 KiB": (
        request("GET", "/v1/mode", b"", *(b"X-Pad-%d: %s" % (i, b"p" * 8000) for i in range(9))),
        431,
    ),
    "too many header lines": (
        request("GET", "/v1/mode", b"", *(b"X-%d: 1" % i for i in range(150))),
        431,
    ),
    "Content-Length: superscript two": (  # Latin-1 "²", which str.isdigit() accepts
        POST_MODE + AUTH + b"\r\nContent-Length: \xb2\r\n\r\n{}",
        400,
    ),
    "Content-Length: Arabic-Indic digits": (
        POST_MODE + AUTH + "\r\nContent-Length: ١٢\r\n\r\n{}".encode(),
        400,
    ),
    "Content-Length of 5,000 digits": (
        POST_MODE + AUTH + b"\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
        413,
    ),
    "Content-Length over the body limit": (
        POST_MODE + AUTH + b"\r\nContent-Length: 70000\r\n\r\n" + b" " * 70000,
        413,
    ),
    "HTTP/1.1 without Host": (
        b"POST /v1/mode HTTP/1.1\r\n" + AUTH + b"\r\nContent-Length: 2\r\n\r\n{}",
        400,
    ),
    "two different Content-Lengths": (
        POST_MODE + AUTH + b"\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{} ",
        400,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_requests_get_an_answer(controller: ControllerProc, name: str) -> None:
    data, status = CASES[name]
    log_from = len(controller.log())
    answer = exchange(controller, data)
    assert status_of(answer) == status, answer[:300]
    _head, _, body = answer.partition(b"\r\n\r\n")
    assert json.loads(body)["status"] == status
    assert len(body) < 1000  # the message quotes nothing whole
    healthy(controller, log_from)


def test_a_non_ascii_token_sent_as_utf8_matches(guarded: ControllerProc) -> None:
    log_from = len(guarded.log())
    assert status_of(exchange(guarded, request("GET", "/v1/mode"))) == 200
    wrong = b"Authorization: Bearer " + TOKEN[:-1].encode()
    no_auth = b"GET /v1/mode HTTP/1.1\r\nHost: x\r\n" + wrong + b"\r\n\r\n"
    assert status_of(exchange(guarded, no_auth)) == 401
    latin1 = b"Authorization: Bearer " + TOKEN.encode("utf-8").decode("latin-1").encode()
    mangled = b"GET /v1/mode HTTP/1.1\r\nHost: x\r\n" + latin1 + b"\r\n\r\n"
    assert status_of(exchange(guarded, mangled)) == 401
    healthy(guarded, log_from)


def test_keep_alive_still_works_after_the_checks(controller: ControllerProc) -> None:
    two = request("GET", "/v1/mode") + request("GET", "/healthz")
    answer = exchange(controller, two)
    assert answer.count(b"HTTP/1.1 200 OK") == 2


_methods = st.sampled_from([b"GET", b"POST", b"PUT", b"DELETE", b"PATCH", b"\xff", b""])
_paths = st.sampled_from(
    [b"/v1/transfers", b"/v1/transfers/t1/complete", b"/v1/pins", b"/v1/pins/p1", b"/v1/mode",
     b"/v1/fabric", b"/metrics", b"/healthz", b"/", b"//..", b"/v1/pins/\xc3\xa0"]
)  # fmt: skip
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=20,
)
_fields = st.dictionaries(
    st.sampled_from(["src", "dst", "bytes", "spine", "trace_id", "duration_s", "duration_ms",
                     "mode", "protocol", "src_port", "dst_port"]),
    _json_values | st.sampled_from(["h11", "h21", "spine1", "tcp", "kv-aware", 1, 0.5, -1]),
)  # fmt: skip


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    body = draw(
        st.one_of(
            _fields.map(lambda d: json.dumps(d).encode()),
            st.binary(max_size=200),
        )
    )
    headers = draw(st.lists(st.binary(max_size=40), max_size=3))
    if draw(st.booleans()):
        headers.append(AUTH)
    length = draw(st.one_of(st.just(b"%d" % len(body)), st.binary(max_size=8)))
    head = [draw(_methods) + b" " + draw(_paths) + b" HTTP/1.1", *headers]
    head.append(b"Content-Length: " + length)
    return b"\r\n".join([*head, b"", body])


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.one_of(_requests(), st.binary(max_size=300)))
def test_fuzzed_requests_never_get_a_500(controller: ControllerProc, data: bytes) -> None:
    log_from = len(controller.log())
    answer = exchange(controller, data, timeout=5.0)
    if answer:
        assert status_of(answer) != 500, answer[:300]
    assert "Traceback" not in controller.log()[log_from:]


def test_slow_clients_hold_only_their_own_connection(controller: ControllerProc) -> None:
    """A client stalled mid-head and one stalled mid-body do not delay anyone else; the
    one stalled mid-body is answered 408 once the body's time is up."""
    log_from = len(controller.log())
    with (
        socket.create_connection((controller.host, controller.port), timeout=30) as mid_head,
        socket.create_connection((controller.host, controller.port), timeout=30) as mid_body,
    ):
        mid_head.sendall(b"GET /v1/mode HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        mid_body.sendall(request("POST", "/v1/mode", b'{"mode": "kv-aware"}')[:-5])
        for _ in range(5):
            assert status_of(exchange(controller, request("GET", "/v1/mode"), timeout=2)) == 200
        answer = mid_body.recv(65536)
        assert status_of(answer) == 408, answer[:300]
        mid_head.sendall(b"1\r\n" + AUTH + b"\r\n\r\n")
        assert status_of(mid_head.recv(65536)) == 200
    healthy(controller, log_from)
