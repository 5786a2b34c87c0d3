"""The physical references every mode is measured against: ``spray`` and ``bound``.

Placement modes choose one path per flow. The fabrics users compare with spray every
packet over every path (Spectrum-X, MRC, Ultra Ethernet), and the question "how far
from the best this fabric allows?" needs a figure no placement can beat. Both
references send each transfer over *pools* (:mod:`simulator.network`): all of its
source leaf's uplinks as one link, all the downlinks into its destination leaf as
another, and between pods the source pod's spine uplinks and the superspines' links
into the destination pod. A sprayed transfer crosses its NIC, those pools and the
destination host's port.

- ``spray``: ideal per-packet spraying. Rates are max-min fair over the pools, as if
  every NIC spread its packets over the paths in proportion to the room on each and
  the fabric had no reordering cost. The background is not sprayed: it is the same
  hashed flows as in every mode (:mod:`simulator.modes`). A pool's capacity is its
  members' less their UDP background; a TCP background flow crosses its uplink and
  downlink *and* their pools, so it shares both (it leaves out its hosts' own links,
  which the plan never fills). A cable that fails or is re-provisioned changes its
  pool at once: spraying NICs see loss on the next packet and need no audit or ECMP
  rewrite, so no transfer ever stalls on a dead cable. Pooling is a relaxation: it
  lets a rack's traffic use all of its uplinks and all of the destination rack's
  downlinks as if any split over the spines could be matched on both sides, so when
  spines are unevenly loaded it is kinder than a real sprayer can be. It is the best
  a congestion-oblivious fabric with spraying NICs reaches, and a little more.
- ``bound``: the same pools, but rates go by shortest remaining processing time first
  (:mod:`simulator.srpt`): the "big switch" ideal of pFabric and Sincronia, the
  standard reference for the mean completion time. With several shared resources
  greedy SRPT is an ideal, not a proven optimum: a mode may beat its p99 (SRPT lets
  the last transfers of a burst wait) and, by a little, its mean. TCP background
  yields to every transfer. Each transfer also gets a *floor*
  (``TransferResult.floor_s``): its burst hold plus its size over the best rate its
  NIC, its host port and its pools ever allow in the run: pooled capacity less the UDP
  background, over every state the scenario's cable events put the cables in, crossed
  with every way a mode's hash can place the background then (the ECMP plan and
  flowlet mode's, under the groups of every failure state, with every flowlet
  generation's salt). No flow of any mode is faster than that at any instant, so no
  transfer of any mode completes under its floor: a strict bound, and every SRPT time
  is at least it.

Utilisation samples and counters stay physical: the engine spreads a pool's load over
its member cables in proportion to each one's spare capacity
(:func:`simulator.kernels.spread_pools`), which is where an ideal sprayer puts it.

Both run on the flow engine only; ns-3's TCP sends each connection on one path
(:func:`simulator.run.check_mode` refuses them on ``--engine packet``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from experiment.arrivals import Arrival
from experiment.background import BackgroundFlow, for_flowlet
from experiment.ecmp import FLOWLET_STEP
from experiment.scenario import LinkEvent
from simulator.droptail import constant_rates
from simulator.engine import RatePolicy
from simulator.maxmin import FloatArray, IntArray
from simulator.modes import Driver, Live
from simulator.network import Network

SPRAYED = "spray"
"""A sprayed transfer's path in the results (its flows cross every spine)."""


class Spray(Driver):
    """Ideal per-packet spraying: every transfer over its racks' pools, max-min fair."""

    mode = "spray"

    def background_path(self, plan: BackgroundFlow, spine: str) -> tuple[int, ...]:
        """TCP background shares its cables and their pools; UDP takes its own path."""
        path = self.net.path(plan.key.src, plan.key.dst, spine)
        if not plan.elastic:
            return path
        cables = [x for x in path if int(self.net.pool_of[x]) >= 0]
        return tuple(x for link in cables for x in (link, int(self.net.pool_of[link])))

    def path(self, a: Arrival, spine: str | None) -> tuple[int, ...]:
        """Every path between the hosts' racks, pooled."""
        return self.net.spray_path(a.src, a.dst)

    def place(self, live: Live) -> None:
        """One sprayed flow, now."""
        a = live.arrival
        across = self.net.leaf_of[a.src] != self.net.leaf_of[a.dst]
        live.spine = SPRAYED if across else None
        self.start(live, live.spine, a.nbytes, a.ecmp_port)

    def rehash(self) -> None:
        """Nothing to move: the pools followed the cables when they changed."""


