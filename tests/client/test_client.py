"""kvfabric.client against controllers on real switch processes.

Success (a tagged, bound, connected socket; the completion reported), a 503 then
success (the backup first in the list), the primary killed and the backup taking
over, no controller at all (the ECMP fallback, said in the result), and a held
transfer that connects only once released (or past the bound of its wait).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvfabric.client import (
    Ask,
    AsyncClient,
    AsyncTransfer,
    Client,
    Placement,
    Refused,
    Transfer,
)
from tests.controller_service.harness import Api, RunningSwitches, metric, wait_for
from tests.support.controllers import Controllers
from tests.support.ports import free_port

MB = 1_000_000


class Listener:
    """A local TCP server that accepts connections and records each peer's port."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.peers: list[int] = []
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            with conn:
                self.peers.append(peer[1])
                self.received.append(conn.recv(1024))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    ear = Listener()
    try:
        yield ear
    finally:
        ear.close()


def address(proc: object) -> str:
    return f"{proc.host}:{proc.port}"  # type: ignore[attr-defined]


def test_a_transfer_gets_a_tagged_socket_and_reports_its_completion(
    fabric: RunningSwitches, controllers: Controllers, listener: Listener
) -> None:
    c = controllers.start(fabric.path, "--no-audit", "--token", "tk")
    c.api("tk").wait_ready()
    with Client([address(c)], token="tk", deadline_s=5) as client:
        with client.transfer("h11", "h21", 4_000, connect=("127.0.0.1", listener.port)) as t:
            assert t.socket is not None and t.tag is not None
            assert t.socket.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == t.tag.tos
            assert t.tag.tos == t.tag.dscp << 2
            assert t.socket.getsockname()[1] == t.tag.src_port
            t.socket.sendall(b"kv")
        result = t.result
        assert result.placement.placement == "pinned" and result.placement.spine
        assert result.reported and result.duration_s is not None
        wait_for(lambda: listener.peers)
        assert listener.peers == [t.tag.src_port]
        # a transport that opens its own connection gets the tag only
        with client.transfer("h12", "h22", 4_000) as own:
            assert own.socket is None and own.tag is not None
        assert own.result.reported
        with pytest.raises(Refused, match="did you mean"):
            client.request_path("h11", "h2l", 10)
    scrape = c.api("tk").call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="complete", status="200") == 2


def test_503_from_the_backup_then_success_from_the_primary(
    fabric: RunningSwitches, controllers: Controllers
) -> None:
    primary, backup = controllers.primary_and_backup(fabric.path)

    async def ask() -> tuple[str | None, bool]:
        async with AsyncClient([address(backup), address(primary)], deadline_s=5) as client:
            async with client.transfer("h11", "h21", 1_000) as t:
                pass
            return t.placement.controller, t.result.reported

    controller, reported = asyncio.run(ask())
    assert controller == address(primary) and reported
    scrape = backup.api().call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="transfers", status="503") == 1


def test_the_backup_takes_over_when_the_primary_is_killed(
    fabric: RunningSwitches, controllers: Controllers
) -> None:
    primary, backup = controllers.primary_and_backup(fabric.path)
    with Client([address(primary), address(backup)], deadline_s=10) as client:
        first = client.request_path("h11", "h21", 1_000)
        assert first.controller == address(primary) and first.placement == "pinned"
        # the leaves' ledger holds it within a poll interval: then the backup adopts it
        wait_for(lambda: metric(primary.api().call("GET", "/metrics")[1],
                                "kvfabric_ledger_writes_total"))  # fmt: skip
        primary.stop(signal.SIGKILL)
        second = client.request_path("h12", "h22", 1_000)
        assert second.controller == address(backup) and second.placement == "pinned"
        assert first.transfer_id is not None
        client.report(first.transfer_id, 0.5)  # the backup adopted the first transfer


def test_no_controller_falls_back_to_ecmp_and_says_so(listener: Listener) -> None:
    dead = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    client = Client(dead, deadline_s=0.2)
    with client.transfer("h11", "h21", 10, connect=("127.0.0.1", listener.port)) as t:
        assert t.tag is None and t.socket is not None
        assert t.socket.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 0
        t.socket.sendall(b"plain")
    client.close()
    assert t.result.placement.fell_back and t.result.placement.transfer_id is None
    assert "no controller answered" in t.result.placement.fallbacks[0]
    assert not t.result.reported and t.result.decision_s < 1.0

    async def ask() -> str:
        async with AsyncClient(dead, deadline_s=0.2) as client:
            placement = await client.request_path("h11", "h21", 10)
            return placement.placement

    assert asyncio.run(ask()) == "fallback"


def test_one_async_client_serves_two_event_loops_in_turn(
    fabric: RunningSwitches, controllers: Controllers
) -> None:
    c = controllers.start(fabric.path, "--no-audit")
    c.api().wait_ready()
    client = AsyncClient([address(c)], deadline_s=5)

    async def once() -> str:
        placement = await client.request_path("h11", "h21", 1_000)
        assert placement.transfer_id is not None
        await client.report(placement.transfer_id, 0.1)
        return placement.placement

    assert asyncio.run(once()) == "pinned"
    assert asyncio.run(once()) == "pinned"  # the first loop's kept-alive connection is gone


def _scheduled(fabric: RunningSwitches, tmp_path: Path, max_wait: str) -> Path:
    path = tmp_path / "scheduled.yaml"
    path.write_text(fabric.yaml() + f"  scheduling: {{policy: fifo, max_wait: {max_wait}}}\n")
    return path


def _held(api: Api) -> bool:
    return any(t["held"] for t in api.call("GET", "/v1/fabric")[1]["transfers"])


