"""Flow pins of flows: one flow, of any class, held on a spine in every mode.

An operator (or the lab, for its background traffic) pins a flow by its whole
5-tuple to a spine; the data plane's ``flow_pin`` table sends it up the uplink to
that spine whatever the mode, after the KV transfers' own pins (p4/README.md). The
flow keeps its class, so the engine keeps seeing a pinned background flow as
background in the counters: a flow pin adds nothing to the load table.

The engine validates a pin like a forced transfer (hosts known, not one rack, the
spine on a path between them, its cables up) and refuses a second pin of the same
5-tuple. When the audit takes a cable down under a pin, the pin moves to the live
spine (both cables up) with the most capacity left, the larger of the paths'
bottleneck ``avail_bps``, as transfers are moved; with no live spine its entry is
removed and the flow takes ECMP until a cable comes back, when it returns to its
requested spine if that is live again, else to the best live one.

:class:`FlowPins` is the book (by id and by 5-tuple); the functions here decide
and return the updates, and :class:`~controller.engine.core.Engine` wires them to
its topology and load table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from ipaddress import IPv4Address

from controller.engine.loads import LoadTable
from controller.engine.selection import PathIndex
from controller.errors import DuplicatePinError, UnknownPinError
from controller.topology import LinkId, SpinePath

PROTOCOLS = {"tcp": 6, "udp": 17}
"""Protocol names a request may use, and their IPv4 protocol numbers."""


@dataclass(frozen=True, slots=True)
class FlowTuple:
    """A flow's 5-tuple, with its hosts by name (the protocol is the IPv4 number)."""

    src: str
    dst: str
    protocol: int
    src_port: int
    dst_port: int

    def __str__(self) -> str:
        return f"{self.src}:{self.src_port}>{self.dst}:{self.dst_port}/{self.protocol}"


@dataclass(frozen=True, slots=True)
class FlowPin:
    """A flow pin: its flow, where its entry lives, and the path it holds now.

    ``path`` is None while no spine is live (no entry on the leaf: ECMP).
    """

    pin_id: str
    flow: FlowTuple
    leaf: str
    src_ipv4: IPv4Address
    dst_ipv4: IPv4Address
    requested: str
    path: SpinePath | None
    moved: tuple[str, ...] = ()

    @property
    def spine(self) -> str | None:
        """The spine the flow is held on, or None (ECMP)."""
        return self.path.spine if self.path is not None else None

    @property
    def egress_port(self) -> int | None:
        """The leaf's uplink the entry sends the flow out of, or None (no entry)."""
        return self.path.up.port if self.path is not None else None

    def as_dict(self) -> dict[str, object]:
        """The pin as the API shows it."""
        f = self.flow
        return {
            "id": self.pin_id,
            "src": f.src,
            "dst": f.dst,
            "protocol": f.protocol,
            "src_port": f.src_port,
            "dst_port": f.dst_port,
            "leaf": self.leaf,
            "requested_spine": self.requested,
            "spine": self.spine,
            "path": str(self.path) if self.path is not None else None,
            "port": self.egress_port,
            "placement": "pinned" if self.path is not None else "ecmp",
            "moved": list(self.moved),
        }


@dataclass(frozen=True, slots=True)
class InstallFlowPin:
    """Write (or overwrite) a flow pin's ``flow_pin`` entry: ``pin.path`` is set."""

    pin: FlowPin


@dataclass(frozen=True, slots=True)
class RemoveFlowPin:
    """Delete a flow pin's ``flow_pin`` entry from its leaf (the flow takes ECMP)."""

    pin: FlowPin


class FlowPins:
    """The flow pins the engine holds, by id and by 5-tuple."""

    def __init__(self) -> None:
        self.by_id: dict[str, FlowPin] = {}
        self.by_flow: dict[FlowTuple, str] = {}

    def __len__(self) -> int:
        return len(self.by_id)

    def check_new(self, pin_id: str, flow: FlowTuple) -> None:
        """Refuse a pin whose id or 5-tuple is already pinned."""
        other = self.by_flow.get(flow)
        if other is not None:
            raise DuplicatePinError(f"flow {flow} is already pinned by {other!r}")
        if pin_id in self.by_id:
            raise DuplicatePinError(f"pin id {pin_id!r} is already in use")

    def put(self, pin: FlowPin) -> None:
        """Record a new pin, or the new state of one."""
        self.by_id[pin.pin_id] = pin
        self.by_flow[pin.flow] = pin.pin_id

    def pop(self, pin_id: str) -> FlowPin:
        """Forget a pin; UnknownPinError if there is none with that id."""
        pin = self.by_id.pop(pin_id, None)
        if pin is None:
            raise UnknownPinError(f"no flow pin {pin_id!r}")
        del self.by_flow[pin.flow]
        return pin


def most_capacity(paths: Iterable[PathIndex], table: LoadTable) -> PathIndex | None:
    """The path whose worse port has the most capacity left (first of equals), or None."""
    avail = table.avail_bps
    best: PathIndex | None = None
    best_bps = -1.0
    for c in paths:
        bps = min(avail[c.up], avail[c.down])
        if bps > best_bps:
            best, best_bps = c, bps
    return best


def evacuate(
    pins: FlowPins,
    broken: set[LinkId],
    usable: Callable[[str, str], tuple[PathIndex, ...]],
    table: LoadTable,
    now: float,
) -> list[InstallFlowPin | RemoveFlowPin]:
    """Move the pins whose path crosses a ``broken`` cable (see the module docstring).

    ``usable(src_leaf, dst_leaf)`` gives the paths whose cables are up.
    """
    updates: list[InstallFlowPin | RemoveFlowPin] = []
    for pin in list(pins.by_id.values()):
        if pin.path is None or not broken.intersection(pin.path.links):
            continue
        best = most_capacity(usable(pin.path.src_leaf, pin.path.dst_leaf), table)
        new_path = best.path if best is not None else None
        moved = replace(
            pin,
            path=new_path,
            moved=(*pin.moved, f"{pin.path} -> {new_path or 'ecmp'} at {now:.3f}"),
        )
        pins.put(moved)
        updates.append(InstallFlowPin(moved) if new_path is not None else RemoveFlowPin(pin))
    return updates


def restore(
    pins: FlowPins,
    pair_of: Callable[[FlowPin], tuple[str, str]],
    usable: Callable[[str, str], tuple[PathIndex, ...]],
    table: LoadTable,
    now: float,
) -> list[InstallFlowPin | RemoveFlowPin]:
    """Put the pins left on ECMP back on a live spine: the requested one, else the best."""
    updates: list[InstallFlowPin | RemoveFlowPin] = []
    for pin in list(pins.by_id.values()):
        if pin.path is not None:
            continue
        paths = usable(*pair_of(pin))
        chosen = next((c for c in paths if c.path.spine == pin.requested), None)
        chosen = chosen or most_capacity(paths, table)
        if chosen is None:
            continue
        back = replace(
            pin, path=chosen.path, moved=(*pin.moved, f"ecmp -> {chosen.path} at {now:.3f}")
        )
        pins.put(back)
        updates.append(InstallFlowPin(back))
    return updates
