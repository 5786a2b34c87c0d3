"""The flow-level engine: event-driven, max-min fair rates between events.

Between two events every flow runs at a constant rate: its max-min fair share
(:mod:`simulator.maxmin`) of the links it crosses, after the constant-rate flows
(UDP background, which does not back off) have taken their part of each link. A
constant-rate flow crosses a path like any flow and may be moved; where such flows
offer a link more than its capacity, the link drops the excess in proportion
(:mod:`simulator.droptail`), so no link carries more than its capacity and the links
downstream see what is left. An event is anything that changes the picture:

- a flow starts, finishes, moves to another path or is dropped;
- a link's capacity changes (a cable fails: capacity 0; it comes back; it is
  re-provisioned at another rate), or a constant-rate flow starts, moves or stops;
- a timer fires (the drivers of the modes use timers for arrivals, telemetry polls,
  pin writes, flowlet gaps, time-outs and utilisation samples).

The loop takes the earlier of the next timer and the next departure (the smallest
``remaining / rate``), advances every flow's remaining bytes and every link's byte
counters to it in one vector operation, handles everything due at that instant, and
recomputes rates once if anything changed. Timers marked ``daemon`` (periodic polls
and samples) do not keep the simulation alive: it ends when no flow is active and
only daemon timers are left. A flow stalled at rate 0 (its path is down) waits for an
event; with none left it stays unfinished and :meth:`FlowEngine.run` returns.

Link counters (cumulative bytes, and bytes of the KV class) are what a switch's
egress port counters would read; :mod:`simulator.kvaware` turns them into the
controller's telemetry.

**Rate policy** (:class:`~simulator.engine.RatePolicy`). Rates are max-min fair
(``max-min``, every mode but one) or, for the ``bound`` reference, served by shortest
remaining processing time first (``srpt``, :mod:`simulator.srpt`; ties go to the
older flow).

**Pools.** A flow may cross the network's pool links (a sprayed transfer,
:mod:`simulator.reference`). A pool's capacity is its members' capacities less their
constant-rate traffic, recomputed with them, so a cable that fails or is re-provisioned
changes its pool at once; after every allocation the pools' load is spread back over
their member links (:func:`simulator.kernels.spread_pools`), so that counters and
``utilisation()`` describe the physical links.

:class:`FlowEngine` implements :class:`simulator.engine.FabricEngine`, the interface
every simulator engine offers to the drivers of the modes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from simulator import kernels
from simulator.droptail import constant_rates
from simulator.engine import DoneCallback, FabricEngine, RatePolicy
from simulator.maxmin import FloatArray, max_min_rates
from simulator.network import Network
from simulator.srpt import srpt_rates

FINISH_BYTES = 1e-3
"""A flow with fewer bytes left than this (or less than a nanosecond of them) is done."""


class FlowEngine(FabricEngine):
    """The flow-level simulator of one run (see the module docstring)."""

    def __init__(self, network: Network, policy: RatePolicy = RatePolicy.MAX_MIN) -> None:
        super().__init__()
        self.network = network
        self.policy = policy
        n = network.nlinks
        self.base_capacity: FloatArray = network.capacity.copy()
        self.fixed_bg: FloatArray = np.zeros(n)
        """What constant-rate flows offer each link (after the drops upstream)."""
        self.sent_bytes: FloatArray = np.zeros(n)
        self.kv_bytes: FloatArray = np.zeros(n)
        self.load_bps: FloatArray = np.zeros(n)
        self.kv_load_bps: FloatArray = np.zeros(n)
        self._carried: FloatArray = np.zeros(n)  # flows and fixed background, per link
        cap = network.capacity
        ok = np.isfinite(cap) & (cap > 0)
        self._nominal: FloatArray = np.where(ok, cap, np.inf)  # utilisation's divisor
        self._fixed_carried: FloatArray = np.zeros(n)
        size = 64
        self._paths = np.full((size, network.path_width), network.pad, dtype=np.int64)
        self._remaining: FloatArray = np.zeros(size)
        self._rate: FloatArray = np.zeros(size)
        self._cap: FloatArray = np.full(size, np.inf)
        self._order = np.zeros(size, dtype=np.int64)  # start order (SRPT's tie-break)
        self._started = itertools.count()
        self._kv = np.zeros(size, dtype=bool)
        self._active = np.zeros(size, dtype=bool)
        self._done: list[DoneCallback | None] = [None] * size
        self._free: list[int] = list(range(size - 1, -1, -1))
        self._dirty = False
        self._capacity: FloatArray | None = None  # left for flows; None: recompute
        self.reallocations = 0
        self._constant: dict[int, tuple[tuple[int, ...], float]] = {}  # id < 0: path, bps
        self._delivered: dict[int, float] = {}
        self._constants = itertools.count(1)

    # -- flows ----------------------------------------------------------------------

    def _start(self, links: Sequence[int], nbytes: float, on_done: DoneCallback | None,
               kv: bool, cap_bps: float) -> int:  # fmt: skip
        """A flow in a free slot, at rate 0 until the next allocation."""
        if not self._free:
            self._grow()
        f = self._free.pop()
        self._paths[f] = self.network.pad
        self._paths[f, : len(links)] = links
        self._remaining[f] = nbytes
        self._rate[f] = 0.0
        self._cap[f] = cap_bps
        self._order[f] = next(self._started)
        self._kv[f] = kv
        self._active[f] = True
        self._done[f] = on_done
        self._dirty = True
        return f

    def start_background(self, links: Sequence[int], bps: float, *, elastic: bool) -> int:
        """Background over ``links`` from now on: an elastic flow capped at ``bps`` (TCP),
        or a constant-rate flow (UDP, its id negative) that the links clip."""
        if bps <= 0:
            raise ValueError(f"background needs a positive rate, got {bps}")
        if elastic:
            return self._start(links, math.inf, None, False, bps)
        flow = -next(self._constants)
        self._constant[flow] = (tuple(links), float(bps))
        self._changed_constant()
        return flow

    def _changed_constant(self) -> None:
        self._capacity = None
        self._dirty = True

    def reroute(self, flow: int, links: Sequence[int]) -> None:
        """Move an active flow onto ``links`` now."""
        if flow < 0:
            self._constant[flow] = (tuple(links), self._check_constant(flow)[1])
            self._changed_constant()
            return
        self._check(flow)
        self._paths[flow] = self.network.pad
        self._paths[flow, : len(links)] = links
        self._dirty = True

    def stop_flow(self, flow: int) -> float:
        """Drop an active flow now (a time-out); return the bytes it had left."""
        if flow < 0:
            self._check_constant(flow)
            del self._constant[flow]
            self._changed_constant()
            return math.inf
        self._check(flow)
        left = float(self._remaining[flow])
        self._release(flow)
        return left

    def is_active(self, flow: int) -> bool:
        """True while ``flow`` has bytes left (a constant-rate flow: until stopped)."""
        if flow < 0:
            return flow in self._constant
        return flow < self._active.size and bool(self._active[flow])

    def path_of(self, flow: int) -> tuple[int, ...]:
        """The links ``flow`` crosses now (without padding)."""
        if flow < 0:
            return tuple(x for x in self._check_constant(flow)[0] if x != self.network.pad)
        self._check(flow)
        return tuple(int(x) for x in self._paths[flow] if x != self.network.pad)

    def rate_of(self, flow: int) -> float:
        """The current rate of ``flow`` in bit/s (a constant-rate flow: what it delivers)."""
        if self._dirty:
            self._reallocate()
        if flow < 0:
            self._check_constant(flow)
            return self._delivered[flow]
        return float(self._rate[flow])

    def _check_constant(self, flow: int) -> tuple[tuple[int, ...], float]:
        got = self._constant.get(flow)
        if got is None:
            raise KeyError(f"no constant-rate flow {flow}")
        return got

    @property
    def active_flows(self) -> int:
        """Flows with bytes left (constant-rate flows not counted)."""
        return int(self._active.sum())

    # -- links ----------------------------------------------------------------------

    def set_capacity(self, link: int, bps: float) -> None:
        """Set a link's capacity now (0: the cable is down; a pool's capacity follows its
        members' and is not set)."""
        self.base_capacity[link] = bps
        self._capacity = None
        self._dirty = True

    def carried_bps(self) -> FloatArray:
        """Each link's carried rate now: its flows' and its constant-rate traffic's (never
        more than its capacity)."""
        if self._dirty:
            self._reallocate()
        return self._carried.copy()

    def utilisation(self) -> FloatArray:
        """Each link's current load over its nominal capacity (0 for a link at 0)."""
        if self._dirty:
            self._reallocate()
        out: FloatArray = np.minimum((self.load_bps + self._fixed_carried) / self._nominal, 1.0)
        return out

    # -- the loop -------------------------------------------------------------------

    def run(self, until: float = math.inf) -> None:
        """Advance until nothing is left to do (or ``until``)."""
        while True:
            if self._dirty:
                self._reallocate()
            t_dep, due = self._next_departure()
            t_evt = self.next_timer()
            if self._pending == 0 and not math.isfinite(t_dep):
                return  # only daemons left, and no flow can finish
            t = min(t_dep, t_evt)
            if t > until:
                self._advance(until)
                return
            self._advance(t)
            if t_dep <= t_evt:
                self._finish(due)
            else:
                self.fire_due(t)

    def _next_departure(self) -> tuple[float, np.ndarray]:
        dt, due = kernels.next_departure(self._active, self._remaining, self._rate)
        return self.now + dt, due

    def _advance(self, t: float) -> None:
        dt = t - self.now
        if dt > 0:
            kernels.advance(
                self._active,
                self._remaining,
                self._rate,
                dt,
                self.sent_bytes,
                self.kv_bytes,
                self._carried,
                self.kv_load_bps,
            )
        self.now = max(self.now, t)

    def _finish(self, due: np.ndarray) -> None:
        callbacks: list[tuple[int, DoneCallback]] = []
        for f in due.tolist():
            if not self._active[f]:
                continue
            on_done = self._done[f]
            self._release(f)
            if on_done is not None:
                callbacks.append((f, on_done))
        for f, on_done in callbacks:
            self.events += 1
            on_done(f, self.now)

    def _reallocate(self) -> None:
        self._dirty = False
        self.reallocations += 1
        idx = np.flatnonzero(self._active)
        net = self.network
        if self._capacity is None:
            self._clip_constant()
            self._capacity = np.maximum(self.base_capacity - self.fixed_bg, 0.0)
            self._capacity[net.pad] = np.inf
            self._capacity[net.pool_links] = 0.0
            np.add.at(self._capacity, net.pool_owner, self._capacity[net.pool_member])
        if self.policy is RatePolicy.SRPT:
            rates = srpt_rates(
                self._paths[idx], self._capacity, self._cap[idx], self._remaining[idx],
                self._order[idx],
            )  # fmt: skip
        else:
            rates = max_min_rates(self._paths[idx], self._capacity, self._cap[idx])
        self._rate[idx] = rates
        self.load_bps, self.kv_load_bps = kernels.loads(
            self._paths, idx, rates, self._kv, net.nlinks, net.pad
        )
        if net.pool_links.size and self.load_bps[net.pool_links].any():
            kernels.spread_pools(
                self._paths, idx, rates, self._kv, net.is_pool, net.pool_of, net.pool_member,
                net.pool_owner, self._capacity, self.load_bps, self.kv_load_bps,
            )  # fmt: skip
        self._carried = self.load_bps + self._fixed_carried

    def _clip_constant(self) -> None:
        """What the constant-rate flows offer, and the links carry, at today's capacities."""
        net = self.network
        ids = list(self._constant)
        paths = np.full((len(ids), net.path_width), net.pad, dtype=np.int64)
        rates = np.zeros(len(ids))
        for i, flow in enumerate(ids):
            links, bps = self._constant[flow]
            paths[i, : len(links)] = links
            rates[i] = bps
        capacity = self.base_capacity.copy()
        capacity[net.pad] = np.inf
        self.fixed_bg, self._fixed_carried, delivered = constant_rates(paths, rates, capacity)
        self.fixed_bg[net.pad] = 0.0
        self._fixed_carried[net.pad] = 0.0
        self._fixed_carried[net.pool_links] = 0.0
        self._delivered = {flow: float(d) for flow, d in zip(ids, delivered, strict=True)}

    def _release(self, f: int) -> None:
        self._active[f] = False
        self._rate[f] = 0.0
        self._remaining[f] = 0.0
        self._done[f] = None
        self._free.append(f)
        self._dirty = True

    def _check(self, flow: int) -> None:
        if flow < 0 or not self.is_active(flow):
            raise KeyError(f"no active flow {flow}")

    def _grow(self) -> None:
        old = self._active.size
        new = old * 2
        paths = np.full((new, self.network.path_width), self.network.pad, dtype=np.int64)
        paths[:old] = self._paths
        self._paths = paths
        self._remaining = np.concatenate([self._remaining, np.zeros(old)])
        self._rate = np.concatenate([self._rate, np.zeros(old)])
        self._cap = np.concatenate([self._cap, np.full(old, np.inf)])
        self._order = np.concatenate([self._order, np.zeros(old, dtype=np.int64)])
        self._kv = np.concatenate([self._kv, np.zeros(old, dtype=bool)])
        self._active = np.concatenate([self._active, np.zeros(old, dtype=bool)])
        self._done.extend([None] * old)
        self._free.extend(range(new - 1, old - 1, -1))
