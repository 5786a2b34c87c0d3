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
  the fabric had no reordering cost. A pool's capacity is its members' less their
  fixed (UDP) background; TCP background on a cable is a flow over that cable *and*
  its pool, so it shares both. A cable that fails or is re-provisioned changes its
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
  NIC, its host port and its pools ever allow in the run (pooled capacity less fixed
  background, over every state the scenario's cable events put the fabric in). No
  flow of any mode is faster than that at any instant, so no transfer of any mode
  completes under its floor: a strict bound, and every SRPT time is at least it.

Utilisation samples and counters stay physical: the engine spreads a pool's load over
its member cables in proportion to each one's spare capacity
(:func:`simulator.kernels.spread_pools`), which is where an ideal sprayer puts it.

Both run on the flow engine only; ns-3's TCP sends each connection on one path
(:func:`simulator.run.check_mode` refuses them on ``--engine packet``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiment.arrivals import Arrival
from experiment.scenario import LinkEvent
from simulator.engine import RatePolicy
from simulator.maxmin import FloatArray
from simulator.modes import Driver, Live
from simulator.network import Network
from simulator.workload import BackgroundFlow

SPRAYED = "spray"
"""A sprayed transfer's path in the results (its flows cross every spine)."""


class Spray(Driver):
    """Ideal per-packet spraying: every transfer over its racks' pools, max-min fair."""

    mode = "spray"

    def background_links(self, link: int) -> list[int]:
        """TCP background on a cable shares that cable and the pool it belongs to."""
        pool = int(self.net.pool_of[link])
        return [link, pool] if pool >= 0 else [link]

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
        """The pools' capacity in every state the scenario's events put the fabric in."""
        self._best: dict[tuple[str, str], float] = {}
        self._room = pool_room(self.net, self.work.background, self.scenario.events)

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


def pool_room(
    net: Network, background: Sequence[BackgroundFlow], events: Sequence[LinkEvent]
) -> FloatArray:
    """Every link's capacity for flows (less fixed background; a pool: its members'),
    one row per state of the fabric: at the start and after each cable event.

    The fixed background is set per link as :meth:`Driver.run` sets it (the engine
    keeps one rate per link), and events change capacities as
    :meth:`Driver._cable_event` does.
    """
    fixed = np.zeros(net.nlinks)
    for bg in background:
        if not bg.elastic:
            fixed[bg.link] = bg.bps
    provisioned = net.capacity.copy()
    capacity = net.capacity.copy()
    down: set[tuple[str, str]] = set()
    rows = [_room(net, capacity, fixed)]
    for e in sorted(events, key=lambda e: e.at_s):
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
        rows.append(_room(net, capacity, fixed))
    return np.stack(rows)


def _room(net: Network, capacity: FloatArray, fixed: FloatArray) -> FloatArray:
    room = np.maximum(capacity - fixed, 0.0)
    room[net.pool_links] = 0.0
    np.add.at(room, net.pool_owner, room[net.pool_member])
    return room
