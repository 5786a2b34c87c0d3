"""Max-min fair sharing of link capacities among flows: progressive filling.

Every flow crosses a fixed set of links and may have a demand cap (a TCP flow held to a
target rate). Progressive filling raises the rate of every unfrozen flow at the same
pace; when a link runs out of capacity, the flows crossing it freeze at their current
rate, and when a flow reaches its cap it freezes too. The result is the unique max-min
fair allocation: no flow's rate can grow without lowering the rate of a flow that has
no more than it.

Paths come as one ``(flows, width)`` integer array of link indexes; a path shorter
than ``width`` is padded with the index of a *pad link* whose capacity is infinite
(``capacity[pad] = inf``), so that every row has the same width. A link of zero
capacity (a failed cable) freezes its flows at rate 0 in the first round.

The simulator calls this on every arrival, departure and capacity change, tens of
thousands of times a run, on a hundred or a few thousand flows. Vectorised numpy pays
a few microseconds per operation and about 25 operations per round, which made it the
run's cost, so the loop is compiled with numba (:func:`_fill`, cached on disk after
the first run): the links the flows cross are renumbered ``0..k-1`` once, and each
round is one pass over those links and one over the unfrozen flows.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

REL_TOL = 1e-9
"""Relative tolerance under which a link counts as saturated or a flow as capped."""


def max_min_rates(
    paths: IntArray, capacity: FloatArray, caps: FloatArray | None = None
) -> FloatArray:
    """The max-min fair rate of every flow (row of ``paths``) over ``capacity``.

    ``paths[i]`` lists flow ``i``'s links (padded with a link of infinite capacity);
    ``caps[i]`` is its demand (``inf`` for none). Rates are in ``capacity``'s units.
    """
    n = paths.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    demand = np.full(n, np.inf) if caps is None else np.ascontiguousarray(caps, dtype=np.float64)
    rates = np.zeros(n, dtype=np.float64)
    status = _fill(
        np.ascontiguousarray(paths, dtype=np.int64),
        np.ascontiguousarray(capacity, dtype=np.float64),
        demand,
        rates,
        REL_TOL,
    )
    check(status)
    return rates


OK, UNBOUNDED, NEGATIVE = 0, 1, 2
"""What :func:`_fill` (and :mod:`simulator.srpt`'s loop) found."""


def check(status: int) -> None:
    """Raise what a compiled allocation's ``status`` says went wrong (ValueError)."""
    if status == NEGATIVE:
        raise ValueError("link capacities must not be negative")
    if status == UNBOUNDED:
        raise ValueError("a flow crosses no finite link and has no cap: its rate is unbounded")


@numba.njit(cache=True, nogil=True)
def _fill(  # noqa: C901 - progressive filling in one loop, kept whole for speed
    paths: IntArray, capacity: FloatArray, demand: FloatArray, rates: FloatArray, tol: float
) -> int:
    """Progressive filling into ``rates``; the status (``OK``, ``UNBOUNDED``, ``NEGATIVE``)."""
    n, width = paths.shape
    local = np.full(capacity.shape[0], -1, dtype=np.int64)
    used = np.empty(n * width, dtype=np.int64)
    lp = np.empty((n, width), dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(width):
            link = paths[i, j]
            if local[link] < 0:
                local[link] = k
                used[k] = link
                k += 1
            lp[i, j] = local[link]
    residual = np.empty(k, dtype=np.float64)
    slack = np.empty(k, dtype=np.float64)
    count = np.zeros(k, dtype=np.int64)
    for m in range(k):
        c = capacity[used[m]]
        if c < 0.0:
            return 2
        residual[m] = c
        slack[m] = c * tol if np.isfinite(c) else 0.0
    for i in range(n):
        for j in range(width):
            count[lp[i, j]] += 1
    frozen = np.zeros(n, dtype=np.bool_)
    left = n
    level = 0.0
    while left > 0:
        step = np.inf
        tightest = -1
        for m in range(k):
            if count[m] > 0:
                share = residual[m] / count[m]
                if share < step:
                    step = share
                    tightest = m
        for i in range(n):
            if not frozen[i]:
                head = demand[i] - level
                if head < step:
                    step = head
                    tightest = -1
        if not np.isfinite(step):
            return 1
        step = max(step, 0.0)
        level += step
        for m in range(k):
            if count[m] > 0:
                residual[m] -= step * count[m]
        if tightest >= 0:
            residual[tightest] = 0.0  # saturated, whatever the rounding says
        for i in range(n):
            if frozen[i]:
                continue
            d = demand[i]
            stop = np.isfinite(d) and d - level <= d * tol
            if not stop:
                for j in range(width):
                    m = lp[i, j]
                    if residual[m] <= slack[m]:
                        stop = True
                        break
            if stop:
                frozen[i] = True
                rates[i] = level
                left -= 1
                for j in range(width):
                    count[lp[i, j]] -= 1
    return 0


def link_loads(paths: IntArray, rates: FloatArray, nlinks: int) -> FloatArray:
    """Total rate on every link (the pad link included) of flows at ``rates``."""
    width = paths.shape[1] if paths.ndim == 2 else 0
    loads = np.bincount(paths.ravel(), weights=np.repeat(rates, width), minlength=nlinks)
    return loads.astype(np.float64, copy=False)
