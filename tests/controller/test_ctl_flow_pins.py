"""Flow pins of flows in the engine: validation, release, adoption, evacuation."""

from __future__ import annotations

import pytest

from controller.config import Mode
from controller.engine import (
    DuplicatePinError,
    EngineError,
    FlowPin,
    FlowTuple,
    InstallFlowPin,
    LinkStatusChanged,
    PathDownError,
    RemoveFlowPin,
    TransferMoved,
    UnknownHostError,
    UnknownPinError,
    Update,
)
from controller.topology import LinkStatus
from tests.controller.ctl_harness import FakeClockEngine, settings
from tests.controller.test_ctl_safety import probe_round

NO_SMOOTHING = settings(telemetry={"smoothing_s": 0.0})
BG = FlowTuple("h11", "h21", 6, 35000, 5201)


def three_spines(*loads: float) -> FakeClockEngine:
    """leaf1 -> leaf2 over spine1..3, each path's two ports at the given utilisation."""
    f = FakeClockEngine(spines=3, controller=NO_SMOOTHING)
    for k, util in enumerate(loads, start=1):
        f.set_load(f"leaf1:{k + 2}", util)
        f.set_load(f"spine{k}:2", util)
    f.warm()
    return f


def flow_pins(updates: list[Update]) -> list[InstallFlowPin | RemoveFlowPin]:
    return [u for u in updates if isinstance(u, InstallFlowPin | RemoveFlowPin)]


def take_down(f: FakeClockEngine, *ports: str) -> list[Update]:
    """Two audit rounds in which the probes out of ``ports`` vanish (a verdict)."""
    f.engine.audit(probe_round(f, dead=ports), f.now)
    f.poll()
    return f.engine.audit(probe_round(f, dead=ports), f.now)


def test_a_pin_is_written_on_the_source_leaf_towards_its_spine() -> None:
    f = three_spines(0.1, 0.2, 0.3)
    inflight = list(f.engine.table.inflight)
    pin, updates = f.engine.pin_flow("p1", BG, "spine2", f.now)
    (install,) = flow_pins(updates)
    assert install == InstallFlowPin(pin)
    assert (pin.leaf, pin.spine, pin.egress_port, str(pin.src_ipv4)) == (
        "leaf1",
        "spine2",
        4,
        str(f.topology.hosts["h11"].ipv4),
    )
    assert pin.as_dict()["placement"] == "pinned"
    # background stays background: nothing is counted as the engine's own bytes
    assert f.engine.table.inflight == inflight
    assert f.engine.flow_pins.by_id == {"p1": pin}


@pytest.mark.parametrize(
    ("flow", "spine", "error", "says"),
    [
        (FlowTuple("h99", "h21", 6, 1, 2), "spine1", UnknownHostError, "h99"),
        (FlowTuple("h11", "h12", 6, 1, 2), "spine1", EngineError, "crosses no spine"),
        (FlowTuple("h11", "h11", 6, 1, 2), "spine1", EngineError, "both 'h11'"),
        (FlowTuple("h11", "h21", 6, 1, 2), "spine9", EngineError, "not on a path"),
        (FlowTuple("h11", "h21", 300, 1, 2), "spine1", EngineError, "protocol"),
        (FlowTuple("h11", "h21", 6, 1, 70000), "spine1", EngineError, "dst_port"),
        (BG, "spine1", DuplicatePinError, "already pinned by 'p1'"),
    ],
)
def test_a_refused_pin_changes_nothing(
    flow: FlowTuple, spine: str, error: type[Exception], says: str
) -> None:
    f = three_spines(0.1, 0.2, 0.3)
    pin, _ = f.engine.pin_flow("p1", BG, "spine2", f.now)
    with pytest.raises(error, match=says) as caught:
        f.engine.pin_flow("p2", flow, spine, f.now)
    assert not isinstance(caught.value, PathDownError)
    assert f.engine.flow_pins.by_id == {"p1": pin}
    assert set(f.engine.flow_pins.by_flow) == {BG}


def test_a_spine_behind_a_dead_cable_is_a_path_down_error() -> None:
    f = three_spines(0.1, 0.2, 0.3)
    take_down(f, "spine2:1")
    with pytest.raises(PathDownError, match="leaf1:4-spine2:1 is not up"):
        f.engine.pin_flow("p1", BG, "spine2", f.now)
    assert len(f.engine.flow_pins) == 0


