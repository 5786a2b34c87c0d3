"""The KV sender and receiver over real TCP on localhost, with a fake controller API."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest

from kvfabric.client import AsyncClient
from lab.control import HttpControl
from lab.errors import ControlError
from lab.kvtransfer import HEADER, MAGIC, Receiver, TransferJob, send
from lab.netns import plain_factory
from tests.support.asyncio_tests import run_async
from tests.support.ports import free_port

from .fake_controller import FakeController


async def receiver_on_free_port() -> tuple[Receiver, int]:
    port = free_port()
    receiver = Receiver()
    await receiver.start(plain_factory(), ("127.0.0.1", port))
    return receiver, port


@run_async
async def test_ecmp_transfer_uses_the_scheduled_source_port_and_is_acknowledged():
    receiver, port = await receiver_on_free_port()
    try:
        t = TransferJob(
            "h11",
            "h21",
            "127.0.0.1",
            "127.0.0.1",
            3_000_000,
            ecmp_port=None,
            dst_port=port,
            label="t1",
        )
        out = await send(t)
        assert out.error is None and out.fct_s is not None and out.fct_s > 0
        assert out.placement is None
        (r,) = receiver.received
        assert r.nbytes == 3_000_000 and r.transfer_id == "t1"
        assert r.first_byte_at <= r.last_byte_at
    finally:
        await receiver.close()


class SpySocket(socket.socket):
    """A socket that remembers its options (to see the tag the sender sets)."""

    options: dict[tuple[int, int], object]

    def setsockopt(self, level: int, option: int, value: object, *rest: object) -> None:
        self.__dict__.setdefault("options", {})[(level, option)] = value
        super().setsockopt(level, option, value, *rest)  # type: ignore[call-overload]


def spy_sockets() -> tuple[list[SpySocket], Callable[[], socket.socket]]:
    """The sockets a factory made, and the factory (of :class:`SpySocket`)."""
    made: list[SpySocket] = []

    def factory() -> socket.socket:
        made.append(SpySocket(socket.AF_INET, socket.SOCK_STREAM))
        return made[-1]

    return made, factory


async def fake_with_free_tag_port(**kw: object) -> FakeController:
    ctl = FakeController(**kw)  # type: ignore[arg-type]
    await ctl.start()
    ctl.first_port = free_port() - 1  # the fake hands out first_port + n
    return ctl


@run_async
async def test_kv_aware_transfer_asks_sets_the_tag_and_reports_completion():
    receiver, port = await receiver_on_free_port()
    ctl = await fake_with_free_tag_port(dscp=46)
    made, spy_factory = spy_sockets()
    try:
        api = HttpControl("127.0.0.1", ctl.port)
        t = TransferJob(
            "h11", "h21", "127.0.0.1", "127.0.0.1", 500_000, ecmp_port=12345, dst_port=port
        )
        out = await send(t, paths=api, sockets=spy_factory)
        assert out.error is None, out.error
        assert out.placement is not None and out.placement.spine == "spine2"
        assert out.placement.tag is not None and out.placement.tag.dscp == 46
        assert made[0].options[(socket.IPPROTO_IP, socket.IP_TOS)] == 46 << 2
        assert out.src_port == ctl.first_port + 1
        (r,) = receiver.received
        assert r.peer[1] == out.src_port  # bound to the tag's source port
        methods = [(m, p) for m, p, _ in ctl.calls]
        assert methods == [("POST", "/v1/transfers"), ("POST", "/v1/transfers/1/complete")]
        assert ctl.calls[0][2] == {"src": "h11", "dst": "h21", "bytes": 500_000}
        assert ctl.calls[1][2]["duration_s"] == pytest.approx(out.fct_s)
        assert out.decision_s is not None and out.fct_s is not None
        assert out.decision_s < out.fct_s
    finally:
        await receiver.close()
        await ctl.close()


@run_async
async def test_ecmp_mode_sets_no_tos():
    receiver, port = await receiver_on_free_port()
    made, spy_factory = spy_sockets()
    try:
        out = await send(
            TransferJob("h", "d", "127.0.0.1", "127.0.0.1", 1000, dst_port=port),
            sockets=spy_factory,
        )
        assert out.error is None
        assert (socket.IPPROTO_IP, socket.IP_TOS) not in made[0].options
    finally:
        await receiver.close()


@run_async
async def test_concurrent_transfers_are_served_concurrently():
    receiver, port = await receiver_on_free_port()
    try:
        transfers = [
            TransferJob("h", "d", "127.0.0.1", "127.0.0.1", 8_000_000, dst_port=port, label=f"t{i}")
            for i in range(4)
        ]
        outs = await asyncio.gather(*(send(t) for t in transfers))
        assert all(o.error is None for o in outs)
        assert sorted(r.transfer_id for r in receiver.received) == ["t0", "t1", "t2", "t3"]
        spans = [(r.first_byte_at, r.last_byte_at) for r in receiver.received]
        # Every transfer started before the first one finished: served side by side.
        assert max(a for a, _ in spans) < min(b for _, b in spans)
    finally:
        await receiver.close()


@run_async
async def test_refused_connection_and_controller_errors_are_outcomes_not_exceptions():
    dead = free_port()
    out = await send(TransferJob("h", "d", "127.0.0.1", "127.0.0.1", 10, dst_port=dead))
    assert out.fct_s is None and out.error and "refused" in out.error.lower()
    ctl = FakeController(fail_with=503)
    await ctl.start()
    try:
        out = await send(
            TransferJob("h", "d", "127.0.0.1", "127.0.0.1", 10, dst_port=dead),
            paths=HttpControl("127.0.0.1", ctl.port),
        )
        assert out.fct_s is None and "HTTP 503" in (out.error or "")
    finally:
        await ctl.close()


@run_async
async def test_timeout_is_reported():
    # A listener that never reads or answers.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        out = await send(
            TransferJob("h", "d", "127.0.0.1", "127.0.0.1", 100, dst_port=port), timeout_s=0.3
        )
        assert out.fct_s is None and out.error == "timed out after 0.3s"
        # a censored result: the completion time is at least the time it ran
        assert out.censored_s is not None and out.censored_s >= 0.3
        assert out.started_at is not None
    finally:
        server.close()


@run_async
async def test_a_stuck_transfer_times_out_and_is_dropped_without_waiting_for_its_bytes():
    """A receiver that never reads: the unsent bytes must not hold the sender past its
    timeout (a graceful close waits for them), and the censored time is the deadline."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        src_port = free_port()
        t = TransferJob("h", "d", "127.0.0.1", "127.0.0.1", 64_000_000, src_port, dst_port=port)
        # the outer bound only catches a hang; it is no measurement
        out = await asyncio.wait_for(send(t, timeout_s=0.3), 30.0)
        assert out.fct_s is None and out.error == "timed out after 0.3s"
        assert out.censored_s == pytest.approx(0.3, abs=0.2)
        # the stuck connection is gone, not lingering: the same 5-tuple connects again
        again = await asyncio.wait_for(send(t, timeout_s=0.3), 30.0)
        assert again.error == "timed out after 0.3s", again.error
    finally:
        server.close()


