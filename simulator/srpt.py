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

from simulator.maxmin import FloatArray, IntArray


def srpt_rates(
    paths: IntArray, capacity: FloatArray, caps: FloatArray, remaining: FloatArray,
    order: IntArray,
) -> FloatArray:  # fmt: skip
    """Rates of the flows (rows of ``paths``) served greedily by fewest ``remaining`` bytes,
    ties broken by ``order`` (smaller first: the older flow)."""
    n = paths.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    if np.any(capacity < 0):
        raise ValueError("link capacities must not be negative")
    turn = np.lexsort((order, remaining)).astype(np.int64)
    rates = np.zeros(n, dtype=np.float64)
    if not _serve(
        np.ascontiguousarray(paths, dtype=np.int64),
        np.ascontiguousarray(capacity, dtype=np.float64),
        np.ascontiguousarray(caps, dtype=np.float64),
        turn,
        rates,
    ):
        raise ValueError("a flow crosses no finite link and has no cap: its rate is unbounded")
    return rates


@numba.njit(cache=True, nogil=True)
def _serve(
    paths: IntArray, capacity: FloatArray, caps: FloatArray, turn: IntArray, rates: FloatArray
) -> bool:
    """Serve the flows in ``turn`` order into ``rates``; False if a rate is unbounded."""
    residual = capacity.copy()
    width = paths.shape[1]
    for k in range(turn.shape[0]):
        i = turn[k]
        r = caps[i]
        for j in range(width):
            r = min(r, residual[paths[i, j]])
        if not np.isfinite(r):
            return False
        r = max(r, 0.0)
        rates[i] = r
        if r > 0.0:
            for j in range(width):
                residual[paths[i, j]] -= r
    return True
