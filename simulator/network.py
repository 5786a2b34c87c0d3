"""The simulated fabric: numbered directed links and the paths transfers take.

A :class:`Network` is built from the controller's own :class:`~controller.topology.Topology`,
so the simulator and the controller agree on every port. Its links are the topology's
egress ports (a leaf's port towards a host, a leaf's uplink, a spine's downlink), plus
one link per host NIC (the host's transmit side, which the switches do not count), plus
the *pad link* of infinite capacity that :mod:`simulator.maxmin` needs. Link ``i`` keeps
its capacity, its tier (``intra-rack`` for both directions of a host link,
``inter-rack`` for leaf uplinks, ``spine`` for spine downlinks) and, for switch ports,
its :class:`~controller.topology.PortRef`, which is how telemetry is read back.

A path between two hosts on different leaves through spine ``s`` is the four links
NIC, uplink, downlink, host port; within one leaf it is NIC and host port (padded).

In a three-tier fabric (:mod:`simulator.pods`) a path between pods is named by its
*route* ``"s>x>t"``: up spine ``s`` of the source pod, superspine ``x``, down spine
``t`` of the destination pod, six links (NIC, uplink, the spine's uplink, the
superspine's downlink, the spine's downlink, host port); paths within a pod keep
their spine's name. Every path is padded to :attr:`Network.path_width` links (4, or 6
with superspines).

**Pools.** The physical references (:mod:`simulator.reference`) spray every transfer
over all the paths between its racks. For them the network adds *pool links* (tier
``pool``, no port): a leaf's uplinks pooled into one link (its *up-pool*), the spines'
downlinks into a leaf (its *down-pool*) and, with superspines, a pod's spine uplinks
(its *rise-pool*) and the superspines' downlinks into a pod's spines (its
*fall-pool*). A pool's capacity is the sum of its members' (the engine keeps it so as
their capacities and fixed background change); a sprayed path is NIC, up-pool, (rise-
and fall-pool between pods), down-pool, host port (:meth:`Network.spray_path`). Every
cable link is a member of exactly one pool. Pool links are no tier of the fabric's
(they are left out of :attr:`Network.tiers`) and no switch port (the telemetry never
reads them); the engine spreads a pool's load back over its members
(:func:`simulator.kernels.spread_pools`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from controller.config import FabricConfig
from controller.topology import PortRef, Tier, Topology
from simulator.maxmin import FloatArray, IntArray

PATH_WIDTH = 4
"""Links of the longest path of a two-tier fabric."""
POD_PATH_WIDTH = 6
"""Links of a path between pods."""


@dataclass(frozen=True, slots=True)
class LinkInfo:
    """One directed link: ``port`` is None for a host NIC (and the pad link)."""

    name: str
    capacity_bps: float
    tier: str
    port: PortRef | None


class Network:
    """Links, capacities and spine paths of a fabric (see the module docstring)."""

    def __init__(self, fabric: FabricConfig) -> None:
        self.fabric = fabric
        self.topology = Topology(fabric)
        links: list[LinkInfo] = []
        self.port_link: dict[PortRef, int] = {}
        for ref, egress in sorted(self.topology.egress.items()):
            self.port_link[ref] = len(links)
            links.append(LinkInfo(str(ref), float(egress.capacity_bps), str(egress.tier), ref))
        self.nic: dict[str, int] = {}
        self.host_port: dict[str, int] = {}
        for host in fabric.hosts:
            self.nic[host.name] = len(links)
            links.append(LinkInfo(f"{host.name}:nic", float(host.capacity_bps), "intra-rack", None))
            self.host_port[host.name] = self.port_link[PortRef(host.leaf, host.port)]
        self.pad = len(links)
        links.append(LinkInfo("pad", float("inf"), "pad", None))
        self.leaf_of = {h.name: h.leaf for h in fabric.hosts}
        self.spines = self.topology.spines
        self.leaves = self.topology.leaves
        self.up: dict[tuple[str, str], int] = {}
        self.down: dict[tuple[str, str], int] = {}
        for leaf in self.leaves:
            for spine in self.spines:
                if self.topology.graph.has_edge(leaf, spine):
                    self.up[leaf, spine] = self.port_link[self.topology.port_towards(leaf, spine)]
                    self.down[spine, leaf] = self.port_link[self.topology.port_towards(spine, leaf)]
        self.superspines = self.topology.superspines
        self.rise: dict[tuple[str, str], int] = {}
        self.fall: dict[tuple[str, str], int] = {}
        for ref, egress in self.topology.egress.items():
            if egress.tier is Tier.SPINE_UPLINK:
                self.rise[ref.switch, egress.peer] = self.port_link[ref]
            elif egress.tier is Tier.SUPERSPINE:
                self.fall[ref.switch, egress.peer] = self.port_link[ref]
        self._add_pools(links)
        self.links = tuple(links)
        self.capacity: FloatArray = np.array([x.capacity_bps for x in links], dtype=np.float64)
        self.path_width = POD_PATH_WIDTH if self.superspines else PATH_WIDTH
        self._routes: dict[str, tuple[str, str, str]] = {}
        self._groups: dict[tuple[str, str], tuple[str, ...]] = {}
        self.tiers: dict[str, np.ndarray] = {}
        for tier in Tier:
            idx = [i for i, x in enumerate(links) if x.tier == str(tier)]
            if idx or tier in (Tier.INTRA_RACK, Tier.INTER_RACK, Tier.SPINE):
                self.tiers[str(tier)] = np.array(idx, dtype=np.int64)

    def _add_pools(self, links: list[LinkInfo]) -> None:
        """The pool links (see the module docstring), appended to ``links``."""
        self.pod_of: dict[str, int] = {}  # leaf -> its pod (its set of spines), from 0
        pods: dict[frozenset[str], int] = {}
        for leaf in self.leaves:
            spines = frozenset(s for s in self.spines if (leaf, s) in self.up)
            self.pod_of[leaf] = pods.setdefault(spines, len(pods))
        spine_pod = {s: pods[group] for group in pods for s in group}
        groups: dict[str, list[int]] = {}
        for (leaf, _), link in self.up.items():
            groups.setdefault(f"{leaf}:up-pool", []).append(link)
        for (_, leaf), link in self.down.items():
            groups.setdefault(f"{leaf}:down-pool", []).append(link)
        for (spine, _), link in self.rise.items():
            groups.setdefault(f"pod{spine_pod[spine] + 1}:rise-pool", []).append(link)
        for (_, spine), link in self.fall.items():
            groups.setdefault(f"pod{spine_pod[spine] + 1}:fall-pool", []).append(link)
        self.pool: dict[str, int] = {}
        self.pool_members: dict[int, tuple[int, ...]] = {}
        for name, members in groups.items():
            self.pool[name] = len(links)
            self.pool_members[len(links)] = tuple(sorted(members))
            total = sum(links[m].capacity_bps for m in members)
            links.append(LinkInfo(name, total, "pool", None))
        member = [(m, p) for p, ms in self.pool_members.items() for m in ms]
        self.pool_links: IntArray = np.array(sorted(self.pool_members), dtype=np.int64)
        self.pool_member: IntArray = np.array([m for m, _ in member], dtype=np.int64)
        """Every pool member (a cable link), with :attr:`pool_owner` its pool."""
        self.pool_owner: IntArray = np.array([p for _, p in member], dtype=np.int64)
        self.pool_of: IntArray = np.full(len(links), -1, dtype=np.int64)
        """Each link's pool (-1: in none)."""
        self.pool_of[self.pool_member] = self.pool_owner
        self.is_pool = np.zeros(len(links), dtype=bool)
        self.is_pool[self.pool_links] = True

    def spray_path(self, src: str, dst: str) -> tuple[int, ...]:
        """The links of a transfer sprayed over every path from ``src`` to ``dst``: NIC,
        the source leaf's up-pool, between pods the source pod's rise-pool and the
        destination pod's fall-pool, the destination leaf's down-pool, host port."""
        a, b = self.leaf_of[src], self.leaf_of[dst]
        if a == b:
            return (self.nic[src], self.host_port[dst])
        pools = [self.pool[f"{a}:up-pool"]]
        pa, pb = self.pod_of[a], self.pod_of[b]
        if self.superspines and pa != pb:
            pools += [self.pool[f"pod{pa + 1}:rise-pool"], self.pool[f"pod{pb + 1}:fall-pool"]]
        return (self.nic[src], *pools, self.pool[f"{b}:down-pool"], self.host_port[dst])

    @property
    def nlinks(self) -> int:
        """Links, the pad link included."""
        return len(self.links)

    def spines_between(self, src_leaf: str, dst_leaf: str) -> tuple[str, ...]:
        """Spines wired to both leaves, in the topology's order."""
        return tuple(
            s for s in self.spines if (src_leaf, s) in self.up and (s, dst_leaf) in self.down
        )

    def path(self, src: str, dst: str, spine: str | None) -> tuple[int, ...]:
        """The links from host ``src`` to host ``dst`` through ``spine`` (None: same leaf),
        or along a route between pods (``"s>x>t"``)."""
        a, b = self.leaf_of[src], self.leaf_of[dst]
        if a == b:
            return (self.nic[src], self.host_port[dst], self.pad, self.pad)
        if spine is None:
            raise ValueError(f"{src} and {dst} sit on different leaves: a path needs a spine")
        if ">" in spine:
            s, x, t = self.route_hops(spine)
            return (
                self.nic[src],
                self.up[a, s],
                self.rise[s, x],
                self.fall[x, t],
                self.down[t, b],
                self.host_port[dst],
            )
        return (self.nic[src], self.up[a, spine], self.down[spine, b], self.host_port[dst])

    @staticmethod
    def route(spine: str, superspine: str, far_spine: str) -> str:
        """The name of a route between pods."""
        return f"{spine}>{superspine}>{far_spine}"

    def route_hops(self, route: str) -> tuple[str, str, str]:
        """(spine, superspine, far spine) of a route between pods."""
        hops = self._routes.get(route)
        if hops is None:
            s, x, t = route.split(">")
            hops = self._routes[route] = (s, x, t)
        return hops

    def end_spines(self, route: str) -> tuple[str, str]:
        """The spines a path leaves the source leaf by and reaches the destination by."""
        if ">" in route:
            s, _, t = self.route_hops(route)
            return s, t
        return route, route

    def superspines_of(self, spine: str) -> tuple[str, ...]:
        """The superspines ``spine`` reaches, in its uplink-port order (its ECMP group)."""
        return self._group(spine, "", lambda peer: peer in self.superspines)

    def spines_below(self, superspine: str, leaf: str) -> tuple[str, ...]:
        """The spines of ``superspine`` wired to ``leaf``, in its port order (its ECMP group
        towards that leaf's pod)."""
        return self._group(superspine, leaf, lambda peer: (leaf, peer) in self.up)

    def _group(self, switch: str, key: str, member: Callable[[str], bool]) -> tuple[str, ...]:
        """The neighbours of ``switch`` that ``member`` keeps, by port number (cached under
        ``(switch, key)``)."""
        group = self._groups.get((switch, key))
        if group is None:
            ports = self.topology.egress
            near = sorted((r.port, e.peer) for r, e in ports.items() if r.switch == switch)
            group = self._groups[switch, key] = tuple(p for _, p in near if member(p))
        return group

    def routes(self, src_leaf: str, dst_leaf: str) -> tuple[str, ...]:
        """Every way from one leaf to another: the spines wired to both, or, between pods,
        every route through a spine of each pod and a superspine."""
        direct = self.spines_between(src_leaf, dst_leaf)
        if direct or not self.superspines:
            return direct
        return tuple(
            self.route(s, x, t)
            for s in self.spines
            if (src_leaf, s) in self.up
            for x in self.superspines_of(s)
            for t in self.spines_below(x, dst_leaf)
        )

    def cable_links(self, leaf: str, spine: str) -> tuple[int, int]:
        """Both directions of the ``leaf``-``spine`` cable: the uplink and the downlink."""
        return self.up[leaf, spine], self.down[spine, leaf]