def test_a_held_transfer_connects_only_once_released(
    fabric: RunningSwitches, controllers: Controllers, listener: Listener, tmp_path: Path
) -> None:
    c, api = controllers.ready(_scheduled(fabric, tmp_path, "60s"), "--no-audit")
    with Client([address(c)], deadline_s=5) as client:
        running = [client.request_path("h11", "h21", MB) for _ in range(2)]  # both spines
        out: list[Transfer] = []

        def send() -> None:
            with Client([address(c)], deadline_s=5) as other:
                with other.transfer("h12", "h22", MB, connect=("127.0.0.1", listener.port),
                                    deadline_ms=500) as t:  # fmt: skip
                    assert t.socket is not None
                    t.socket.sendall(b"kv")
                out.append(t)

        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        wait_for(lambda: _held(api))
        assert listener.peers == []  # held: no connection before the release (60 s away)
        for placement in running:
            assert placement.transfer_id is not None
            client.report(placement.transfer_id, 0.01)
        thread.join(30)
    (t,) = out
    r = t.result
    assert t.placement.held and r.release_error is None and r.reported
    assert 0 < r.wait_s <= r.queued_s
    wait_for(lambda: listener.peers)
    assert t.tag is not None and listener.peers == [t.tag.src_port]


def test_async_waits_for_the_release_and_gives_up_past_its_bound(
    fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    c, api = controllers.ready(_scheduled(fabric, tmp_path, "60s"), "--no-audit")

    async def run() -> tuple[AsyncTransfer, AsyncTransfer]:
        async with AsyncClient([address(c)], deadline_s=5) as client:
            running = [await client.request_path("h11", "h21", MB) for _ in range(2)]
            released = asyncio.create_task(_one(client))
            await asyncio.to_thread(wait_for, lambda: _held(api))
            for placement in running:
                assert placement.transfer_id is not None
                await client.report(placement.transfer_id, 0.01)
            first = await released
            # nothing completes now: past the answer's wait plus no slack, it starts anyway
            _ = [await client.request_path("h11", "h21", MB) for _ in range(2)]
            async with AsyncClient([address(c)], deadline_s=5, release_slack_s=0.0) as hasty:
                return first, await _one(hasty)

    released, unreleased = asyncio.run(run())
    assert released.placement.held and released.result.release_error is None
    assert released.result.wait_s > 0
    assert unreleased.placement.held and unreleased.result.release_error is not None
    assert "no release in time" in unreleased.result.release_error


async def _one(client: AsyncClient) -> AsyncTransfer:
    async with client.transfer("h12", "h22", MB) as t:
        pass
    return t


def test_a_batch_is_decided_as_one_each_member_placed_or_refused(
    fresh_fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    # its own switches: nothing in flight to adopt from an earlier test's controller
    c, _api = controllers.ready(_scheduled(fresh_fabric, tmp_path, "60s"), "--no-audit")
    asks = [
        Ask("h11", "h21", 3 * MB, trace_id="big"),
        Ask("h11", "h21", MB, spine="spine9"),
        Ask("h11", "h21", MB, trace_id="small"),
        Ask("h12", "h22", 2 * MB),
    ]
    with Client([address(c)], deadline_s=5) as client:
        big, refused, small, mid = client.transfers(asks)
        assert isinstance(refused, Refused) and refused.status == 422
        assert "spine9" in refused.message
        assert isinstance(big, Placement) and isinstance(small, Placement)
        assert isinstance(mid, Placement)
        # first come, first served (the fabric's policy is fifo): the first two take
        # the two spines, the third is held behind the shorter of them
        assert (
            not big.held
            and not small.held
            and {big.spine, small.spine}
            == {
                "spine1",
                "spine2",
            }
        )
        assert mid.held and mid.spine == small.spine and mid.wait_s > 0
        for p in (small, mid, big):
            assert p.transfer_id is not None and p.tag is not None
            client.report(p.transfer_id, 0.01)

    async def ask_async() -> list[Placement | Refused]:
        async with AsyncClient([address(c)], deadline_s=5) as client:
            return await client.transfers([Ask("h11", "h21", MB), Ask("h11", "h11", MB)])

    one, same_host = asyncio.run(ask_async())
    assert isinstance(one, Placement) and one.placement == "pinned"
    assert isinstance(same_host, Refused) and "both 'h11'" in same_host.message


def test_a_batch_with_no_controller_falls_back_member_by_member() -> None:
    dead = [f"127.0.0.1:{free_port()}"]
    with Client(dead, deadline_s=0.2) as client:
        placements = client.transfers([Ask("h11", "h21", 10), Ask("h12", "h22", 10)])
    assert [p.placement for p in placements if isinstance(p, Placement)] == ["fallback"] * 2


def test_an_async_coordinator_gathers_its_path_requests_into_one_batch(
    fresh_fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    c, api = controllers.ready(_scheduled(fresh_fabric, tmp_path, "60s"), "--no-audit")

    async def burst() -> list[Placement | BaseException]:
        async with AsyncClient([address(c)], deadline_s=5, batch_window_s=0.05) as client:
            asks = [client.request_path("h11", "h21", MB) for _ in range(3)]
            asks.append(client.request_path("h11", "nope", MB))
            return await asyncio.gather(*asks, return_exceptions=True)

    *placed, refused = asyncio.run(burst())
    assert isinstance(refused, Refused) and refused.status == 422 and "nope" in refused.message
    assert all(isinstance(p, Placement) and p.placement == "pinned" for p in placed)
    ids = {p.transfer_id for p in placed if isinstance(p, Placement)}
    assert len(ids) == 3
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="batch", status="200") == 1
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="transfers", status="201") is None
    with pytest.raises(ValueError, match="batch_window_s must be 0 or more"):
        AsyncClient([address(c)], batch_window_s=-1)
