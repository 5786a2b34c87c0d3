"""Path selection: expected completion time per spine path, hysteresis, rate limit.

For a transfer of ``S`` bytes, each egress port has an available bandwidth ``A``
(capacity less the smoothed background load) and carries the engine's own flows,
each with the bytes it has left (the fluid picture, :mod:`fluid`). A path's expected
completion time is

    cost = the processor-sharing time of ``S`` on its worse port + queue delay of both,

where a port's time is ``8 * (S + sum of min(left, S) over its flows) / A``: every
flow with less left than ``S`` finishes first, every other one shares with it.

Its *load* is the capacity share the transfer would not get on its worse port,
``1 - share / capacity`` with ``share = A / (flows + 1)``: measured utilisation and
the engine's own placements in one number, which is what the rate limit compares.
Counting its own placements is what stops a burst of simultaneous requests from
herding onto the spine that looked idle at the last poll: the second request already
sees the first one's bytes.

Each candidate's cost *alone* (as if the engine had nothing in flight on it) is kept
too: it tells a difference the engine made itself from one the counters measured.

Then, with ``best`` the cheapest candidate and ``last`` the pair's previous path:

1. a pair marked for reroute (a transfer of it was too slow, recently) does not use
   the slow spine while another candidate exists, nor stays on it by hysteresis;
2. if ``last`` costs at most ``(1 + hysteresis)`` times ``best``, keep ``last``;
3. if the pair's last transfer ran slower than ``latency_factor`` times its
   baseline, move to ``best``;
4. if ``last`` alone would be within the hysteresis of ``best`` alone, ``last`` is
   worse only by the engine's own transfers in flight on it: move to ``best``
   ("spread"). This is not a path change to rate-limit: nothing moves, a new transfer
   goes beside the pair's previous ones instead of queueing behind them (the burst
   of two of the design's example: the second transfer goes to the 75% spine, where
   it runs alone, not behind the first on the 62.5% one);
5. move to ``best`` when its load is lower by more than ``util_delta``; else keep
   ``last`` (rate limit: a measured difference too small to justify a change).

Over all of these stands a bound: no rule keeps a path whose expected completion is
more than ``max_cost_ratio`` times the best's. Hysteresis and the rate limit then
give way to ``best`` ("cost bound"), and a reroute mark whose every alternative is
that much worse than the spine it avoids *yields* ("reroute yields"): that spine is
now clearly best, and the engine lifts the mark. The mark was a guess (a transfer
was slow there, the counters did not say why); the figures of every candidate are
measurements, and after a failure that moves background traffic the guess is the
first thing to go stale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controller.config import SelectionSettings
from controller.engine.fluid import Fluid
from controller.engine.loads import LoadTable
from controller.topology import SpinePath

IntArray = npt.NDArray[np.int64]

REASON_BEST = "best"
REASON_HYSTERESIS = "hysteresis"
REASON_RATE_LIMIT = "rate-limited"
REASON_UTIL_DELTA = "utilisation delta"
REASON_LATENCY = "latency above baseline"
REASON_REROUTE = "reroute"
REASON_SPREAD = "spread"
REASON_COST_BOUND = "cost bound"
REASON_REROUTE_YIELDS = "reroute yields"


@dataclass(frozen=True, slots=True)
class PathIndex:
    """A spine path with the load-table indexes of its two egress ports."""

    path: SpinePath
    up: int
    down: int


@dataclass(frozen=True, slots=True)
class Selection:
    """What :func:`choose` selected: the chosen candidate and the cheapest one (indexes
    into the candidates), and why."""

    chosen: int
    best: int
    reason: str
    costs: tuple[float, ...]
    loads: tuple[float, ...]
    alone: tuple[float, ...] = ()


VECTOR_MIN = 8
"""Candidates from which :func:`evaluate` works on numpy arrays (below, one by one)."""


def evaluate(
    candidates: tuple[PathIndex, ...],
    table: LoadTable,
    fluid: Fluid,
    size: int,
    now: float,
    *,
    seen: list[float] | None = None,
    alone: list[float] | None = None,
) -> tuple[list[float], list[float]]:
    """Expected completion time (s) and load of each candidate for ``size`` bytes at
    ``now``, from the fluid picture (see the module docstring).

    With ``seen``, also appends per candidate the smoothed utilisation of its two
    ports and the bytes the engine placed on them (four numbers), for the transfer
    log; with ``alone``, the candidate's cost without the engine's flows. From
    :data:`VECTOR_MIN` candidates on, the same figures come from numpy arrays (64
    spines: 64 candidates a decision); only the ports that carry flows of the engine's
    are visited one by one.
    """
    if len(candidates) >= VECTOR_MIN:
        return _evaluate_all(candidates, table, fluid, size, now, seen=seen, alone=alone)
    avail, inflight, qdelay, cap = table.avail_bps, table.inflight, table.qdelay_s, table.capacity
    bits = size * 8.0
    costs: list[float] = []
    loads: list[float] = []
    figures = fluid.candidate
    for c in candidates:
        up, down = c.up, c.down
        delay = qdelay[up] + qdelay[down]
        cost, share_up, share_down = figures(up, down, size, now)
        costs.append(cost + delay)
        if alone is not None:
            a_up, a_down = avail[up], avail[down]
            alone.append(bits / (a_up if a_up < a_down else a_down) + delay)
        load_up = 1.0 - share_up / cap[up]
        load_down = 1.0 - share_down / cap[down]
        loads.append(load_up if load_up > load_down else load_down)
        if seen is not None:
            seen += (table.util[up], table.util[down], inflight[up], inflight[down])
    return costs, loads


def _evaluate_all(
    candidates: tuple[PathIndex, ...],
    table: LoadTable,
    fluid: Fluid,
    size: int,
    now: float,
    *,
    seen: list[float] | None,
    alone: list[float] | None,
) -> tuple[list[float], list[float]]:
    """:func:`evaluate` on numpy arrays (the same figures)."""
    ups, downs = _ports(candidates)
    arr = table.arrays
    a_up, a_down = arr.avail[ups], arr.avail[downs]
    delay = arr.qdelay[ups] + arr.qdelay[downs]
    worse = np.minimum(a_up, a_down)
    if fluid.counting:
        n_up, n_down = fluid.counts[ups], fluid.counts[downs]
        q_up, q_down = fluid.waiting[ups], fluid.waiting[downs]  # copies: fancy indexing
        busy_up, busy_down = np.flatnonzero(n_up), np.flatnonzero(n_down)
        if len(busy_up):
            q_up[busy_up] += fluid.queued_on(ups[busy_up].tolist(), size, now)
        if len(busy_down):
            q_down[busy_down] += fluid.queued_on(downs[busy_down].tolist(), size, now)
        t = 8.0 * np.maximum((size + q_up) / a_up, (size + q_down) / a_down)
        share_up, share_down = a_up / (n_up + 1.0), a_down / (n_down + 1.0)
    else:
        t = 8.0 * size / worse
        share_up, share_down = a_up, a_down
    cap = arr.capacity
    loads = np.maximum(1.0 - share_up / cap[ups], 1.0 - share_down / cap[downs])
    if alone is not None:
        alone.extend((8.0 * size / worse + delay).tolist())
    if seen is not None:
        four = np.empty((len(candidates), 4))
        four[:, 0], four[:, 1] = arr.util[ups], arr.util[downs]
        four[:, 2], four[:, 3] = arr.inflight[ups], arr.inflight[downs]
        seen.extend(four.ravel().tolist())
    costs: list[float] = (t + delay).tolist()
    return costs, loads.tolist()


_PORTS: dict[int, tuple[tuple[PathIndex, ...], IntArray, IntArray]] = {}
"""The candidates' ports as arrays, by the identity of the candidates' tuple (the
engine's caches hand out the same tuple for a pair until its picture changes)."""


def _ports(candidates: tuple[PathIndex, ...]) -> tuple[IntArray, IntArray]:
    """The up and down ports of ``candidates`` as index arrays (cached)."""
    hit = _PORTS.get(id(candidates))
    if hit is not None and hit[0] is candidates:
        return hit[1], hit[2]
    ups = np.fromiter((c.up for c in candidates), dtype=np.int64, count=len(candidates))
    downs = np.fromiter((c.down for c in candidates), dtype=np.int64, count=len(candidates))
    if len(_PORTS) >= 8192:
        _PORTS.clear()
    _PORTS[id(candidates)] = (candidates, ups, downs)
    return ups, downs


def choose(
    candidates: tuple[PathIndex, ...],
    costs: list[float],
    loads: list[float],
    settings: SelectionSettings,
    *,
    last_spine: str | None,
    avoid_spine: str | None = None,
    latency_high: bool = False,
    alone: list[float] | None = None,
) -> Selection:
    """Apply reroute, hysteresis, spreading and rate limit to the evaluated candidates.

    Whatever the rule, the chosen candidate's cost is at most ``max_cost_ratio`` times
    the best's (see the module docstring).
    """
    best = min(range(len(costs)), key=costs.__getitem__)
    frozen_costs, frozen_loads = tuple(costs), tuple(loads)
    frozen_alone = tuple(alone) if alone is not None else ()
    bound = costs[best] * settings.max_cost_ratio

    def result(i: int, reason: str) -> Selection:
        if costs[i] > bound:
            return Selection(
                best, best, REASON_COST_BOUND, frozen_costs, frozen_loads, frozen_alone
            )
        return Selection(i, best, reason, frozen_costs, frozen_loads, frozen_alone)

    if avoid_spine is not None:
        others = [i for i, c in enumerate(candidates) if c.path.spine != avoid_spine]
        if others and candidates[best].path.spine == avoid_spine:
            other = min(others, key=costs.__getitem__)
            if costs[other] > bound:
                return result(best, REASON_REROUTE_YIELDS)
            return result(other, REASON_REROUTE)
        if others and last_spine == avoid_spine:
            last_spine = None
    last = -1
    if last_spine is not None:
        for i, c in enumerate(candidates):
            if c.path.spine == last_spine:
                last = i
                break
    if last < 0 or last == best:
        return result(best, REASON_BEST)
    if costs[last] <= costs[best] * (1.0 + settings.hysteresis):
        return result(last, REASON_HYSTERESIS)
    if latency_high:
        return result(best, REASON_LATENCY)
    if alone is not None and alone[last] <= alone[best] * (1.0 + settings.hysteresis):
        return result(best, REASON_SPREAD)
    if loads[last] - loads[best] > settings.util_delta:
        return result(best, REASON_UTIL_DELTA)
    return result(last, REASON_RATE_LIMIT)
