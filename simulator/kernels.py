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


@numba.njit(cache=True, nogil=True)
def spread_pools(  # noqa: PLR0917 (numba compiles positional arguments only)
    paths: IntArray,
    idx: IntArray,
    rates: FloatArray,
    kv: BoolArray,
    is_pool: BoolArray,
    pool_of: IntArray,
    members: IntArray,
    owners: IntArray,
    room: FloatArray,
    load: FloatArray,
    kv_load: FloatArray,
) -> None:
    """Move the load of pool links onto their member links, in place.

    A flow that crosses a pool and one of its members (background on a cable, which
    shares the pool) is already counted on that member. The rest of a pool's load goes
    to its members in proportion to their spare capacity: ``room`` (each link's
    capacity less its fixed background) less what the member already carries. A pool
    never carries more than its members' room, so no member is filled past it. Pool
    links carry nothing afterwards.
    """
    nlinks = load.shape[0]
    sprayed = np.zeros(nlinks)
    sprayed_kv = np.zeros(nlinks)
    width = paths.shape[1]
    for i in range(idx.shape[0]):
        f = idx[i]
        for j in range(width):
            pool = paths[f, j]
            if not is_pool[pool] or load[pool] <= 0.0:
                continue
            on_member = False
            for k in range(width):
                if pool_of[paths[f, k]] == pool:
                    on_member = True
            if not on_member:
                sprayed[pool] += rates[i]
                if kv[f]:
                    sprayed_kv[pool] += rates[i]
    spare = np.zeros(members.shape[0])
    total = np.zeros(nlinks)
    for k in range(members.shape[0]):
        spare[k] = max(room[members[k]] - load[members[k]], 0.0)
        total[owners[k]] += spare[k]
    for k in range(members.shape[0]):
        pool = owners[k]
        if sprayed[pool] > 0.0 and total[pool] > 0.0:
            share = spare[k] / total[pool]
            load[members[k]] += sprayed[pool] * share
            kv_load[members[k]] += sprayed_kv[pool] * share
    for k in range(owners.shape[0]):
        load[owners[k]] = 0.0
        kv_load[owners[k]] = 0.0
