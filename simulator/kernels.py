"""The flow engine's per-event loops, compiled with numba.

Every event of a run advances all flows and link counters to its time, looks for the
next departure and, after a rate computation, adds the flows' rates up per link. In
numpy each is a dozen small operations on every event; compiled, each is one pass over
the flow slots (a few thousand) or the links, which keeps the engine's cost per event
near that of the rate computation itself (:mod:`simulator.maxmin`).
"""

from __future__ import annotations

import numba
import numpy as np

from simulator.maxmin import FloatArray, IntArray

BoolArray = np.ndarray


@numba.njit(cache=True, nogil=True)
def advance(  # noqa: PLR0917 (numba compiles positional arguments only)
    active: BoolArray,
    remaining: FloatArray,
    rate: FloatArray,
    dt: float,
    sent: FloatArray,
    kv_sent: FloatArray,
    carried: FloatArray,
    kv_load: FloatArray,
) -> None:
    """``dt`` seconds at the current rates: bytes left per flow, bytes sent per link."""
    for f in range(active.shape[0]):
        if active[f]:
            remaining[f] -= rate[f] * dt / 8.0
    for link in range(sent.shape[0]):
        sent[link] += carried[link] * dt / 8.0
        kv_sent[link] += kv_load[link] * dt / 8.0


@numba.njit(cache=True, nogil=True)
def next_departure(
    active: BoolArray, remaining: FloatArray, rate: FloatArray
) -> tuple[float, IntArray]:
    """Seconds until the next flow ends, and every flow that ends then (within 1 ns)."""
    best = np.inf
    for f in range(active.shape[0]):
        if active[f] and rate[f] > 0.0:
            t = remaining[f] * 8.0 / rate[f]
            best = min(best, t)
    if not np.isfinite(best):
        return best, np.empty(0, dtype=np.int64)
    limit = best + max(1e-9, best * 1e-9)
    out = []
    for f in range(active.shape[0]):
        if active[f] and rate[f] > 0.0 and remaining[f] * 8.0 / rate[f] <= limit:
            out.append(f)
    return best, np.array(out, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def loads(  # noqa: PLR0917 (numba compiles positional arguments only)
    paths: IntArray, idx: IntArray, rates: FloatArray, kv: BoolArray, nlinks: int, pad: int
) -> tuple[FloatArray, FloatArray]:
    """Total rate, and rate of KV flows, on every link (0 on the pad link)."""
    load = np.zeros(nlinks)
    kv_load = np.zeros(nlinks)
    for i in range(idx.shape[0]):
        f = idx[i]
        r = rates[i]
        for j in range(paths.shape[1]):
            link = paths[f, j]
            if link != pad:
                load[link] += r
                if kv[f]:
                    kv_load[link] += r
    return load, kv_load