@run_async
async def test_http_control_calls_and_errors():
    ctl = FakeController()
    await ctl.start()
    api = HttpControl("127.0.0.1", ctl.port)
    try:
        await api.ready(2.0)
        await api.set_mode("flowlet")
        p = await api.request_transfer("h11", "h21", 5, spine="spine1")
        assert p.spine == "spine1" and p.path == "leaf1>spine1>leaf2"
        view = await api.fabric()
        assert view["efficiency"]["evaluated"] == 4
        assert ("PUT", "/v1/mode", {"mode": "flowlet"}) in ctl.calls
        assert ctl.calls[-2][2] == {"src": "h11", "dst": "h21", "bytes": 5, "spine": "spine1"}
        with pytest.raises(ControlError, match="HTTP 404"):
            await api.request("GET", "/nowhere")
    finally:
        await ctl.close()
    with pytest.raises(ControlError, match="cannot reach the controller"):
        await HttpControl("127.0.0.1", ctl.port).fabric()


@run_async
async def test_kv_aware_sender_through_the_client_tags_binds_and_reports():
    receiver, port = await receiver_on_free_port()
    ctl = await fake_with_free_tag_port(dscp=46)
    made, spy_factory = spy_sockets()
    client = AsyncClient([("127.0.0.1", ctl.port)], deadline_s=5)
    try:
        t = TransferJob("h11", "h21", "127.0.0.1", "127.0.0.1", 300_000, 12345, dst_port=port)
        out = await send(t, paths=client, sockets=spy_factory)
        assert out.error is None and out.fallback is None, out
        assert out.placement is not None and out.placement.spine == "spine2"
        assert made[0].options[(socket.IPPROTO_IP, socket.IP_TOS)] == 46 << 2
        (r,) = receiver.received
        assert r.peer[1] == out.src_port == ctl.first_port + 1
        assert [(m, p) for m, p, _ in ctl.calls] == [
            ("POST", "/v1/transfers"), ("POST", "/v1/transfers/1/complete")
        ]  # fmt: skip
    finally:
        await client.close()
        await receiver.close()
        await ctl.close()


