"""Scheduling efficiency: was a transfer placed on the path hindsight finds best?

The decision was made with a smoothed, up-to-100-ms-old picture and estimates of its
own placements. Once the transfer has ended and the polls covering it have arrived,
the engine knows what actually crossed every candidate port while the transfer ran:
the byte counters over the sampled window ``W`` that covers [start, end]. The
offline recomputation charges each candidate path with that *other* traffic and
finds the path where the transfer would have had the most bandwidth left:

    other(port)     = bytes(port, W)                              not on its path
                    = bytes(port, W) - kv(port, W) * S / (S + X)  on its path
    rate(path)      = min over its ports of (capacity - other * 8 / |W|), floored at 1%
    cost(path)      = S * 8 / rate(path)

with ``S`` the transfer's size and ``X`` the bytes of the engine's other transfers
that ran beside it (:mod:`inflight`). On its own path the transfer's wire bytes are
not "other" traffic; they are more than ``S`` (headers, and above all the
retransmissions of a TCP flow on a full tail-drop queue, 40% of ``S`` in the lab),
and a port counts the packets its queue then drops. So they are taken from the port's
KV-class counter, of which the transfer's share is ``S / (S + X)``; subtracting ``S``
alone charged every transfer with its own retransmissions and judged almost every
transfer on a loaded path inefficient.

A transfer is *efficient* when its path's cost is within ``tolerance`` of the best
cost. The tolerance (5% by default) absorbs the coarse sampling windows of short
transfers.

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
    shared: int = 0,
) -> OfflineVerdict | None:
    """Judge a finished transfer; None while the polls covering it are missing.

    ``shared`` is ``X`` of the module docstring.
    """
    own = candidates[chosen]
    own_ports = (own.up, own.down)
    hist_t, hist_sent, hist_kv = table.hist_t, table.hist_sent, table.hist_kv
    capacity = table.capacity
    own_share = size / (size + shared)
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
            sent: float = sents[hi] - sents[lo]
            if port in own_ports:
                kvs = hist_kv[port]
                sent -= (kvs[hi] - kvs[lo]) * own_share
            cap = capacity[port]
            avail = cap - sent * 8 / span
            rate = min(rate, max(avail, cap * MIN_AVAILABLE))
        costs.append(bits / rate)
    best = min(range(len(costs)), key=costs.__getitem__)
    efficient = costs[chosen] <= costs[best] * (1.0 + tolerance)
    return OfflineVerdict(tuple(costs), best, chosen, efficient)
