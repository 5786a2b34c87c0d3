"""Capacity learned from the switches: real switch processes on veths, a real controller.

Every port is provisioned at the file's 20 Mb/s. A gNMI Set re-provisions leaf1's
uplink to spine1 at 40 Mb/s: the running controller's model must show it within one
audit round (100 ms here), with the alert, the log line and the metrics; back at
20 Mb/s the alert stops. Taking the cable's veth down makes both its ports report
their link down, which the model shows as their oper-status and as the cable down.
leaf1 also has a port 9 the fabric file does not know (a cable to a spine the model
lacks): it is reported, alerted on, and no transfer goes there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from finsy.gnmiclient import GNMIClient
from finsy.gnmipath import GNMIPath

from tests.controller_service.harness import Api, RunningSwitches, link_status, metric, wait_for
from tests.support.controllers import Controllers
from tests.support.netns import VethPair, veth

pytestmark = pytest.mark.root

PORT = "leaf1:3"
LINK = "leaf1:3-spine1:1"


@pytest.fixture(scope="module")
def extra() -> Iterator[VethPair]:
    """The cable of leaf1's port 9, which the fabric file does not know."""
    with veth("kn") as pair:
        yield pair


@pytest.fixture(scope="module")
def cabled(tmp_path_factory: pytest.TempPathFactory, extra: VethPair) -> Iterator[RunningSwitches]:
    f = RunningSwitches(
        tmp_path_factory.mktemp("capacity"),
        veths=True,
        switch_args={"leaf1": ("-i", f"9@{extra.outside}")},
    )
    try:
        yield f.start()
    finally:
        f.close()


def port(api: Api, name: str) -> dict[str, Any]:
    view: dict[str, Any] = api.call("GET", "/v1/fabric")[1]
    return next(p for p in view["ports"] if p["port"] == name)


def alerts(api: Api, name: str) -> list[str]:
    view: dict[str, Any] = api.call("GET", "/v1/fabric")[1]
    return [a["subject"] for a in view["alerts"] if a["name"] == name]


def set_speed(fabric: RunningSwitches, switch: str, iface: str, bps: int | None) -> None:
    """Provision ``iface`` of ``switch`` at ``bps`` over gNMI (None: its default speed)."""
    leaf = GNMIPath(f"interfaces/interface[name={iface}]/ethernet/config/port-speed-bps")

    async def go() -> None:
        async with GNMIClient(fabric.switches[switch].address) as client:
            if bps is None:
                await client.set(delete=[leaf])
            else:
                await client.set(update=[(leaf, bps)])

    asyncio.run(go())


def test_a_reprovisioned_port_is_in_the_model_within_an_audit_round(
    cabled: RunningSwitches, controllers: Controllers
) -> None:
    c, api = controllers.ready(cabled.path)
    wait_for(lambda: port(api, PORT)["speed_bps"] == 20_000_000)
    assert port(api, PORT)["oper_status"] == "up"
    assert alerts(api, "capacity_mismatch") == []

    set_speed(cabled, "leaf1", cabled.cables["leaf1", "spine1"], 40_000_000)
    provisioned = time.monotonic()
    wait_for(lambda: port(api, PORT)["capacity_bps"] == 40_000_000, timeout=5, step=0.01)
    learned = time.monotonic() - provisioned
    assert learned < 0.5, learned  # one audit round is 100 ms; the stream pushes at once
    shown = port(api, PORT)
    assert (shown["file_capacity_bps"], shown["speed_bps"]) == (20_000_000, 40_000_000)
    assert alerts(api, "capacity_mismatch") == [PORT]
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_port_capacity_bps", port=PORT) == 40_000_000
    assert metric(scrape, "kvfabric_port_file_capacity_bps", port=PORT) == 20_000_000
    assert metric(scrape, "kvfabric_port_speed_bps", port=PORT) == 40_000_000
    assert metric(scrape, "kvfabric_capacity_changes_total", port=PORT) == 1.0
    assert metric(scrape, "kvfabric_alert_active", name="capacity_mismatch", subject=PORT) == 1.0
    assert (metric(scrape, "kvfabric_port_state_updates_total", switch="leaf1") or 0) >= 2
    log = c.log()
    assert "runs at 40Mbps; the fabric file says 20Mbps" in log, log
    assert "leaf1:3: capacity 40,000,000 bit/s (was 20,000,000)" in log, log

    set_speed(cabled, "leaf1", cabled.cables["leaf1", "spine1"], None)
    wait_for(lambda: port(api, PORT)["capacity_bps"] == 20_000_000, timeout=2, step=0.01)
    assert alerts(api, "capacity_mismatch") == []
    print(f"a re-provisioned port in the model after {learned * 1e3:.0f} ms")


def test_a_cable_taken_down_shows_its_ports_down(
    cabled: RunningSwitches, controllers: Controllers
) -> None:
    _c, api = controllers.ready(cabled.path, "--no-audit")  # the ports alone must say it
    wait_for(lambda: port(api, "spine1:1")["oper_status"] == "up")
    cabled.set_cable("leaf1", "spine1", up=False)
    try:
        wait_for(lambda: port(api, PORT)["oper_status"] == "down", timeout=2, step=0.01)
        wait_for(lambda: port(api, "spine1:1")["oper_status"] == "down", timeout=2, step=0.01)
        assert link_status(api, LINK) == "down"
        assert sorted(alerts(api, "port_down")) == [PORT, "spine1:1"]
        scrape = api.call("GET", "/metrics")[1]
        assert metric(scrape, "kvfabric_port_oper_up", port=PORT) == 0.0
        assert metric(scrape, "kvfabric_port_oper_up", port="leaf1:4") == 1.0
    finally:
        cabled.set_cable("leaf1", "spine1", up=True)
    wait_for(lambda: port(api, PORT)["oper_status"] == "up", timeout=2, step=0.01)
    wait_for(lambda: link_status(api, LINK) == "up", timeout=2, step=0.01)
    assert alerts(api, "port_down") == []


def test_a_port_the_file_does_not_know_is_reported_and_left_alone(
    cabled: RunningSwitches, controllers: Controllers, extra: VethPair
) -> None:
    _c, api = controllers.ready(cabled.path, "--no-audit")
    unknown = [{"port": "leaf1:9", "name": extra.outside, "speed_bps": 20_000_000,
                "oper_status": "up"}]  # fmt: skip
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["unmodelled_ports"] == unknown)
    assert alerts(api, "port_unknown") == ["leaf1:9"]
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_port_unmodelled", port="leaf1:9") == 1.0
    for _ in range(4):
        status, t = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h21", "bytes": 10**6})
        assert status == 201 and {s["spine"] for s in t["slices"]} <= {"spine1", "spine2"}
