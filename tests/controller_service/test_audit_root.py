"""The topology audit on real cables: switch processes joined by veth pairs (root only).

Probes leave each switch by PacketOut, cross a veth and come back from the neighbour as
PacketIns. Taking one veth down must take its cable out of path selection and out of
the ECMP groups, point the spine range that crossed it at the live spine (its transfer
in flight goes with it), move the flow pin that crossed it, and raise the alert;
bringing it back must undo all of that (the range goes back to its spine; the moved
flow pin stays where it went).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.service.southbound.prober import probe_frame
from tests.controller_service.harness import (
    Api,
    Reader,
    RunningSwitches,
    link_status,
    metric,
    wait_for,
)
from tests.support.controllers import Controllers

pytestmark = pytest.mark.root

LINK = "leaf1:3-spine1:1"
TRANSFER = {"src": "h11", "dst": "h21", "bytes": 2_000_000}
PIN = {"src": "h11", "dst": "h21", "protocol": "tcp", "src_port": 35000, "dst_port": 5201,
       "spine": "spine1"}  # fmt: skip


@pytest.fixture(scope="module")
def cabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSwitches]:
    f = RunningSwitches(tmp_path_factory.mktemp("cabled"), veths=True, host_veths=("h11",))
    try:
        yield f.start()
    finally:
        f.close()


def _egress(reader: Reader, fabric: RunningSwitches, transfer_id: str) -> int:
    """The uplink of the range entry whose ledger holds the transfer."""
    for record in reader.ledger(fabric, "leaf1"):
        if record["id"] == transfer_id:
            return int(record["egress"])
    raise AssertionError(f"{transfer_id} is in no ledger")


def _flow_egress(reader: Reader, fabric: RunningSwitches) -> list[int]:
    return [int(e.action.args["port"]) for e in reader.table(fabric, "leaf1", "flow_pin")]


def test_a_downed_cable_leaves_path_selection_and_comes_back(
    cabled: RunningSwitches, controllers: Controllers, reader: Reader, tmp_path: Path
) -> None:
    c, api = controllers.ready(cabled.path)
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["controller"]["audited"])
    view = api.call("GET", "/v1/fabric")[1]
    assert {x["status"] for x in view["links"]} == {"up"}, view["links"]
    assert not [a for a in view["alerts"] if a["name"].startswith("link")]

    placed = [api.call("POST", "/v1/transfers", TRANSFER)[1] for _ in range(2)]
    on_spine1 = next(t for t in placed if t["spine"] == "spine1")
    assert reader.wait_ledger(cabled, [t["id"] for t in placed])
    assert _egress(reader, cabled, on_spine1["id"]) == 3
    ranges = reader.ranges(cabled, "leaf1")
    assert ranges == {(2, 40000, 40499): 3, (2, 40500, 40999): 4}
    status, static = api.call("POST", "/v1/pins", PIN)
    assert status == 201 and static["port"] == 3, static
    assert _flow_egress(reader, cabled) == [3]

    cabled.set_cable("leaf1", "spine1", up=False)
    downed = time.monotonic()
    wait_for(lambda: link_status(api, LINK) == "down", timeout=5, step=0.01)
    detected = time.monotonic() - downed
    assert detected < 1.0, detected  # audit every 100 ms, window 50 ms

    # out of the ECMP groups on both leaves and spine1's ranges on spine2 (written right
    # after the verdict, which path selection already follows), new transfers avoid it
    wait_for(lambda: reader.groups(cabled, "leaf1") == {2: [4]}, timeout=1, step=0.01)
    wait_for(lambda: reader.groups(cabled, "leaf2") == {1: [4]}, timeout=1, step=0.01)
    evacuated = {(2, 40000, 40499): 4, (2, 40500, 40999): 4}
    wait_for(lambda: reader.ranges(cabled, "leaf1") == evacuated, timeout=1, step=0.01)
    # the cable is spine1's way down to leaf1 too: leaf2's spine1 range towards leaf1 moves
    towards_leaf1 = {(1, 40000, 40499): 4, (1, 40500, 40999): 4}
    wait_for(lambda: reader.ranges(cabled, "leaf2") == towards_leaf1, timeout=1, step=0.01)
    assert _egress(reader, cabled, on_spine1["id"]) == 4  # its ledger went with the range
    wait_for(lambda: _flow_egress(reader, cabled) == [4], timeout=1, step=0.01)
    [moved] = api.call("GET", "/v1/fabric")[1]["flow_pins"]
    assert (moved["id"], moved["spine"], moved["requested_spine"]) == (
        static["id"], "spine2", "spine1",
    )  # fmt: skip
    assert moved["moved"][0].startswith("leaf1>spine1>leaf2 -> leaf1>spine2>leaf2")
    groups_done = time.monotonic() - downed
    for _ in range(3):
        status, t = api.call("POST", "/v1/transfers", TRANSFER)
        assert status == 201 and t["spine"] == "spine2"
        api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.2})
    # forcing the dead spine (the lab's isolated reference) is a conflict, not a pin
    status, refused = api.call("POST", "/v1/transfers", {**TRANSFER, "spine": "spine1"})
    assert status == 409 and "leaf1:3-spine1:1 is not up" in str(refused["error"]), refused
    other = {**PIN, "src_port": 35001}
    status, refused = api.call("POST", "/v1/pins", other)
    assert status == 409 and "leaf1:3-spine1:1 is not up" in str(refused["error"]), refused
    assert _flow_egress(reader, cabled) == [4]
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_link_up", link=LINK, status="down") == 0.0
    assert metric(scrape, "kvfabric_link_up", link="leaf1:4-spine2:1", status="up") == 1.0
    assert metric(scrape, "kvfabric_alert_active", name="link_down", subject=LINK) == 1.0
    assert metric(scrape, "kvfabric_alerts_total", name="link_down", severity="critical") == 1.0
    assert (metric(scrape, "kvfabric_transfers_moved_total") or 0) >= 1
    assert "link leaf1:3-spine1:1 is down" in c.log()

    cabled.set_cable("leaf1", "spine1", up=True)
    wait_for(lambda: link_status(api, LINK) == "up", timeout=5, step=0.01)
    wait_for(lambda: reader.groups(cabled, "leaf1") == {2: [3, 4]}, timeout=2)
    wait_for(lambda: reader.groups(cabled, "leaf2") == {1: [3, 4]}, timeout=2)  # written next
    wait_for(lambda: reader.ranges(cabled, "leaf1") == ranges, timeout=2)  # back on spine1
    wait_for(lambda: reader.ranges(cabled, "leaf2")[1, 40000, 40499] == 3, timeout=2)
    assert _egress(reader, cabled, on_spine1["id"]) == 3
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_alert_active", name="link_down", subject=LINK) is None
    assert (metric(scrape, "kvfabric_probes_seen_total") or 0) >= 8  # a full round or more
    assert _flow_egress(reader, cabled) == [4]
    for t in placed:
        api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.2})
    assert api.call("DELETE", f"/v1/pins/{static['id']}")[0] == 200
    assert _flow_egress(reader, cabled) == []
    assert reader.wait_ledger(cabled, [])
    print(f"cable down: in the model after {detected * 1e3:.0f} ms, "
          f"groups and ranges rewritten after {groups_done * 1e3:.0f} ms")  # fmt: skip


def _transfers(api: Api) -> list[dict[str, Any]]:
    return list(api.call("GET", "/v1/fabric")[1]["transfers"])


def test_a_restarted_leaf_gets_its_ranges_and_ledger_again(
    cabled: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    """The audit takes a dead leaf's cables down: the other leaf's ranges towards it go
    (no live spine: ECMP) and its transfers with them; when the leaf is back, the ranges
    and both ledgers are what they were."""
    _, api = controllers.ready(cabled.path)
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["controller"]["audited"])
    out = [api.call("POST", "/v1/transfers", {**TRANSFER, "src": s})[1] for s in ("h11", "h12")]
    back = api.call("POST", "/v1/transfers", {"src": "h21", "dst": "h11", "bytes": 2_000_000})[1]
    assert [t["placement"] for t in (*out, back)] == ["pinned"] * 3
    assert reader.wait_ledger(cabled, [t["id"] for t in out])
    assert reader.wait_ledger(cabled, [back["id"]], leaf="leaf2")
    ranges = reader.ranges(cabled, "leaf2")

    cabled.kill("leaf1")
    for link in (LINK, "leaf1:4-spine2:1"):
        wait_for(lambda link=link: link_status(api, link) == "down", timeout=10)
    wait_for(lambda: reader.ranges(cabled, "leaf2") == {})  # no live spine to leaf1: ECMP
    assert {t["path"] for t in _transfers(api)} == {None}
    cabled.restart("leaf1")
    for link in (LINK, "leaf1:4-spine2:1"):
        wait_for(lambda link=link: link_status(api, link) == "up", timeout=10)
    wait_for(lambda: reader.ranges(cabled, "leaf2") == ranges, timeout=5)
    assert reader.wait_ledger(cabled, [t["id"] for t in out])
    assert reader.wait_ledger(cabled, [back["id"]], leaf="leaf2")
    assert None not in {t["path"] for t in _transfers(api)}  # pinned again by their ranges
    for t in (*out, back):
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200
    assert reader.wait_ledger(cabled, [])


def test_probes_forged_by_a_host_are_dropped(
    cabled: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    """6,000 probe frames from h11's port, claiming every cable end and every nonce a
    counter would have reached: none counts, no alert fires, every cable stays up."""
    _, api = controllers.ready(cabled.path)
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["controller"]["audited"])
    origins = [(3, 1), (3, 2), (4, 1), (4, 2), (1, 3), (1, 4), (2, 3), (2, 4), (9, 1)]
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    try:
        sock.bind((cabled.host_ends["h11"], 0))
        for n in range(6000):
            device, port = origins[n % len(origins)]
            nonce = 1 + (n // len(origins)) % 200  # what a round counter reaches in 20 s
            sock.send(probe_frame(0x080000000101, device, port, nonce))
            if n % 50 == 49:
                time.sleep(0.02)  # about 2,500 frames a second: the leaf punts them all
    finally:
        sock.close()

    def rejected() -> float:
        scrape = api.call("GET", "/metrics")[1]
        return metric(scrape, "kvfabric_probes_rejected_total", reason="host port") or 0

    wait_for(lambda: rejected() >= 1000, timeout=10)
    time.sleep(0.5)  # a few more audit rounds judge whatever the forgeries did
    view = api.call("GET", "/v1/fabric")[1]
    assert {x["status"] for x in view["links"]} == {"up"}, view["links"]
    scrape = api.call("GET", "/metrics")[1]
    for name in ("unexpected_wiring", "link_miswired", "link_down"):
        assert metric(scrape, "kvfabric_alerts_total", name=name, severity="critical") is None
        assert metric(scrape, "kvfabric_alerts_total", name=name, severity="warning") is None
    print(f"forged probes: {rejected():.0f} of 6000 punted and dropped as from a host port")
