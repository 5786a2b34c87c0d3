"""The API's fast lane (controller/service/http/lane.py) against a controller on real switches.

Every test talks raw HTTP/1.1 over a socket, so that what the lane answers and what it
hands to aiohttp is chosen byte by byte; ``kvfabric_api_handoffs_total`` tells which side
answered. The lane must give the answers aiohttp's side gives, in the order asked.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.service.http.lane import PARTIAL_GRACE_S
from tests.controller_service.harness import ControllerProc, RunningSwitches, metric

ODD = b"GET /healthz?probe=%41 HTTP/1.1\r\nHost: x\r\n\r\n"
"""A plain GET but for a percent-escape: the lane hands its connection to aiohttp."""


@pytest.fixture(scope="module")
def controller(fabric: RunningSwitches, pipeline: tuple[Path, Path]) -> Iterator[ControllerProc]:
    proc = ControllerProc(fabric.path, pipeline, "--no-audit")
    try:
        proc.start().api().wait_ready()
        yield proc
    finally:
        proc.close()


def request(method: str, path: str, body: object = None, *extra: bytes) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    head = [f"{method} {path} HTTP/1.1".encode(), b"Host: x", *extra]
    if body is not None:
        head += [b"Content-Type: application/json", b"Content-Length: %d" % len(data)]
    return b"\r\n".join([*head, b"", data])


class Conn:
    """One kept-alive connection; reads answers one at a time."""

    def __init__(self, c: ControllerProc) -> None:
        self.sock = socket.create_connection((c.host, c.port), timeout=10)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        length = int(headers["content-length"])
        while len(self.buf) < length:
            self._more()
        body, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), headers, body

    def closed(self) -> bool:
        """True once the server has closed the connection (after any answer left)."""
        self.sock.settimeout(5)
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return True
            self.buf += chunk

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, f"the connection closed; left unread: {self.buf[:200]!r}"
        self.buf += chunk

    def close(self) -> None:
        self.sock.close()


def handoffs(c: ControllerProc) -> float:
    status, text = c.api().call("GET", "/metrics")
    assert status == 200
    return metric(text, "kvfabric_api_handoffs_total") or 0.0


def transfer_body() -> dict[str, object]:
    return {"src": "h11", "dst": "h21", "bytes": 4_000_000}


def complete(conn: Conn, tid: str) -> None:
    conn.send(request("POST", f"/v1/transfers/{tid}/complete", {"duration_s": 0.01}))
    assert conn.answer()[0] == 200


CASES = {
    "health": request("GET", "/healthz"),
    "mode": request("GET", "/v1/mode"),
    "openapi": request("GET", "/openapi.json"),
    "no endpoint": request("GET", "/v1/nothing"),
    "wrong method": request("PUT", "/v1/transfers", {}),
    "bad JSON": request("POST", "/v1/transfers", None, b"Content-Length: 5") + b"{nope",
    "unknown field": request("POST", "/v1/transfers", {**transfer_body(), "colour": "red"}),
    "zero bytes": request("POST", "/v1/transfers", {**transfer_body(), "bytes": 0}),
    "unknown host": request("POST", "/v1/transfers", {**transfer_body(), "src": "h99"}),
    "unknown completion": request("POST", "/v1/transfers/x-1/complete", {"duration_s": 1}),
    "empty batch": request("POST", "/v1/transfers/batch", {"transfers": []}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_lane_answers_as_aiohttp_does(controller: ControllerProc, case: str) -> None:
    lane, other = Conn(controller), Conn(controller)
    try:
        before = handoffs(controller)
        lane.send(CASES[case])
        by_lane = lane.answer()
        assert handoffs(controller) == before, "the lane handed a plain request to aiohttp"
        other.send(ODD)
        assert other.answer()[0] == 200
        assert handoffs(controller) == before + 1
        other.send(CASES[case])
        by_aiohttp = other.answer()
    finally:
        lane.close()
        other.close()
    assert by_lane[0] == by_aiohttp[0]
    assert by_lane[2] == by_aiohttp[2]
    for name in ("content-type", "allow", "server", "retry-after"):
        assert by_lane[1].get(name) == by_aiohttp[1].get(name), name


def test_a_decision_through_the_lane_is_a_decision(controller: ControllerProc) -> None:
    conn = Conn(controller)
    try:
        before = handoffs(controller)
        conn.send(request("POST", "/v1/transfers", transfer_body()))
        status, headers, body = conn.answer()
        answer = json.loads(body)
        assert status == 201 and answer["placement"] == "pinned"
        assert headers["location"] == f"/v1/transfers/{answer['id']}"
        assert answer["tag"]["tos"] == answer["tag"]["dscp"] << 2
        complete(conn, answer["id"])
        assert handoffs(controller) == before
    finally:
        conn.close()


def test_pipelined_answers_come_in_order(controller: ControllerProc) -> None:
    """Decisions answered at once, a GET the handler awaits and a batch, in one write:
    the answers keep the requests' order."""
    conn = Conn(controller)
    try:
        before = handoffs(controller)
        conn.send(
            request("POST", "/v1/transfers", transfer_body())
            + request("GET", "/healthz")
            + request("POST", "/v1/transfers", transfer_body())
            + request("POST", "/v1/transfers/batch", {"transfers": [transfer_body()] * 3})
            + request("GET", "/v1/mode")
        )
        got = [conn.answer() for _ in range(5)]
        assert [s for s, _, _ in got] == [201, 200, 201, 200, 200]
        assert json.loads(got[1][2])["ok"] is True
        assert json.loads(got[4][2])["mode"] == "kv-aware"
        ids = [json.loads(got[0][2])["id"], json.loads(got[2][2])["id"]]
        ids += [t["id"] for t in json.loads(got[3][2])["transfers"]]
        numbers = [int(i.rsplit("-", 1)[1]) for i in ids]
        assert numbers == sorted(numbers) and len(set(numbers)) == 5
        for tid in ids:
            complete(conn, tid)
        assert handoffs(controller) == before
    finally:
        conn.close()


