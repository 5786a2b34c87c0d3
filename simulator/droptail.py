"""Constant-rate flows through drop-tail links: what UDP offers, what the links carry.

A UDP sender does not back off: it offers its rate whatever the path does with it. A
link offered more than its capacity by such flows drops the excess, and a drop-tail
FIFO drops each flow's packets in proportion to what it offers, so every flow crossing
the link keeps the same fraction ``capacity / offered`` of its rate; the next link sees
what is left. A link that is down (capacity 0) keeps nothing. The fabric is
feed-forward (a path goes NIC, uplink, downlink, host port; between pods through the
spines' uplinks and the superspines' downlinks in between), so the fractions settle
after as many rounds as a path has links: each round fixes the links one hop further.

What the links carry of these flows is taken before any elastic flow is served
(:mod:`simulator.flow`): TCP backs off where UDP does not, so an elastic flow gets a
link's capacity less the constant-rate traffic on it, and nothing on a link that
constant-rate traffic overloads.
"""

from __future__ import annotations

import numpy as np

from simulator.maxmin import FloatArray, IntArray


def constant_rates(
    paths: IntArray, rates: FloatArray, capacity: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(offered, carried) per link and delivered per flow, for constant-rate flows.

    ``paths[i]`` lists flow ``i``'s links in order (padded with a link of infinite
    capacity), ``rates[i]`` is what it sends. ``offered[l]`` is what reaches link ``l``
    (after the drops upstream), ``carried[l] = min(offered[l], capacity[l])``, and
    ``delivered[i]`` what flow ``i`` gets through its whole path.
    """
    nlinks = capacity.shape[0]
    if paths.shape[0] == 0:
        zero = np.zeros(nlinks)
        return zero, zero.copy(), np.zeros(0)
    kept = np.ones(nlinks)  # each link's fraction of what it is offered
    offered: FloatArray = np.zeros(nlinks)
    for _ in range(paths.shape[1] + 1):
        hop = kept[paths]
        before = np.ones_like(hop)
        before[:, 1:] = np.cumprod(hop[:, :-1], axis=1)  # kept by the links upstream
        arriving = rates[:, None] * before
        offered = np.bincount(paths.ravel(), weights=arriving.ravel(), minlength=nlinks).astype(
            np.float64
        )
        over = offered > capacity
        new = np.ones(nlinks)
        new[over] = capacity[over] / offered[over]
        if np.array_equal(new, kept):
            break
        kept = new
    carried = np.minimum(offered, capacity)
    delivered = rates * np.prod(kept[paths], axis=1)
    return offered, carried, delivered