@run_async
async def test_without_a_controller_the_sender_falls_back_to_ecmp_untagged():
    receiver, port = await receiver_on_free_port()
    dead = free_port()
    made, spy_factory = spy_sockets()
    try:
        t = TransferJob("h11", "h21", "127.0.0.1", "127.0.0.1", 1_000, dst_port=port)
        client = AsyncClient([("127.0.0.1", dead)], deadline_s=0.1)
        out = await send(t, paths=client, sockets=spy_factory)
        assert out.error is None and out.fct_s is not None and out.placement is None
        assert out.fallback is not None and "no controller answered" in out.fallback
        assert (socket.IPPROTO_IP, socket.IP_TOS) not in made[0].options
    finally:
        await receiver.close()


@run_async
async def test_a_kv_aware_transfer_that_times_out_is_censored_at_its_deadline():
    server = socket.socket()  # a receiver that never reads
    server.bind(("127.0.0.1", 0))
    server.listen()
    ctl = await fake_with_free_tag_port()
    client = AsyncClient([("127.0.0.1", ctl.port)], deadline_s=5)
    try:
        port = server.getsockname()[1]
        t = TransferJob("h11", "h21", "127.0.0.1", "127.0.0.1", 64_000_000, dst_port=port)
        out = await asyncio.wait_for(send(t, paths=client, timeout_s=0.3), 30.0)
        assert out.fct_s is None and out.error == "timed out after 0.3s"
        assert out.censored_s == pytest.approx(0.3, abs=0.1)  # the deadline
    finally:
        await client.close()
        await ctl.close()
        server.close()


@run_async
async def test_a_held_transfer_counts_its_hold_from_the_request():
    receiver, port = await receiver_on_free_port()
    try:
        t = TransferJob("h11", "h21", "127.0.0.1", "127.0.0.1", 1000, dst_port=port)
        asked = asyncio.get_running_loop().time()
        out = await send(t, hold_s=0.2, clock=asyncio.get_running_loop().time)
        (r,) = receiver.received
        assert out.error is None and out.held_s == 0.2
        # nothing was sent before the hold was over, and the hold is in the time
        assert out.fct_s is not None and out.fct_s >= 0.2
        assert r.first_byte_at >= asked + 0.2 - 0.01  # the loop's clock is monotonic
    finally:
        await receiver.close()


def test_closing_the_receiver_cuts_a_transfer_in_flight_without_a_loop_error():
    """After Ctrl-C the session closes its receivers with transfers still arriving; the
    loop then reports nothing (Python 3.11 logged "Exception in callback" with a
    traceback for every connection task its shutdown had to cancel)."""
    loop_errors: list[str] = []
    receiver = Receiver()

    async def interrupted() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: loop_errors.append(context["message"]))
        port = free_port()
        await receiver.start(plain_factory(), ("127.0.0.1", port))
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(HEADER.pack(MAGIC, 1_000_000, b"t1") + bytes(1000))
        await writer.drain()
        await asyncio.sleep(0.1)  # the receiver is reading the rest
        await receiver.close()
        writer.close()

    asyncio.run(interrupted())
    assert loop_errors == []
    (error,) = receiver.errors
    assert "closed after 1000 of 1000000 bytes" in error
    assert receiver.received == []
