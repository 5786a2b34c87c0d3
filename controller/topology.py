"""The fabric as a graph: who is wired to whom, at what capacity, and which paths exist.

A :class:`Topology` is built once from a validated :class:`FabricConfig`. Its
networkx graph has a node per switch and host (attribute ``role``: leaf, spine or
host) and an edge per cable (attributes ``capacity_bps``, ``ports`` and ``link``).

Load is a property of a *direction*: the counters that measure a cable are those of
the port that transmits onto it. So the unit of capacity, utilisation, queueing and
in-flight bytes is the :class:`EgressPort`, named by a :class:`PortRef`
(``leaf1:3``), and each egress port belongs to a tier:

- ``intra-rack``: a leaf's port towards one of its hosts;
- ``inter-rack``: a leaf's uplink towards a spine;
- ``spine``: a spine's downlink towards a leaf;
- ``spine-uplink`` and ``superspine``: a spine's uplink towards a superspine and a
  superspine's downlink towards a spine, in the three-tier fabrics (pods of leaves
  and spines joined by superspines) that only the simulator builds.

Between two leaves, a :class:`SpinePath` goes up one spine and down again: one per
spine, through two egress ports (the source leaf's uplink and the spine's downlink).
Between two pods (leaves that share no spine) a path goes up a spine of the source
pod and on to a superspine: one per (spine, superspine), through the leaf's uplink and
the spine's uplink. Those are the two ports a placement can choose and the engine
counts; the superspine's ECMP then picks the destination pod's spine, whose ports
the path leaves to the telemetry of other transfers.
The cables themselves (:class:`LinkId`) carry a status that the topology audit
updates; a path through a cable that is down or miswired is no longer a candidate.
An egress port's capacity is the fabric file's until its switch reports another
speed (:mod:`controller.engine.ports`); the graph keeps the file's figures.
Topologies are immutable: :meth:`Topology.with_link_status` and
:meth:`Topology.with_capacity` return a new one that shares the static parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NamedTuple

import networkx as nx

from controller.config import FabricConfig, HostConfig, Role
from controller.errors import TopologyError
from kvfabric.suggest import did_you_mean


class PortRef(NamedTuple):
    """A switch port, ``leaf1:3``."""

    switch: str
    port: int

    def __str__(self) -> str:
        return f"{self.switch}:{self.port}"


class LinkId(NamedTuple):
    """A cable between two switches, named by its two ends in sorted order."""

    a: PortRef
    b: PortRef

    @staticmethod
    def of(x: PortRef, y: PortRef) -> LinkId:
        """The cable between ``x`` and ``y``, whichever order they come in."""
        return LinkId(x, y) if x <= y else LinkId(y, x)

    def __str__(self) -> str:
        return f"{self.a}-{self.b}"


class Tier(StrEnum):
    """The level of the fabric an egress port belongs to."""

    INTRA_RACK = "intra-rack"
    INTER_RACK = "inter-rack"
    SPINE = "spine"
    SPINE_UPLINK = "spine-uplink"
    SUPERSPINE = "superspine"


_TIERS = {
    (Role.LEAF, Role.SPINE): Tier.INTER_RACK,
    (Role.SPINE, Role.LEAF): Tier.SPINE,
    (Role.SPINE, Role.SUPERSPINE): Tier.SPINE_UPLINK,
    (Role.SUPERSPINE, Role.SPINE): Tier.SUPERSPINE,
}
"""The tier of a cable's direction, by the roles of its transmitting and far ends."""


class LinkStatus(StrEnum):
    """What the audit last found about a cable."""

    UP = "up"
    DOWN = "down"
    MISWIRED = "miswired"


@dataclass(frozen=True, slots=True)
class EgressPort:
    """A transmitting switch port: the unit of load. ``link`` is None towards a host."""

    ref: PortRef
    capacity_bps: int
    tier: Tier
    peer: str
    peer_port: PortRef | None
    link: LinkId | None


@dataclass(frozen=True, slots=True)
class SpinePath:
    """Leaf to leaf through one spine: up ``up`` (at the leaf), down ``down`` (at the spine).

    Between pods, ``superspine`` is the superspine the spine sends to and ``down`` the
    spine's uplink towards it (see the module docstring).
    """

    src_leaf: str
    spine: str
    dst_leaf: str
    up: PortRef
    down: PortRef
    links: tuple[LinkId, LinkId]
    superspine: str | None = None

    def __str__(self) -> str:
        via = self.spine if self.superspine is None else f"{self.spine}>{self.superspine}"
        return f"{self.src_leaf}>{via}>{self.dst_leaf}"


