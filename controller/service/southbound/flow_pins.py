"""Flow pins on the leaves: their ``flow_pin`` entries, written, removed and synced.

The engine decides flow pins (:mod:`controller.engine.flow_pins`); this module is
their I/O. :class:`FlowPinWriter` turns ``InstallFlowPin``/``RemoveFlowPin`` into
``flow_pin`` writes on the pin's source leaf, with the metadata scheme of transfer
pins (:class:`~controller.service.southbound.pins.PinMeta`, ``kind`` ``"flow"``), and books what
it wrote. :func:`sync_flow_pins` runs when a leaf (re)connects, with the entries read
back from it:

- an entry of a 5-tuple the engine pins on that leaf is the engine's: rewritten if
  its port or metadata differ (a pin moved while the leaf was away, or a foreign
  entry of that 5-tuple);
- an entry whose metadata is not a flow pin's (foreign, or a transfer's), or names
  a pin this controller removed or holds elsewhere (on ECMP), is deleted;
- any other is a flow pin an earlier controller wrote: adopted into the engine
  (``Engine.adopt_flow_pin``), which may move it at once if its cable is down; one
  the engine refuses (unknown hosts, a duplicate) is deleted;
- the engine's pins the leaf does not hold (it restarted) are written back.

So a restarted controller, or a backup taking over, keeps every flow pin with its
id (``DELETE /v1/pins/{id}`` still works) and writes no duplicate.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Any

from controller.engine import Engine, EngineError, FlowPin, FlowTuple, Update
from controller.errors import SwitchError
from controller.service.metrics import Metrics
from controller.service.southbound import intent
from controller.service.southbound.pins import PinMeta
from controller.service.southbound.switches import SwitchLink

log = logging.getLogger("kvfabric.controller")

FLOW_KIND = "flow"
"""``PinMeta.kind`` of a flow pin's entry."""

EntryKey = tuple[str, IPv4Address, IPv4Address, int, int, int]
"""(leaf, source, destination, protocol, source port, destination port)."""


@dataclass(frozen=True, slots=True)
class Written:
    """A flow pin as its leaf holds it: the pin and the metadata written with it."""

    pin: FlowPin
    meta: PinMeta


def key_of(pin: FlowPin) -> EntryKey:
    """Where a flow pin's entry lives and what it matches."""
    f = pin.flow
    return (pin.leaf, pin.src_ipv4, pin.dst_ipv4, f.protocol, f.src_port, f.dst_port)


def entry_key(leaf: str, entry: Any) -> EntryKey:
    """The key of a ``flow_pin`` entry read back from ``leaf``."""
    m = entry.match
    return (
        leaf,
        IPv4Address(int(m["src_addr"])),
        IPv4Address(int(m["dst_addr"])),
        int(m["protocol"]),
        int(m["l4_src_port"]),
        int(m["l4_dst_port"]),
    )


def _entry(pin: FlowPin, port: int, meta: bytes) -> Any:
    f = pin.flow
    ports = (f.src_port, f.dst_port)
    return intent.flow_pin_entry(
        pin.src_ipv4, pin.dst_ipv4, f.protocol, ports, port=port, meta=meta
    )