class Bound(Spray):
    """SRPT over the pools, and every transfer's floor (see the module docstring)."""

    mode = "bound"
    rate_policy = RatePolicy.SRPT

    def prepare(self) -> None:
        """The pools' capacity in every state the run puts the fabric in."""
        self._best: dict[tuple[str, str], float] = {}
        delay = self.controller.audit_misses * self.controller.audit_interval_s
        ecmp = [f for f in self.work.background if not f.elastic]
        flowlet = [f for f in self._flowlet_plan() if not f.elastic]
        placed: dict[tuple[int, frozenset[tuple[str, str]]], Placement] = {}

        def placement(flowlet_salt: int, grouped: frozenset[tuple[str, str]]) -> Placement:
            key = (flowlet_salt, grouped)
            if key not in placed:
                plans, salt = (flowlet, flowlet_salt) if flowlet_salt else (ecmp, 0)
                placed[key] = self._placement(plans, salt, grouped)
            return placed[key]

        states = [
            (state.capacity, [placement(0, state.grouped),
                              placement((state.regroups + 1) * FLOWLET_STEP & 0xFFFF,
                                        state.grouped)])
            for state in fabric_states(self.net, self.scenario.events, delay)
        ]  # fmt: skip
        self._room = pool_room(self.net, states)

    def _placement(
        self, plans: Sequence[BackgroundFlow], salt: int, grouped: frozenset[tuple[str, str]]
    ) -> Placement:
        """(paths, rates) of UDP background flows where the groups of the ``grouped``
        cables hash them with ``salt``."""
        paths = np.full((len(plans), self.net.path_width), self.net.pad, dtype=np.int64)
        for i, f in enumerate(plans):
            links = self.background_path(f, self.background_spine(f, salt, grouped))
            paths[i, : len(links)] = links
        return paths, np.array([float(f.rate_bps) for f in plans])

    def _flowlet_plan(self) -> Sequence[BackgroundFlow]:
        """Flowlet mode's background in the run of the same number."""
        if not self.work.background:
            return ()
        return for_flowlet(
            self.work.background, self.work.fabric, self.repeat, self.scenario.failed_cables
        )

    def floor(self, a: Arrival) -> float | None:
        """The burst hold plus the size over the best rate the transfer's NIC, host port
        and pools allow at any time of the run (None: its racks were never joined)."""
        rate = min(
            float(self.net.capacity[self.net.nic[a.src]]),
            float(self.net.capacity[self.net.host_port[a.dst]]),
            self._best_pooled(a.src, a.dst),
        )
        if rate <= 0.0:
            return None
        return a.hold_s + a.nbytes * 8.0 / rate

    def _best_pooled(self, src: str, dst: str) -> float:
        key = (self.net.leaf_of[src], self.net.leaf_of[dst])
        best = self._best.get(key)
        if best is None:
            pools = [x for x in self.net.spray_path(src, dst) if self.net.is_pool[x]]
            best = float(self._room[:, pools].min(axis=1).max()) if pools else float("inf")
            self._best[key] = best
        return best


Placement = tuple[IntArray, FloatArray]
"""The UDP background's paths (padded) and rates."""


@dataclass(frozen=True, slots=True)
class FabricState:
    """The cables' capacities, the cables out of the ECMP groups, and how many times the
    groups were rewritten (flowlet generations), between two changes of a run."""

    capacity: FloatArray
    grouped: frozenset[tuple[str, str]]
    regroups: int


def fabric_states(
    net: Network, events: Sequence[LinkEvent], regroup_delay: float
) -> list[FabricState]:
    """Every state a run goes through, in order: from the start, each cable event sets
    capacities as :meth:`Driver._cable_event` does, and each failure or repair rewrites
    the groups ``regroup_delay`` later (:meth:`Driver._regroup`)."""
    changes: list[tuple[float, int, LinkEvent | None]] = []
    for event in events:
        changes.append((event.at_s, 0, event))
        if event.capacity_bps is None:
            changes.append((event.at_s + regroup_delay, 1, None))
    changes.sort(key=lambda c: (c[0], c[1]))
    provisioned = net.capacity.copy()
    capacity = net.capacity.copy()
    down: set[tuple[str, str]] = set()
    grouped: frozenset[tuple[str, str]] = frozenset()
    regroups = 0
    states = [FabricState(capacity.copy(), grouped, regroups)]
    for _, _, e in changes:
        if e is None:
            grouped, regroups = frozenset(down), regroups + 1
        else:
            links = list(net.cable_links(e.leaf, e.spine))
            if e.capacity_bps is not None:
                provisioned[links] = float(e.capacity_bps)
                if (e.leaf, e.spine) not in down:
                    capacity[links] = float(e.capacity_bps)
            elif e.up:
                down.discard((e.leaf, e.spine))
                capacity[links] = provisioned[links]
            else:
                down.add((e.leaf, e.spine))
                capacity[links] = 0.0
        states.append(FabricState(capacity.copy(), grouped, regroups))
    return states


def pool_room(net: Network, states: Sequence[tuple[FloatArray, Sequence[Placement]]]) -> FloatArray:
    """Every link's capacity for flows (less the UDP background, clipped as the engine
    clips it, :mod:`simulator.droptail`; a pool: its members'), one row per capacity
    state and placement of the background in it."""
    rows = []
    for capacity, placements in states:
        for paths, rates in placements:
            offered, _, _ = constant_rates(paths, rates, capacity)
            offered[net.pad] = 0.0
            rows.append(_room(net, capacity, offered))
    return np.stack(rows)


def _room(net: Network, capacity: FloatArray, fixed: FloatArray) -> FloatArray:
    room = np.maximum(capacity - fixed, 0.0)
    room[net.pool_links] = 0.0
    np.add.at(room, net.pool_owner, room[net.pool_member])
    return room