class Topology:
    """The fabric's graph, egress ports, spine paths and cable statuses.

    ``leaves`` and ``spines`` are the switch names in file order; ``hosts`` maps host
    names to their configuration; ``links`` lists the cables between switches.
    ``superspines`` is empty but in the simulator's three-tier fabrics.
    """

    __slots__ = (
        "_down",
        "_paths",
        "_rise",
        "_status",
        "_up",
        "config",
        "egress",
        "graph",
        "hosts",
        "leaves",
        "links",
        "spines",
        "superspines",
    )

    config: FabricConfig
    graph: nx.Graph
    egress: Mapping[PortRef, EgressPort]
    hosts: Mapping[str, HostConfig]
    links: tuple[LinkId, ...]
    leaves: tuple[str, ...]
    spines: tuple[str, ...]
    superspines: tuple[str, ...]

    def __init__(self, config: FabricConfig) -> None:
        graph = nx.Graph(name=config.name)
        egress: dict[PortRef, EgressPort] = {}
        for s in config.switches:
            graph.add_node(s.name, role=str(s.role))
        for h in config.hosts:
            graph.add_node(h.name, role="host")
            graph.add_edge(
                h.name, h.leaf, capacity_bps=h.capacity_bps, ports={h.leaf: h.port}, link=None
            )
            ref = PortRef(h.leaf, h.port)
            egress[ref] = EgressPort(ref, h.capacity_bps, Tier.INTRA_RACK, h.name, None, None)
        roles = {s.name: s.role for s in config.switches}
        links: list[LinkId] = []
        for cable in config.links:
            a, b = PortRef(cable.a.switch, cable.a.port), PortRef(cable.b.switch, cable.b.port)
            link = LinkId.of(a, b)
            links.append(link)
            graph.add_edge(
                a.switch,
                b.switch,
                capacity_bps=cable.capacity_bps,
                ports={a.switch: a.port, b.switch: b.port},
                link=link,
            )
            for src, dst in ((a, b), (b, a)):
                tier = _TIERS[roles[src.switch], roles[dst.switch]]
                egress[src] = EgressPort(src, cable.capacity_bps, tier, dst.switch, dst, link)
        self.config = config
        self.graph = graph
        self.egress = egress
        self.hosts = {h.name: h for h in config.hosts}
        self.links = tuple(links)
        self.leaves = tuple(s.name for s in config.leaves)
        self.spines = tuple(s.name for s in config.spines)
        self.superspines = tuple(s.name for s in config.superspines)
        # leaf -> spine -> (uplink port, cable), spine -> leaf -> (downlink port, cable),
        # spine -> superspine -> (uplink port, cable), superspine -> spine -> (its port, cable)
        self._up: dict[str, dict[str, tuple[PortRef, LinkId]]] = {}
        self._down: dict[str, dict[str, tuple[PortRef, LinkId]]] = {}
        self._rise: dict[str, dict[str, tuple[PortRef, LinkId]]] = {}
        sides = {Tier.INTER_RACK: self._up, Tier.SPINE: self._down, Tier.SPINE_UPLINK: self._rise}
        for e in egress.values():
            side = sides.get(e.tier)
            if side is not None and e.link is not None:
                side.setdefault(e.ref.switch, {})[e.peer] = (e.ref, e.link)
        self._status: dict[LinkId, LinkStatus] = {}
        self._paths: dict[tuple[str, str], tuple[SpinePath, ...]] = {}

    # -- names ----------------------------------------------------------------------

    def host(self, name: str) -> HostConfig:
        """The host called ``name``; a :class:`TopologyError` guesses the name meant."""
        try:
            return self.hosts[name]
        except KeyError:
            raise TopologyError(f"no host named {name!r}{did_you_mean(name, self.hosts)}") from None

    def leaf_of(self, host: str) -> str:
        """The leaf that ``host`` hangs off."""
        return self.host(host).leaf

    def port_towards(self, switch: str, neighbour: str) -> PortRef:
        """The port of ``switch`` that transmits to ``neighbour`` (a switch or a host)."""
        try:
            ports = self.graph.edges[switch, neighbour]["ports"]
        except KeyError:
            raise TopologyError(f"{switch!r} has no link to {neighbour!r}") from None
        return PortRef(switch, int(ports[switch]))

    # -- cables ---------------------------------------------------------------------

    def link_status(self, link: LinkId) -> LinkStatus:
        """The cable's status; cables start up."""
        return self._status.get(link, LinkStatus.UP)

    def with_link_status(self, link: LinkId, status: LinkStatus) -> Topology:
        """A topology identical to this one except for ``link``'s status."""
        if link not in self.links:
            raise TopologyError(f"no link {link} in the fabric")
        new = object.__new__(Topology)
        for attr in Topology.__slots__:
            if attr != "_status":
                setattr(new, attr, getattr(self, attr))
        new._status = {k: s for k, s in self._status.items() if k != link}
        if status is not LinkStatus.UP:
            new._status[link] = status
        return new

    def with_capacity(self, ref: PortRef, capacity_bps: int) -> Topology:
        """A topology identical to this one except for egress port ``ref``'s capacity."""
        port = self.egress.get(ref)
        if port is None:
            raise TopologyError(f"no egress port {ref} in the fabric")
        new = object.__new__(Topology)
        for attr in Topology.__slots__:
            setattr(new, attr, getattr(self, attr))
        new.egress = {**self.egress, ref: replace(port, capacity_bps=capacity_bps)}
        return new

    def unusable_links(self) -> frozenset[LinkId]:
        """Every cable that is down or miswired."""
        return frozenset(self._status)

    # -- paths ----------------------------------------------------------------------

    def spine_paths(self, src_leaf: str, dst_leaf: str) -> tuple[SpinePath, ...]:
        """Every path between two leaves, one per spine, whatever the cables' status;
        between pods, one per (spine, superspine) that reaches the other pod.

        Empty for ``src_leaf == dst_leaf``: traffic inside a rack never leaves the leaf.
        """
        key = (src_leaf, dst_leaf)
        cached = self._paths.get(key)
        if cached is not None:
            return cached
        for leaf in key:
            if self.graph.nodes.get(leaf, {}).get("role") != str(Role.LEAF):
                raise TopologyError(f"no leaf named {leaf!r}{did_you_mean(leaf, self.leaves)}")
        paths: tuple[SpinePath, ...] = ()
        if src_leaf != dst_leaf:
            ups = self._up.get(src_leaf, {})
            found: list[SpinePath] = []
            for spine in self.spines:
                up = ups.get(spine)
                down = self._down.get(spine, {}).get(dst_leaf)
                if up is not None and down is not None:
                    found.append(
                        SpinePath(src_leaf, spine, dst_leaf, up[0], down[0], (up[1], down[1]))
                    )
            if not found and self.superspines:
                found = self._pod_paths(src_leaf, dst_leaf)
            paths = tuple(found)
        self._paths[key] = paths
        return paths

    def _pod_paths(self, src_leaf: str, dst_leaf: str) -> list[SpinePath]:
        """Paths between pods: up a spine of the source pod, on to a superspine wired to
        a spine of the destination leaf, in the topology's order of spines and superspines."""
        far = self._up.get(dst_leaf, {})  # the destination pod's spines
        found = []
        for spine, up in sorted(self._up.get(src_leaf, {}).items(), key=self._spine_order):
            rises = self._rise.get(spine, {})
            for superspine in self.superspines:
                rise = rises.get(superspine)
                if rise is not None and any(superspine in self._rise.get(t, {}) for t in far):
                    links = (up[1], rise[1])
                    found.append(
                        SpinePath(src_leaf, spine, dst_leaf, up[0], rise[0], links, superspine)
                    )
        return found

    def _spine_order(self, item: tuple[str, object]) -> int:
        return self.spines.index(item[0])

    def candidate_paths(self, src_leaf: str, dst_leaf: str) -> tuple[SpinePath, ...]:
        """The spine paths whose two cables are both up."""
        paths = self.spine_paths(src_leaf, dst_leaf)
        if not self._status:
            return paths
        return tuple(p for p in paths if not any(link in self._status for link in p.links))

    def range_path(self, src_leaf: str, dst_leaf: str, spine: str) -> SpinePath | None:
        """The path a tagged transfer from ``src_leaf`` to ``dst_leaf`` whose source port
        is in ``spine``'s range takes: through ``spine`` while both its cables are up,
        else through a live spine (the same for every leaf and controller: the
        ``k``-th of the live paths, ``k`` the spine's place among all paths), else None
        (no live path: ECMP). The leaves' ``kv_range`` entries say the same."""
        paths = self.spine_paths(src_leaf, dst_leaf)
        live = self.candidate_paths(src_leaf, dst_leaf)
        if not live:
            return None
        for k, path in enumerate(paths):
            if path.spine == spine:
                return path if path in live else live[k % len(live)]
        return None

    def tier_ports(self, tier: Tier) -> tuple[EgressPort, ...]:
        """The egress ports of one tier."""
        return tuple(e for e in self.egress.values() if e.tier is tier)