class FlowPinWriter:
    """Writes and removes flow pins' entries, and books what each leaf holds."""

    def __init__(
        self, links: Mapping[str, SwitchLink], metrics: Metrics, wall: Callable[[], float]
    ) -> None:
        self.links = links
        self.metrics = metrics
        self.wall = wall
        self.written: dict[str, Written] = {}
        self.removed: deque[str] = deque(maxlen=10_000)

    def meta_of(self, pin: FlowPin) -> PinMeta:
        """The metadata of ``pin``'s entry (its first write's time is kept)."""
        known = self.written.get(pin.pin_id)
        requested_wall = known.meta.requested_wall if known is not None else self.wall()
        f = pin.flow
        return PinMeta(
            id=pin.pin_id,
            trace_id="",
            src=f.src,
            dst=f.dst,
            size=0,
            requested_wall=round(requested_wall, 3),
            deadline_wall=0.0,
            spine=pin.spine or "",
            kind=FLOW_KIND,
            requested=pin.requested,
        )

    async def write(self, pin: FlowPin) -> bool:
        """Insert or overwrite ``pin``'s entry and book it; False (logged) if refused."""
        assert pin.egress_port is not None, "a pin on ECMP has no entry"
        meta = self.meta_of(pin)
        entry = _entry(pin, pin.egress_port, meta.encode())
        link = self.links[pin.leaf]
        op = "modify" if pin.pin_id in self.written else "insert"
        try:
            try:
                await link.write(op, [entry])
            except SwitchError as exc:
                retry = {"insert": "ALREADY_EXISTS", "modify": "NOT_FOUND"}[op]
                if retry not in str(exc):
                    raise
                op = "modify" if op == "insert" else "insert"
                await link.write(op, [entry])
        except SwitchError as exc:
            self.metrics.pin_writes.labels(op, "error").inc()
            self.metrics.write_errors.labels(pin.leaf, "flow_pin").inc()
            log.warning("flow pin %s (%s) not written: %s", pin.pin_id, pin.flow, exc)
            return False
        self.metrics.pin_writes.labels(op, "ok").inc()
        self.written[pin.pin_id] = Written(pin, meta)
        return True

    async def remove(self, pin: FlowPin) -> bool:
        """Delete ``pin``'s entry; it leaves the book even if the leaf is unreachable.

        Its id is remembered, so that an entry the leaf still holds when it comes
        back is deleted rather than adopted.
        """
        self.written.pop(pin.pin_id, None)
        self.removed.append(pin.pin_id)
        try:
            await self.links[pin.leaf].write("delete", [_entry(pin, 0, b"")])
        except SwitchError as exc:
            self.metrics.pin_writes.labels("delete", "error").inc()
            self.metrics.write_errors.labels(pin.leaf, "flow_pin").inc()
            log.warning("flow pin %s not removed: %s", pin.pin_id, exc)
            return False
        self.metrics.pin_writes.labels("delete", "ok").inc()
        return True

    def adopted(self, pin: FlowPin, meta: PinMeta) -> None:
        """Book an entry found on a leaf as written."""
        self.written[pin.pin_id] = Written(pin, meta)


async def sync_flow_pins(
    link: SwitchLink, entries: Iterable[Any], writer: FlowPinWriter, engine: Engine, now: float
) -> tuple[list[Update], int]:
    """Make a (re)connected leaf hold the engine's flow pins (see the module docstring).

    Returns the engine's updates of the pins it adopted (moves off dead cables) for
    the caller to apply, and how many pins were adopted.
    """
    wanted = {key_of(p): p for p in engine.flow_pins_on(link.name)}
    stale: list[Any] = []
    updates: list[Update] = []
    adopted = 0
    removed = set(writer.removed)
    for entry in entries:
        key = entry_key(link.name, entry)
        meta = PinMeta.decode(bytes(entry.metadata))
        mine = wanted.pop(key, None)
        if mine is not None:
            want = writer.meta_of(mine)
            if int(entry.action.args["port"]) != mine.egress_port or meta != want:
                await writer.write(mine)
            else:
                writer.adopted(mine, want)
            continue
        if (
            meta is None
            or meta.kind != FLOW_KIND
            or meta.id in removed
            or engine.flow_pin(meta.id) is not None
        ):
            stale.append(entry)
            continue
        adoption = _adopt(engine, key, meta, now)
        if adoption is None:
            stale.append(entry)
            continue
        pin, moves = adoption
        writer.adopted(pin, meta)
        updates += moves
        adopted += 1
        log.info("%s: adopted flow pin %s (%s) on %s", link.name, pin.pin_id, pin.flow, meta.spine)
    if stale:
        await link.write("delete", stale)
    for pin in wanted.values():  # the leaf lost them (it restarted): write them back
        await writer.write(pin)
    return updates, adopted


def _adopt(
    engine: Engine, key: EntryKey, meta: PinMeta, now: float
) -> tuple[FlowPin, list[Update]] | None:
    """The engine's adoption of a found entry, or None when it makes no sense here."""
    leaf, src, dst, protocol, src_port, dst_port = key
    hosts = engine.topology.hosts
    if meta.src not in hosts or meta.dst not in hosts:
        return None
    if (hosts[meta.src].ipv4, hosts[meta.dst].ipv4, hosts[meta.src].leaf) != (src, dst, leaf):
        return None
    flow = FlowTuple(meta.src, meta.dst, protocol, src_port, dst_port)
    try:
        return engine.adopt_flow_pin(meta.id, flow, meta.requested or meta.spine, meta.spine, now)
    except EngineError as exc:
        log.info("%s: flow pin %s not adopted: %s", leaf, meta.id, exc)
        return None
