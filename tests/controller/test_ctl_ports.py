"""The engine's ports entry point with a fake clock: speeds, carriers, unknown ports.

``Engine.port_states(reading, now)`` is what a switch's gNMI report becomes (the
service's reader and the simulator build the same reading). The 2 x 2 fabric at
20 Mb/s: leaf1 -> leaf2 goes up leaf1:3 (spine1) or leaf1:4 (spine2) and down
spine1:2 or spine2:2.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from controller.config import FabricConfig
from controller.config.generate import leaf_spine
from controller.engine import (
    Alert,
    CapacityChanged,
    LinkStatusChanged,
    LogRecord,
    PortStates,
    PortStatus,
    Update,
    fabric_view,
)
from controller.topology import LinkId, LinkStatus, PortRef
from tests.controller.ctl_harness import MB, FakeClockEngine, settings
from tests.controller.test_ctl_liveness import probe_round

CABLE = LinkId(PortRef("leaf1", 3), PortRef("spine1", 1))
UP = PortStatus(20 * MB, True)


def report(switch: str, ports: dict[int, PortStatus] | None = None, n: int = 4) -> PortStates:
    """Every port of ``switch`` (1..n) up at 20 Mb/s, but those given."""
    return PortStates(switch, {p: (ports or {}).get(p, UP) for p in range(1, n + 1)})


def of(updates: list[Update], kind: type) -> list:  # type: ignore[type-arg]
    return [u for u in updates if isinstance(u, kind)]


def fired(updates: list[Update], name: str) -> list[tuple[str, bool]]:
    return [(a.subject, a.firing) for a in of(updates, Alert) if a.name == name]


@pytest.fixture
def f() -> FakeClockEngine:
    fab = FakeClockEngine(controller=settings(selection={"max_slices": 1}))
    fab.warm()
    return fab


def test_a_port_at_the_speed_of_the_file_changes_nothing(f: FakeClockEngine) -> None:
    updates = f.engine.port_states(report("leaf1"), f.now)
    assert not of(updates, CapacityChanged) and not of(updates, LinkStatusChanged)
    assert not [a for a in of(updates, Alert) if a.firing]
    assert [r.fields["port"] for r in of(updates, LogRecord)] == [f"leaf1:{p}" for p in range(1, 5)]
    assert f.engine.port_states(report("leaf1"), f.now) == []  # nothing new the second time


def test_a_reprovisioned_cable_is_used_at_its_new_capacity(f: FakeClockEngine) -> None:
    f.set_load("leaf1:3", 0.5)  # 10 Mb/s of background up each spine
    f.set_load("leaf1:4", 0.5)
    f.warm()
    engine, table = f.engine, f.engine.table
    i = table.index[PortRef("leaf1", 3)]
    assert engine.fluid.avail is table.avail_bps  # the fluid picture reads the same list
    state = table.state[i]
    assert state is not None
    background = state.bg_util * 20 * MB
    updates = engine.port_states(report("leaf1", {3: PortStatus(80 * MB, True, "l1-eth3")}), f.now)
    assert of(updates, CapacityChanged) == [CapacityChanged(PortRef("leaf1", 3), 80 * MB, 20 * MB)]
    assert fired(updates, "capacity_mismatch") == [("leaf1:3", True)]
    [record] = [r for r in of(updates, LogRecord) if r.event == "capacity"]
    assert record.fields["was_bps"] == 20 * MB and record.fields["file_capacity_bps"] == 20 * MB
    # the background keeps its bit/s (smoothed towards 10 Mb/s): a quarter of the share
    assert table.capacity[i] == table.arrays.capacity[i] == 80 * MB
    assert table.avail_bps[i] == pytest.approx(80 * MB - background)
    after = table.state[i]
    assert after is not None and after.bg_util == pytest.approx(background / (80 * MB))
    assert table.arrays.avail[i] == table.avail_bps[i]
    assert engine.topology.egress[PortRef("leaf1", 3)].capacity_bps == 80 * MB
    assert engine.topology.config.links[0].capacity_bps == 20 * MB  # the file's, untouched
    # and its far end: spine1's downlink to leaf2 re-provisioned too; spine1 is now best
    engine.port_states(report("spine1", {2: PortStatus(80 * MB, True)}, n=2), f.now)
    decision = f.decide("h11", "h21", 2 * MB)
    assert f.spine(decision) == "spine1"
    assert decision.expected_s == pytest.approx(2 * MB * 8 / (80 * MB - background), rel=0.05)
    ports: Any = fabric_view(engine, f.now)["ports"]
    port = next(p for p in ports if p["port"] == "leaf1:3")
    assert (port["capacity_bps"], port["file_capacity_bps"], port["speed_bps"]) == (
        80 * MB, 20 * MB, 80 * MB,
    )  # fmt: skip
    assert port["oper_status"] == "up"
    # back at the file's speed: the alert stops
    updates = engine.port_states(report("leaf1"), f.now)
    assert of(updates, CapacityChanged) == [CapacityChanged(PortRef("leaf1", 3), 20 * MB, 80 * MB)]
    assert fired(updates, "capacity_mismatch") == [("leaf1:3", False)]


def test_an_unknown_speed_keeps_the_capacity_in_force(f: FakeClockEngine) -> None:
    f.engine.port_states(report("leaf1", {3: PortStatus(80 * MB, True)}), f.now)
    updates = f.engine.port_states(report("leaf1", {3: PortStatus(None, True)}), f.now)
    assert not of(updates, CapacityChanged)
    assert f.engine.topology.egress[PortRef("leaf1", 3)].capacity_bps == 80 * MB


def test_a_port_down_takes_its_cable_down_at_once_and_back(f: FakeClockEngine) -> None:
    down = f.engine.port_states(report("leaf1", {3: PortStatus(None, False)}), f.now)
    [change] = of(down, LinkStatusChanged)
    assert (change.link, change.status) == (CABLE, LinkStatus.DOWN)
    assert "leaf1:3 reports its link down" in change.detail
    assert fired(down, "port_down") == [("leaf1:3", True)]
    assert fired(down, "link_down") == [(str(CABLE), True)]
    assert all(f.spine(f.decide("h11", "h21")) == "spine2" for _ in range(3))
    # an audit round whose probes cross the cable does not bring it back while its
    # port says the link is down
    f.poll()
    assert not of(f.engine.audit(probe_round(f), f.now), LinkStatusChanged)
    assert f.engine.topology.link_status(CABLE) is LinkStatus.DOWN
    up = f.engine.port_states(report("leaf1"), f.now)
    assert [(c.link, c.status) for c in of(up, LinkStatusChanged)] == [(CABLE, LinkStatus.UP)]
    assert fired(up, "port_down") == [("leaf1:3", False)]


def test_a_port_back_up_leaves_the_cable_to_the_probes(f: FakeClockEngine) -> None:
    f.engine.port_states(report("spine1", {1: PortStatus(None, False)}, n=2), f.now)
    for _ in range(3):  # the probes across it are lost meanwhile: judged down too
        f.poll()
        f.engine.audit(probe_round(f, dead=("leaf1:3", "spine1:1")), f.now)
    up = f.engine.port_states(report("spine1", n=2), f.now)
    assert not of(up, LinkStatusChanged)  # its probes have not come back yet
    f.poll()
    back = f.engine.audit(probe_round(f), f.now)
    assert [(c.link, c.status) for c in of(back, LinkStatusChanged)] == [(CABLE, LinkStatus.UP)]


def test_a_port_the_file_does_not_know_is_an_alert_and_no_path(f: FakeClockEngine) -> None:
    paths = f.engine.topology.spine_paths("leaf1", "leaf2")
    new = PortStatus(400 * MB, True, "l1-eth7")
    spare = PortStatus(None, False)
    updates = f.engine.port_states(report("leaf1", {5: spare, 6: spare, 7: new}, n=7), f.now)
    [(subject, firing)] = fired(updates, "port_unknown")
    assert (subject, firing) == ("leaf1:7", True)
    [alert] = [a for a in of(updates, Alert) if a.name == "port_unknown"]
    assert "wires nothing to it" in alert.message and "400Mbps" in alert.message
    assert f.engine.topology.spine_paths("leaf1", "leaf2") == paths
    view = fabric_view(f.engine, f.now)
    assert view["unmodelled_ports"] == [
        {"port": "leaf1:7", "name": "l1-eth7", "speed_bps": 400 * MB, "oper_status": "up"}
    ]
    # ports 5 and 6 are down: unused ports, no alert; port 7 going down ends it
    gone = f.engine.port_states(report("leaf1", dict.fromkeys((5, 6, 7), spare), n=7), f.now)
    assert fired(gone, "port_unknown") == [("leaf1:7", False)]
    assert fabric_view(f.engine, f.now)["unmodelled_ports"] == []


def test_a_port_the_switch_does_not_report(f: FakeClockEngine) -> None:
    updates = f.engine.port_states(report("leaf1", n=3), f.now)
    assert fired(updates, "port_unreported") == [("leaf1:4", True)]
    [alert] = [a for a in of(updates, Alert) if a.name == "port_unreported"]
    assert "wires leaf1:4 (to spine2)" in alert.message
    assert not of(updates, LinkStatusChanged)  # no evidence about the cable itself
    assert fired(f.engine.port_states(report("leaf1"), f.now), "port_unreported") == [
        ("leaf1:4", False)
    ]


def test_one_faster_uplink_keeps_the_racks_transfers_split() -> None:
    # a 80 Mb/s NIC over 20 Mb/s uplinks: 4 slices. leaf1's uplink to spine1 re-provisioned
    # at 80 Mb/s still leads to spine1's 20 Mb/s downlink, and the other uplink is still
    # 20 Mb/s: a transfer alone is still split over both spines (counted by its fastest
    # uplink, it would get 1 slice and a quarter of its NIC)
    fab = FakeClockEngine(config=_fast_nics())
    fab.warm()
    fab.engine.port_states(report("leaf1", {3: PortStatus(80 * MB, True)}), fab.now)
    decision = fab.decide("h11", "h21", 8 * MB)
    assert len(decision.slices) == 2  # both spines (one path each): 2 slices, not 1


def _fast_nics() -> FabricConfig:
    config = leaf_spine(2, 2, 2, link_bps=20 * MB)
    return replace(config, hosts=tuple(replace(h, capacity_bps=80 * MB) for h in config.hosts))
