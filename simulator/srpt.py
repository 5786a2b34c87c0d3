"""Shortest remaining processing time first: rates by priority instead of by fairness.

The ``bound`` mode (:mod:`simulator.reference`) needs the "big switch" ideal of pFabric
and Sincronia: at every event, flows take rates greedily in order of their remaining
bytes, fewest first, each as much as is left on every link it crosses (and no more
than its cap). A flow's rate is then the least residual capacity along its path when
its turn comes; a flow behind a saturated link gets 0 and waits its turn.

Greedy SRPT is the standard ideal reference for the mean completion time: on one
link it is optimal, but with several shared resources (a NIC, a source rack's and a
destination rack's links) it is a heuristic, not a proven optimum. Rates are
recomputed at every event of the engine (arrival, departure, capacity change), not
when two flows' remaining bytes cross between events, as fluid SRPT references do.

Paths come as :mod:`simulator.maxmin`'s: one ``(flows, width)`` array padded with a
link of infinite capacity. The loop is compiled with numba like
:func:`simulator.maxmin._fill`: one pass over the flows in order, each touching its
``width`` links.
"""

from __future__ import annotations

import numba
import numpy as np

from simulator.maxmin import FloatArray, IntArray, check


def srpt_rates(
    paths: IntArray, capacity: FloatArray, caps: FloatArray, remaining: FloatArray,
    order: IntArray,
) -> FloatArray:  # fmt: skip
    """Rates of the flows (rows of ``paths``) served greedily by fewest ``remaining`` bytes,
    ties broken by ``order`` (smaller first: the older flow)."""
    n = paths.shape[0]
    rates = np.zeros(n, dtype=np.float64)
    if n == 0:
        return rates
    status = _serve(
        np.ascontiguousarray(paths, dtype=np.int64),
        np.ascontiguousarray(capacity, dtype=np.float64),
        np.ascontiguousarray(caps, dtype=np.float64),
        np.ascontiguousarray(remaining, dtype=np.float64),
        np.ascontiguousarray(order, dtype=np.int64),
        rates,
    )
    check(status)
    return rates


@numba.njit(cache=True, nogil=True)
def _serve(  # noqa: PLR0917 (numba compiles positional arguments only)
    paths: IntArray,
    capacity: FloatArray,
    caps: FloatArray,
    remaining: FloatArray,
    order: IntArray,
    rates: FloatArray,
) -> int:
    """Serve the flows by (remaining, order) into ``rates``; the status (``OK``,
    ``UNBOUNDED``, ``NEGATIVE``)."""
    for m in range(capacity.shape[0]):
        if capacity[m] < 0.0:
            return 2
    older = np.argsort(order)
    turn = older[np.argsort(remaining[older], kind="mergesort")]  # stable: ties stay older
    residual = capacity.copy()
    width = paths.shape[1]
    for k in range(turn.shape[0]):
        i = turn[k]
        r = caps[i]
        for j in range(width):
            r = min(r, residual[paths[i, j]])
        if not np.isfinite(r):
            return 1
        r = max(r, 0.0)
        rates[i] = r
        if r > 0.0:
            for j in range(width):
                residual[paths[i, j]] -= r
    return 0
