"""What a (re)connected leaf's ``flow_pin`` entries become: kept, adopted, deleted, rewritten.

The entries are encoded with the real P4Info and decoded back, as a Read returns them;
the leaf is a recorder of writes (the real-switch side is test_flow_pins_p4rt.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import finsy as fy
import pytest
from finsy.p4schema import P4Schema

from controller.config import parse_config
from controller.engine import Engine, FlowTuple, InstallFlowPin, RemoveFlowPin
from controller.service.metrics import Metrics
from controller.service.southbound import intent
from controller.service.southbound.flow_pins import FlowPinWriter, sync_flow_pins
from controller.service.southbound.pins import PinMeta
from controller.topology import LinkId, LinkStatus, PortRef, Topology

FABRIC = Path(__file__).resolve().parents[2] / "topologies" / "lab-2x2.yaml"
BG = FlowTuple("h11", "h21", 6, 35000, 5201)


class Leaf:
    """A switch link that records what is written to it."""

    name = "leaf1"

    def __init__(self) -> None:
        self.writes: list[tuple[str, Any]] = []

    async def write(self, op: str, entities: list[Any]) -> None:
        self.writes += [(op, e) for e in entities]


@pytest.fixture
def topology() -> Topology:
    return Topology(parse_config(FABRIC.read_text(), str(FABRIC)))


@pytest.fixture(scope="module")
def schema(pipeline: tuple[Path, Path]) -> P4Schema:
    return P4Schema(pipeline[0])


def found(schema: P4Schema, topology: Topology, flow: FlowTuple, port: int, meta: bytes) -> Any:
    """A ``flow_pin`` entry as a Read brings it back."""
    src, dst = topology.hosts[flow.src].ipv4, topology.hosts[flow.dst].ipv4
    ports = (flow.src_port, flow.dst_port)
    entry = intent.flow_pin_entry(src, dst, flow.protocol, ports, port=port, meta=meta)
    return fy.P4TableEntry.decode(entry.encode(schema), schema)


def flow_meta(pin_id: str, spine: str = "spine2", **changes: Any) -> bytes:
    fields: dict[str, Any] = dict(
        id=pin_id, trace_id="", src="h11", dst="h21", size=0, requested_wall=1.0,
        deadline_wall=0.0, spine=spine, kind="flow", requested=spine,
    )  # fmt: skip
    fields.update(changes)
    return PinMeta(**fields).encode()


def parts(topology: Topology) -> tuple[Engine, Leaf, FlowPinWriter]:
    """An engine, leaf1 (recording what is written to it) and the flow pins' writer."""
    engine = Engine(topology, 0.0)
    leaf = Leaf()
    writer = FlowPinWriter({"leaf1": leaf}, Metrics(), lambda: 5.0)  # type: ignore[dict-item]
    return engine, leaf, writer


def sync(leaf: Leaf, entries: list[Any], writer: FlowPinWriter, engine: Engine) -> Any:
    return asyncio.run(sync_flow_pins(leaf, entries, writer, engine, 0.0))  # type: ignore[arg-type]


def test_foreign_removed_and_senseless_entries_are_deleted_and_ours_adopted(
    topology: Topology, schema: P4Schema
) -> None:
    engine, leaf, writer = parts(topology)
    writer.removed.append("gone-pin1")
    transfer = PinMeta("t-1", "tr", "h11", "h21", 10, 1.0, 9e9, "spine1").encode()

    def other(port: int) -> FlowTuple:
        return FlowTuple("h11", "h21", 17, port, 9)

    entries = [
        found(schema, topology, other(1), 3, b"not ours"),
        found(schema, topology, other(2), 3, transfer),
        found(schema, topology, other(3), 3, flow_meta("gone-pin1")),
        found(schema, topology, other(4), 3, flow_meta("x-pin1", src="h12")),  # wrong host
        found(schema, topology, other(5), 3, flow_meta("x-pin2", spine="spine7")),
        found(schema, topology, BG, 4, flow_meta("old-pin1")),
    ]
    updates, adopted = sync(leaf, entries, writer, engine)
    assert adopted == 1
    assert [(u.event, u.fields["action"]) for u in updates] == [("flow_pin", "adopt")]
    deleted = [e.match["l4_src_port"] for op, e in leaf.writes if op == "delete"]
    assert deleted == [1, 2, 3, 4, 5]
    assert [op for op, _ in leaf.writes] == ["delete"] * 5
    pin = engine.flow_pins.by_id["old-pin1"]
    assert (pin.flow, pin.spine, pin.requested) == (BG, "spine2", "spine2")
    assert writer.written["old-pin1"].meta == PinMeta.decode(flow_meta("old-pin1"))

    # the same entries again (a second reconnection): ours is kept as it is, no write
    leaf.writes.clear()
    assert sync(leaf, entries[-1:], writer, engine) == ([], 0)
    assert leaf.writes == []


def test_a_leaf_that_lost_its_pins_gets_them_back_and_moved_ones_are_rewritten(
    topology: Topology, schema: P4Schema
) -> None:
    engine, leaf, writer = parts(topology)
    pin, _ = engine.pin_flow("me-pin1", BG, "spine1", 0.0)
    assert sync(leaf, [], writer, engine) == ([], 0)
    [(op, entry)] = leaf.writes
    assert (op, entry.action.args["port"], PinMeta.decode(entry.metadata)) == (
        "insert", 3, writer.meta_of(pin),
    )  # fmt: skip
    # found on spine2 (it moved while the leaf was away): rewritten to the engine's spine1
    leaf.writes.clear()
    stale = found(schema, topology, BG, 4, writer.meta_of(pin).encode())
    assert sync(leaf, [stale], writer, engine) == ([], 0)
    [(op, entry)] = leaf.writes
    assert (op, entry.action.args["port"]) == ("modify", 3)


def test_an_adopted_pin_across_a_dead_cable_moves_at_once(
    topology: Topology, schema: P4Schema
) -> None:
    engine = Engine(topology, 0.0)
    down = LinkId(PortRef("leaf1", 4), PortRef("spine2", 1))
    engine.topology = engine.topology.with_link_status(down, LinkStatus.DOWN)
    leaf = Leaf()
    writer = FlowPinWriter({"leaf1": leaf}, Metrics(), lambda: 5.0)  # type: ignore[dict-item]
    updates, adopted = sync(leaf, [found(schema, topology, BG, 4, flow_meta("old-pin1"))],
                            writer, engine)  # fmt: skip
    assert adopted == 1
    [move] = [u for u in updates if isinstance(u, InstallFlowPin | RemoveFlowPin)]
    assert isinstance(move, InstallFlowPin)
    assert (move.pin.pin_id, move.pin.spine, move.pin.egress_port) == ("old-pin1", "spine1", 3)