def test_a_head_and_body_sent_apart_stay_in_the_lane(controller: ControllerProc) -> None:
    data = request("POST", "/v1/transfers", transfer_body())
    head_end = data.index(b"\r\n\r\n") + 4
    conn = Conn(controller)
    try:
        before = handoffs(controller)
        conn.send(data[:head_end])
        time.sleep(PARTIAL_GRACE_S / 5)
        conn.send(data[head_end:])
        status, _, body = conn.answer()
        assert status == 201
        complete(conn, json.loads(body)["id"])
        assert handoffs(controller) == before
    finally:
        conn.close()


def test_a_request_partial_past_the_grace_goes_to_aiohttp(controller: ControllerProc) -> None:
    """aiohttp takes the connection with the bytes received and still answers once the
    rest comes, and keeps the connection for the requests after it."""
    data = request("POST", "/v1/transfers", transfer_body())
    conn = Conn(controller)
    try:
        before = handoffs(controller)
        conn.send(data[:20])
        time.sleep(PARTIAL_GRACE_S * 2)
        assert handoffs(controller) == before + 1
        conn.send(data[20:])
        status, _, body = conn.answer()
        assert status == 201
        complete(conn, json.loads(body)["id"])
        assert handoffs(controller) == before + 1
    finally:
        conn.close()


def test_the_first_request_not_plain_goes_to_aiohttp_with_what_follows(
    controller: ControllerProc,
) -> None:
    """A decision, then a chunked upload (411 from aiohttp's side), then a decision: the
    three answers in order, the last one by aiohttp, which keeps the connection."""
    chunked = (
        b"POST /v1/transfers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n"
    )
    conn = Conn(controller)
    try:
        before = handoffs(controller)
        plain = request("POST", "/v1/transfers", transfer_body())
        conn.send(plain + chunked + plain)
        first = conn.answer()
        assert first[0] == 201
        second = conn.answer()
        assert second[0] == 411 and json.loads(second[2])["status"] == 411
        third = conn.answer()
        assert third[0] == 201
        assert handoffs(controller) == before + 1
        for answer in (first, third):
            complete(conn, json.loads(answer[2])["id"])
        assert handoffs(controller) == before + 1
    finally:
        conn.close()


def test_requests_then_end_of_stream_are_all_answered(controller: ControllerProc) -> None:
    conn = Conn(controller)
    try:
        conn.send(request("GET", "/healthz") + request("POST", "/v1/transfers", transfer_body()))
        conn.sock.shutdown(socket.SHUT_WR)
        assert conn.answer()[0] == 200
        status, _, body = conn.answer()
        assert status == 201
        assert conn.closed()
    finally:
        conn.close()
    done = Conn(controller)
    complete(done, json.loads(body)["id"])
    done.close()


@pytest.mark.parametrize("cut", [b"A", b"POST /v1/transfers HTTP/1.1\r\nHost: x\r\n"])
def test_a_request_cut_short_by_the_end_of_stream_is_closed_at_once(
    controller: ControllerProc, cut: bytes
) -> None:
    """The client's end of stream after part of a request: aiohttp takes it without
    waiting for the lane's grace, and the connection ends (its parser's answer, or none),
    not held open."""
    conn = Conn(controller)
    try:
        conn.send(cut)
        conn.sock.shutdown(socket.SHUT_WR)
        started = time.monotonic()
        assert conn.closed()
        assert time.monotonic() - started < PARTIAL_GRACE_S
    finally:
        conn.close()
