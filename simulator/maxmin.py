"""Max-min fair sharing of link capacities among flows: progressive filling.

Every flow crosses a fixed set of links and may have a demand cap (a TCP flow held to a
target rate). Progressive filling raises the rate of every unfrozen flow at the same
pace; when a link runs out of capacity, the flows crossing it freeze at their current
rate, and when a flow reaches its cap it freezes too. The result is the unique max-min
fair allocation: no flow's rate can grow without lowering the rate of a flow that has
no more than it.

The implementation is vectorised with numpy. Paths come as one ``(flows, width)``
integer array of link indexes; a path shorter than ``width`` is padded with the index
of a *pad link* whose capacity is infinite (``capacity[pad] = inf``), so that every row
has the same width. One round of the loop is a ``bincount`` of the unfrozen flows'
links, a division and a few reductions; the number of rounds is the number of distinct
bottleneck levels, not the number of flows. A link of zero capacity (a failed cable)
freezes its flows at rate 0 in the first round.
"""

from __future__ import annotations

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
    rates = np.zeros(n, dtype=np.float64)
    if n == 0:
        return rates
    if np.any(capacity < 0):
        raise ValueError("link capacities must not be negative")
    nlinks = capacity.shape[0]
    residual = capacity.astype(np.float64, copy=True)
    tol = np.where(np.isfinite(capacity), capacity * REL_TOL, 0.0)
    demand = np.full(n, np.inf) if caps is None else caps.astype(np.float64, copy=False)
    live = np.arange(n)
    while live.size:
        p = paths[live]
        count = np.bincount(p.ravel(), minlength=nlinks)
        used = count > 0
        share = np.full(nlinks, np.inf)
        share[used] = residual[used] / count[used]
        step = float(share.min())
        headroom = demand[live] - rates[live]
        step = min(step, float(headroom.min()))
        if not np.isfinite(step):
            raise ValueError("a flow crosses no finite link and has no cap: its rate is unbounded")
        step = max(step, 0.0)
        rates[live] += step
        residual -= step * count
        saturated = used & (residual <= tol)
        d = demand[live]
        capped = np.isfinite(d) & (d - rates[live] <= d * REL_TOL)
        done = saturated[p].any(axis=1) | capped
        if not done.any():  # rounding left no link exactly saturated: freeze the tightest
            done = share[p].min(axis=1) <= step
        live = live[~done]
    return rates


def link_loads(paths: IntArray, rates: FloatArray, nlinks: int) -> FloatArray:
    """Total rate on every link (the pad link included) of flows at ``rates``."""
    width = paths.shape[1] if paths.ndim == 2 else 0
    loads = np.bincount(paths.ravel(), weights=np.repeat(rates, width), minlength=nlinks)
    return loads.astype(np.float64, copy=False)
