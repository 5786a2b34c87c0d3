"""gNMI on a real ``kvfabric switch``: its ports' speeds and statuses, read with finsy.

The switch runs on veth pairs (root): port 1 provisioned at 400G by ``--port-speed``,
port 2 left to the kernel (a veth says 10 Gb/s while up), port 3 at the lab's 20 Mb/s
(no OpenConfig speed names it). finsy's ``GNMIClient`` reads them on the P4Runtime port,
as a controller does; a Set re-provisions a port, ``ip link set ... down`` takes one
down, and the subscriptions see both.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import finsy as fy
import pytest
from finsy.gnmiclient import GNMIClient, GNMIClientError, GNMIUpdate
from finsy.gnmipath import GNMIPath
from finsy.proto import gnmi

from softswitch.switch.process import SwitchProcess
from tests.support.netns import VethPair, namespace, sh, veths

pytestmark = pytest.mark.root
T = TypeVar("T")

STATE = GNMIPath("interfaces/interface[name=*]/state")
OPER = GNMIPath("interfaces/interface[name=*]/state/oper-status")
SPEED = GNMIPath("interfaces/interface[name=*]/ethernet/state/port-speed")
SPEED_BPS = GNMIPath("interfaces/interface[name=*]/ethernet/state/port-speed-bps")


@dataclass
class Running:
    process: SwitchProcess
    pairs: list[VethPair]
    netns: str

    @property
    def names(self) -> list[str]:
        return [p.outside for p in self.pairs]


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    with namespace() as ns, veths(ns, 3) as pairs:
        argv = [a for i, p in enumerate(pairs, 1) for a in ("-i", f"{i}@{p.outside}")]
        argv += ["--port-speed", "1:400G", "--port-speed", "3:20Mbps", "--no-p4", "--"]
        argv += ["--grpc-server-addr", "127.0.0.1:0"]
        with SwitchProcess(argv) as process:
            yield Running(process, pairs, ns)


@asynccontextmanager
async def client(address: str) -> AsyncIterator[GNMIClient]:
    async with GNMIClient(address) as c:
        yield c


def by_name(updates: list[GNMIUpdate]) -> dict[tuple[str, str], object]:
    """(interface, leaf) -> value."""
    return {(u.path["name"], u.path.last): u.value for u in updates}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_capabilities_name_openconfig_and_the_encodings(running: Running) -> None:
    async def go() -> gnmi.CapabilityResponse:
        async with client(running.process.address) as c:
            return await c.capabilities()

    caps = run(go())
    assert {m.name for m in caps.supported_models} == {
        "openconfig-interfaces",
        "openconfig-if-ethernet",
    }
    assert gnmi.Encoding.PROTO in caps.supported_encodings
    assert caps.gNMI_version == "0.10.0"


def test_get_reports_speeds_ids_and_status(running: Running) -> None:
    async def go() -> list[GNMIUpdate]:
        async with client(running.process.address) as c:
            return list(await c.get(STATE, SPEED, SPEED_BPS))

    got = by_name(run(go()))
    one, two, three = running.names
    assert got[one, "ifindex"] == 1 and got[three, "id"] == 3
    assert {got[n, "oper-status"] for n in running.names} == {"UP"}
    assert got[one, "port-speed"] == "SPEED_400GB" and got[one, "port-speed-bps"] == 400e9
    assert got[two, "port-speed"] == "SPEED_10GB"  # the kernel's figure for a veth
    assert got[three, "port-speed"] == "SPEED_UNKNOWN"  # no Ethernet speed is 20 Mb/s
    assert got[three, "port-speed-bps"] == 20_000_000


def test_get_errors_are_grpc_statuses(running: Running) -> None:
    async def go(path: GNMIPath) -> GNMIClientError:
        async with client(running.process.address) as c:
            with pytest.raises(GNMIClientError) as info:
                await c.get(path)
            return info.value

    missing = run(go(GNMIPath("interfaces/interface[name=nope]/state")))
    assert isinstance(missing, GNMIClientError)
    assert missing.code.name == "NOT_FOUND" and "nope" in missing.message
    origin = run(go(GNMIPath("interfaces", origin="cli")))
    assert isinstance(origin, GNMIClientError) and origin.code.name == "INVALID_ARGUMENT"
    outside = run(go(GNMIPath("components")))
    assert isinstance(outside, GNMIClientError) and outside.code.name == "NOT_FOUND"


def test_once_and_poll_subscriptions(running: Running) -> None:
    async def go() -> tuple[dict[tuple[str, str], object], list[dict[tuple[str, str], object]]]:
        async with client(running.process.address) as c:
            sub = c.subscribe()
            sub.once(OPER, SPEED)
            once = by_name([u async for u in sub.synchronize()])
            return once, await _poll_twice(c)

    once, polls = run(go())
    assert once[running.names[0], "port-speed"] == "SPEED_400GB"
    assert {v for (_, leaf), v in once.items() if leaf == "oper-status"} == {"UP"}
    assert len(polls) == 2 and polls[0] == polls[1]
    assert polls[0][running.names[2], "port-speed-bps"] == 20_000_000


async def _poll_twice(c: GNMIClient) -> list[dict[tuple[str, str], object]]:
    """A POLL subscription (finsy has no helper for it): the first answer and one poll."""
    stub = c._stub  # finsy's client has no POLL mode; its stub does
    assert stub is not None
    request = gnmi.SubscribeRequest(
        subscribe=gnmi.SubscriptionList(
            mode=gnmi.SubscriptionList.POLL,
            encoding=gnmi.Encoding.PROTO,
            subscription=[gnmi.Subscription(path=SPEED_BPS.path)],
        )
    )
    call: Any = stub.Subscribe()  # type: ignore[call-arg]  # grpc.aio: a stream to write to
    await call.write(request)
    answers: list[dict[tuple[str, str], object]] = []
    for _ in range(2):
        updates: list[GNMIUpdate] = []
        while True:
            msg = await call.read()
            if msg.WhichOneof("response") == "sync_response":
                break
            updates += [
                GNMIUpdate(msg.update.timestamp, GNMIPath(u.path), u.val) for u in msg.update.update
            ]
        answers.append(by_name(updates))
        await call.write(gnmi.SubscribeRequest(poll=gnmi.Poll()))
    call.cancel()
    return answers


def test_a_set_speed_is_seen_by_get_and_by_an_on_change_subscription(running: Running) -> None:
    name = running.names[1]
    config = GNMIPath(f"interfaces/interface[name={name}]/ethernet/config/port-speed")
    bps = GNMIPath(f"interfaces/interface[name={name}]/ethernet/config/port-speed-bps")

    async def go() -> tuple[list[GNMIUpdate], list[GNMIUpdate], list[GNMIUpdate]]:
        async with client(running.process.address) as c:
            sub = c.subscribe()
            sub.on_change(GNMIPath(f"interfaces/interface[name={name}]/ethernet/state"))
            initial = [u async for u in sub.synchronize()]
            await c.set(update=[(config, "SPEED_400GB")])
            changes: list[GNMIUpdate] = []
            async with asyncio.timeout(2):
                async for update in sub.updates():
                    changes.append(update)
                    if len(changes) == 2:
                        break
            sub.cancel()
            await c.set(update=[(bps, 40_000_000)])
            mid = list(await c.get(SPEED_BPS))
            await c.set(delete=[config])
            after = list(await c.get(SPEED_BPS))
            return initial, changes, mid + after

    initial, changes, gets = run(go())
    assert by_name(initial)[name, "port-speed"] == "SPEED_10GB"
    assert by_name(changes) == {(name, "port-speed"): "SPEED_400GB",
                                (name, "port-speed-bps"): 400_000_000_000}  # fmt: skip
    mid, after = gets[:3], gets[3:]
    assert by_name(mid)[name, "port-speed-bps"] == 40_000_000
    assert by_name(after)[name, "port-speed-bps"] == 10_000_000_000  # back to the kernel's


def test_set_refuses_what_it_cannot_write(running: Running) -> None:
    name = running.names[0]

    async def go(path: str, value: object) -> GNMIClientError:
        async with client(running.process.address) as c:
            with pytest.raises(GNMIClientError) as info:
                await c.set(update=[(GNMIPath(path), value)])  # type: ignore[list-item]
            return info.value

    state = run(go(f"interfaces/interface[name={name}]/ethernet/state/port-speed", "SPEED_1GB"))
    assert isinstance(state, GNMIClientError) and state.code.name == "INVALID_ARGUMENT"
    bad = run(go(f"interfaces/interface[name={name}]/ethernet/config/port-speed", "FAST"))
    assert isinstance(bad, GNMIClientError) and "no OpenConfig port speed" in bad.message


def test_a_port_taken_down_reports_oper_status_down(running: Running) -> None:
    inside = running.pairs[2].inside
    name = running.names[2]
    path = GNMIPath(f"interfaces/interface[name={name}]/state/oper-status")

    async def go() -> tuple[list[object], object]:
        async with client(running.process.address) as c:
            sub = c.subscribe()
            sub.on_change(path)
            seen = [u.value async for u in sub.synchronize()]
            sh("ip", "netns", "exec", running.netns, "ip", "link", "set", inside, "down")
            try:
                async with asyncio.timeout(2):
                    async for update in sub.updates():
                        seen.append(update.value)
                        break
                [now] = await c.get(path)
            finally:
                sh("ip", "netns", "exec", running.netns, "ip", "link", "set", inside, "up")
            async with asyncio.timeout(2):
                async for update in sub.updates():
                    seen.append(update.value)
                    if update.value == "UP":
                        break
            sub.cancel()
            return seen, now.value

    seen, during = run(go())
    # the far end went down (the kernel may say DOWN before LOWER_LAYER_DOWN), then up
    assert seen[0] == "UP" and seen[-1] == "UP", seen
    assert set(seen[1:-1]) <= {"DOWN", "LOWER_LAYER_DOWN"} and len(seen) >= 3, seen
    assert during in {"DOWN", "LOWER_LAYER_DOWN"}


def test_a_sample_subscription_sends_every_interval(running: Running) -> None:
    async def go() -> list[int]:
        async with client(running.process.address) as c:
            sub = c.subscribe()
            sub.sample(OPER, sample_interval=100_000_000)
            [u async for u in sub.synchronize()]
            stamps: list[int] = []
            async with asyncio.timeout(2):
                async for update in sub.updates():
                    stamps.append(update.timestamp)
                    if len({*stamps}) == 3:
                        break
            sub.cancel()
            return sorted({*stamps})

    stamps = run(go())
    assert isinstance(stamps, list) and len(stamps) == 3
    gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(stamps)]
    assert all(0.05 < g < 0.5 for g in gaps), gaps


def test_finsy_switch_reads_the_ports_on_connecting(running: Running) -> None:
    async def go() -> dict[str, tuple[int, bool]]:
        options = fy.SwitchOptions(device_id=0)
        async with fy.Switch("sw", running.process.address, options) as sw:
            return {p.name: (p.id, p.up) for p in sw.ports}

    ports = run(go())
    assert ports == {name: (i, True) for i, name in enumerate(running.names, 1)}
