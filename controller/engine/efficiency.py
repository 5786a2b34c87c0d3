"""Scheduling efficiency: was a transfer placed on the path hindsight finds best?

The decision was made with a smoothed, up-to-100-ms-old picture and estimates of its
own placements. Once the transfer has ended and the polls covering it have arrived,
the engine knows what actually crossed every candidate port while the transfer ran:
the byte counters over the sampled window ``W`` that covers [start, end]. The
offline recomputation charges each candidate path with that *other* traffic (the
port's bytes in ``W``, less the transfer's own bytes on the ports it used) and
finds the path where the transfer would have had the most bandwidth left:

    other_bps(port) = (bytes(port, W) - own bytes) * 8 / |W|
    rate(path)      = min over its ports of (capacity - other_bps), floored at 1%
    cost(path)      = size * 8 / rate(path)

A transfer is *efficient* when its path's cost is within ``tolerance`` of the best
cost. The tolerance (5% by default) absorbs what the recomputation cannot see: the
transfer's header bytes, which stay in the "other" traffic of its own path, and the
coarse sampling windows of short transfers.

Only pinned transfers are judged (ECMP's choice is the hash's, not the engine's),
and not those moved by a link failure. The engine judges them in ``tick`` once the
covering polls are in, at most ``judge_rate`` per second (an even sample beyond
that), and counts each verdict in the alert window where it was made.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from controller.engine.loads import MIN_AVAILABLE, LoadTable
from controller.engine.selection import PathIndex


@dataclass(frozen=True, slots=True)
class OfflineVerdict:
    """The recomputed cost of every candidate, the best one, and the verdict."""

    costs: tuple[float, ...]
    best: int
    chosen: int
    efficient: bool


def offline_verdict(
    table: LoadTable,
    candidates: tuple[PathIndex, ...],
    chosen: int,
    *,
    size: int,
    start: float,
    end: float,
    tolerance: float,
) -> OfflineVerdict | None:
    """Judge a finished transfer; None while the polls covering it are missing."""
    own = candidates[chosen]
    own_ports = (own.up, own.down)
    hist_t, hist_sent, capacity = table.hist_t, table.hist_sent, table.capacity
    bits = size * 8
    costs: list[float] = []
    for c in candidates:
        rate = float("inf")
        for port in (c.up, c.down):
            times = hist_t[port]
            lo = bisect_right(times, start) - 1
            hi = bisect_left(times, end)
            if lo < 0 or hi >= len(times):
                return None
            span = times[hi] - times[lo]
            if span <= 0:
                return None
            sents = hist_sent[port]
            sent = sents[hi] - sents[lo]
            if port in own_ports:
                sent = sent - size if sent > size else 0
            cap = capacity[port]
            avail = cap - sent * 8 / span
            rate = min(rate, max(avail, cap * MIN_AVAILABLE))
        costs.append(bits / rate)
    best = min(range(len(costs)), key=costs.__getitem__)
    efficient = costs[chosen] <= costs[best] * (1.0 + tolerance)
    return OfflineVerdict(tuple(costs), best, chosen, efficient)