def test_unpin_removes_the_entry_once() -> None:
    f = three_spines(0.1, 0.2, 0.3)
    pin, _ = f.engine.pin_flow("p1", BG, "spine2", f.now)
    assert flow_pins(f.engine.unpin_flow("p1", f.now)) == [RemoveFlowPin(pin)]
    with pytest.raises(UnknownPinError, match="no flow pin 'p1'"):
        f.engine.unpin_flow("p1", f.now)
    # the 5-tuple is free again
    f.engine.pin_flow("p2", BG, "spine1", f.now)


def test_pins_hold_in_every_mode() -> None:
    f = three_spines(0.1, 0.2, 0.3)
    f.engine.pin_flow("p1", BG, "spine2", f.now)
    for mode in (Mode.ECMP, Mode.FLOWLET, Mode.KV_AWARE):
        assert flow_pins(f.engine.set_mode(mode, f.now)) == []
    assert f.engine.flow_pins.by_id["p1"].spine == "spine2"


def test_a_dead_cable_moves_a_pin_to_the_live_spine_with_most_capacity_left() -> None:
    f = three_spines(0.1, 0.7, 0.2)
    d = f.decide("h12", "h22")
    assert f.spine(d) == "spine1"
    f.engine.pin_flow("p1", BG, "spine1", f.now)
    f.engine.pin_flow("p2", FlowTuple("h11", "h21", 17, 7000, 7001), "spine2", f.now)
    updates = take_down(f, "spine1:1")
    assert [(str(u.link), u.status) for u in updates if isinstance(u, LinkStatusChanged)] == [
        ("leaf1:3-spine1:1", LinkStatus.DOWN)
    ]
    (move,) = flow_pins(updates)
    assert isinstance(move, InstallFlowPin)
    # spine3 (80% left) beats spine2 (30% left); the pin on spine2 does not move
    assert (move.pin.pin_id, move.pin.spine, move.pin.egress_port) == ("p1", "spine3", 5)
    assert move.pin.requested == "spine1"
    assert move.pin.moved[0].startswith("leaf1>spine1>leaf2 -> leaf1>spine3>leaf2")
    assert f.engine.flow_pins.by_id["p2"].spine == "spine2"
    # the transfer on spine1 moved too, as before
    # (to spine2: its range's entry points at the first live spine)
    assert [u for u in updates if isinstance(u, TransferMoved)] == [
        TransferMoved(d.transfer_id, "spine2")
    ]


def test_with_no_live_spine_the_entry_goes_and_comes_back_with_a_cable() -> None:
    f = FakeClockEngine(controller=NO_SMOOTHING)
    for port in ("leaf1:3", "leaf1:4"):
        f.set_load(port, 0.6)
    f.warm()
    pin, _ = f.engine.pin_flow("p1", BG, "spine2", f.now)
    updates = take_down(f, "leaf1:3", "leaf1:4")
    assert flow_pins(updates) == [RemoveFlowPin(pin)]
    parked = f.engine.flow_pins.by_id["p1"]
    assert (parked.spine, parked.egress_port, parked.as_dict()["placement"]) == (None, None, "ecmp")
    # unpinning a pin without an entry deletes nothing
    assert flow_pins(f.engine.unpin_flow("p1", f.now)) == []
    # a pin found on the leaf across the dead cables: its entry is deleted at once
    again, found = f.engine.adopt_flow_pin("p3", BG, "spine2", "spine2", f.now)
    assert again.spine is None
    assert [type(u) for u in flow_pins(found)] == [RemoveFlowPin]
    back = f.engine.audit(probe_round(f, dead=("leaf1:3",)), f.now)
    (restored,) = flow_pins(back)
    assert isinstance(restored, InstallFlowPin)
    assert (restored.pin.pin_id, restored.pin.spine) == ("p3", "spine2")


def test_adopting_a_pin_found_on_a_leaf() -> None:
    f = three_spines(0.1, 0.2, 0.3)
    pin, updates = f.engine.adopt_flow_pin("old-pin1", BG, "spine1", "spine2", f.now)
    assert flow_pins(updates) == []
    assert isinstance(pin, FlowPin) and (pin.requested, pin.spine) == ("spine1", "spine2")
    with pytest.raises(DuplicatePinError):
        f.engine.adopt_flow_pin("old-pin2", BG, "spine1", "spine2", f.now)
    with pytest.raises(EngineError, match="not on a path"):
        f.engine.adopt_flow_pin("old-pin3", FlowTuple("h12", "h22", 6, 1, 2), "x", "x", f.now)
    assert flow_pins(f.engine.unpin_flow("old-pin1", f.now)) == [RemoveFlowPin(pin)]
