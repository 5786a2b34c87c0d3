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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.config import FabricConfig
from controller.topology import PortRef, Tier, Topology
from simulator.maxmin import FloatArray

PATH_WIDTH = 4


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
        self.links = tuple(links)
        self.capacity: FloatArray = np.array([x.capacity_bps for x in links], dtype=np.float64)
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
        self.tiers: dict[str, np.ndarray] = {}
        for tier in (Tier.INTRA_RACK, Tier.INTER_RACK, Tier.SPINE):
            idx = [i for i, x in enumerate(links) if x.tier == str(tier)]
            self.tiers[str(tier)] = np.array(idx, dtype=np.int64)

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
        """The links from host ``src`` to host ``dst`` through ``spine`` (None: same leaf)."""
        a, b = self.leaf_of[src], self.leaf_of[dst]
        if a == b:
            return (self.nic[src], self.host_port[dst], self.pad, self.pad)
        if spine is None:
            raise ValueError(f"{src} and {dst} sit on different leaves: a path needs a spine")
        return (self.nic[src], self.up[a, spine], self.down[spine, b], self.host_port[dst])

    def cable_links(self, leaf: str, spine: str) -> tuple[int, int]:
        """Both directions of the ``leaf``-``spine`` cable: the uplink and the downlink."""
        return self.up[leaf, spine], self.down[spine, leaf]
