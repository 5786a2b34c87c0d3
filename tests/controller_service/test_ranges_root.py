"""The spine ranges end to end on veths: real switches, a real controller (root only).

Four ``kvfabric switch`` processes cabled by veth pairs, h11's port a veth whose far
end this test sends frames from, and a controller started with ``--no-ledger``, so
that nothing at all is written to a switch for a transfer. leaf1 logs every P4Runtime
Write it receives (``-L info``), and the test counts them:

- a decision makes no P4Runtime write: leaf1's Write RPCs are as many after the answer
  and after the tagged flow crossed as before the request;
- a tagged flow from a port of spine2's range leaves leaf1 by spine2's uplink (port 4)
  and leaf1's ``port_kv_tx`` counters show it; one from spine1's range by port 3;
- a dead cable's range is evacuated: with leaf1's cable to spine2 down, the flow of
  spine2's range leaves by port 3, after a handful of writes (groups and ranges), not
  one per transfer; with the cable back, by port 4 again.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from controller.service.southbound.intent import switch_mac
from tests.controller_service.harness import Reader, RunningSwitches, link_status, wait_for
from tests.support.controllers import Controllers

pytestmark = pytest.mark.root

FRAMES = 20
SPINE1, SPINE2 = (40000, 40499), (40500, 40999)


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningSwitches, Path]]:
    work = tmp_path_factory.mktemp("ranges")
    log = work / "leaf1.log"
    f = RunningSwitches(
        work, veths=True, host_veths=("h11",),
        switch_args={"leaf1": ("--log-file", str(log), "-L", "info")},
    )  # fmt: skip
    try:
        yield f.start(), log
    finally:
        f.close()


def _writes(log: Path) -> int:
    """How many P4Runtime Write RPCs leaf1 has received."""
    return log.read_text(errors="replace").count("P4Runtime Write:")


def _settled(log: Path) -> int:
    """leaf1's Write count once it stopped moving for half a second."""
    last = -1
    while (now := _writes(log)) != last:
        last = now
        time.sleep(0.5)
    return now


def _kv_tx(reader: Reader, fabric: RunningSwitches, port: int) -> int:
    import finsy as fy

    [cell] = reader.read(
        fabric.switches["leaf1"].address, 1, fy.P4CounterEntry("port_kv_tx", index=port)
    )
    return int(cell.counter_entry.data.packet_count)


def _send(fabric: RunningSwitches, sport: int) -> None:
    """``FRAMES`` KV-class TCP frames h11 -> h21 from ``sport``, into leaf1's port 1."""
    frame = (
        Ether(src="08:00:00:00:01:01", dst=f"{switch_mac(1):012x}")
        / IP(src="10.0.1.1", dst="10.0.2.1", tos=0x28)
        / TCP(sport=sport, dport=5201, flags="A")
        / Raw(b"kv-range" * 8)
    )
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((fabric.host_ends["h11"], 0))
        for _ in range(FRAMES):
            sock.send(bytes(frame))


def _crosses(reader: Reader, fabric: RunningSwitches, sport: int) -> dict[int, int]:
    """Send the frames of ``sport``; how many left leaf1 by each uplink (3 and 4)."""
    before = {p: _kv_tx(reader, fabric, p) for p in (3, 4)}
    _send(fabric, sport)
    wait_for(lambda: sum(_kv_tx(reader, fabric, p) for p in (3, 4)) - sum(before.values())
             >= FRAMES, timeout=10)  # fmt: skip
    return {p: _kv_tx(reader, fabric, p) - before[p] for p in (3, 4)}


def test_a_tagged_flow_leaves_on_its_ranges_spine_and_nothing_is_written(
    logged: tuple[RunningSwitches, Path], controllers: Controllers, reader: Reader
) -> None:
    fabric, log = logged
    _, api = controllers.ready(fabric.path, "--no-ledger")
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["controller"]["audited"])
    assert reader.ranges(fabric, "leaf1") == {(2, *SPINE1): 3, (2, *SPINE2): 4}
    before = _settled(log)
    assert before > 0  # provisioning wrote, and the log counts it

    status, t2 = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h21",
                                                    "bytes": 10**6, "spine": "spine2"})  # fmt: skip
    assert status == 201 and t2["placement"] == "pinned" and t2["spine"] == "spine2", t2
    port2 = t2["tag"]["src_port"]
    assert SPINE2[0] <= port2 <= SPINE2[1]
    assert _writes(log) == before  # the answer came with nothing written
    assert _crosses(reader, fabric, port2) == {3: 0, 4: FRAMES}  # spine2's uplink
    status, t1 = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h21",
                                                    "bytes": 10**6, "spine": "spine1"})  # fmt: skip
    assert status == 201 and t1["spine"] == "spine1", t1
    assert _crosses(reader, fabric, t1["tag"]["src_port"]) == {3: FRAMES, 4: 0}
    assert _writes(log) == before  # two decisions, two flows: still nothing written

    # leaf1's cable to spine2 dies: its range towards leaf2 points at spine1
    fabric.set_cable("leaf1", "spine2", up=False)
    link = "leaf1:4-spine2:1"
    wait_for(lambda: link_status(api, link) == "down", timeout=5)
    wait_for(lambda: reader.ranges(fabric, "leaf1") == {(2, *SPINE1): 3, (2, *SPINE2): 3})
    evacuated = _settled(log)
    assert 1 <= evacuated - before <= 3, evacuated - before  # groups and ranges, not per transfer
    assert _crosses(reader, fabric, port2) == {3: FRAMES, 4: 0}
    view = api.call("GET", "/v1/fabric")[1]
    moved = {t["transfer_id"]: t["path"] for t in view["transfers"]}
    assert set(moved.values()) == {"leaf1>spine1>leaf2"}  # the engine moved its load too

    fabric.set_cable("leaf1", "spine2", up=True)
    wait_for(lambda: link_status(api, link) == "up", timeout=5)
    wait_for(lambda: reader.ranges(fabric, "leaf1") == {(2, *SPINE1): 3, (2, *SPINE2): 4})
    assert _crosses(reader, fabric, port2) == {3: 0, 4: FRAMES}
    for t in (t1, t2):
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.1})[0] == 200
