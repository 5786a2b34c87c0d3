"""The engine's picture of every egress port: measured load and its own placements.

Ports are numbered once (``index``) and their figures kept in flat lists, so that a
decision reads a few list slots per candidate path and nothing else:

- ``avail_bps[i]``: capacity left by the background traffic (smoothed), floored at
  1% of the capacity so that a saturated port is very expensive, not infinitely so;
- ``qdelay_s[i]``: queueing delay from the deepest queue of the last read;
- ``inflight[i]``: bytes of KV transfers the engine placed on the port and has not
  yet seen complete. Adding or removing a transfer touches only its own ports, so a
  decision costs O(paths), however many transfers are in flight. A table built with
  ``count_placements=False`` keeps them at zero (the ``inflight_accounting`` setting:
  a controller that sees only its polls, for studies of herding).

Each port also keeps a short history of (time, bytes sent so far, KV bytes sent so
far), as lists that bisect searches directly, which the offline recomputation of
scheduling efficiency and the link audit's counter evidence read. ``fresh_epoch``
changes whenever a switch's telemetry turns fresh, so that the engine can cache each
pair's fresh candidates.

A port's capacity is the fabric file's until its switch reports another speed
(:meth:`LoadTable.set_capacity`): the measured load keeps its bit/s, so its shares of
the new capacity are rescaled, and every list (and its numpy mirror) changes in place,
since the fluid picture and the path selection hold them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from controller.engine.telemetry_math import PortCounters, PortState, advance
from controller.topology import EgressPort, PortRef

MIN_AVAILABLE = 0.01
"""Floor of the available share of a port's capacity."""


class LoadTable:
    """Per egress port: capacity, measured load, queueing, in-flight bytes, history."""

    def __init__(
        self,
        ports: Iterable[EgressPort],
        history_s: float,
        staleness_s: float,
        *,
        count_placements: bool = True,
    ) -> None:
        self.count_placements = count_placements
        self.ports: list[EgressPort] = list(ports)
        self.index: dict[PortRef, int] = {p.ref: i for i, p in enumerate(self.ports)}
        n = len(self.ports)
        self.capacity: list[float] = [float(p.capacity_bps) for p in self.ports]
        self.avail_bps: list[float] = list(self.capacity)
        self.util: list[float] = [0.0] * n
        self.qdelay_s: list[float] = [0.0] * n
        self.inflight: list[int] = [0] * n
        self.arrays = PortArrays(self.capacity)
        """The same figures as numpy arrays, for the vectorised path selection."""
        self.state: list[PortState | None] = [None] * n
        self.hist_t: list[list[float]] = [[] for _ in range(n)]
        self.hist_sent: list[list[int]] = [[] for _ in range(n)]
        self.hist_kv: list[list[int]] = [[] for _ in range(n)]
        self.history_s = history_s
        self.staleness_s = staleness_s
        self.by_switch: dict[str, list[int]] = {}
        for i, p in enumerate(self.ports):
            self.by_switch.setdefault(p.ref.switch, []).append(i)
        self.sampled_at: dict[str, float] = {}
        self.fresh_epoch = 0
        """Grows whenever a switch becomes fresh again (or for the first time)."""

    # -- telemetry ------------------------------------------------------------------

    def ingest(
        self, switch: str, ports: Mapping[int, PortCounters], now: float, tau_s: float
    ) -> list[int]:
        """Fold one poll of ``switch`` in; return the indexes of ports with a new sample.

        Ports the topology does not know are ignored. The switch counts as sampled at
        ``now`` once at least one of its ports has a utilisation.
        """
        updated: list[int] = []
        for number, counters in ports.items():
            i = self.index.get(PortRef(switch, number))
            if i is None:
                continue
            before = self.state[i]
            after = advance(before, counters, now, self.capacity[i], tau_s)
            if after is before:
                continue
            self.state[i] = after
            self._remember(i, now, after.sent_bytes, after.kv_sent_bytes)
            if not after.sampled:
                continue
            cap = self.capacity[i]
            avail = self.avail_bps[i] = cap * max(MIN_AVAILABLE, 1.0 - after.bg_util)
            self.util[i] = after.util
            self.qdelay_s[i] = after.queue_delay_s
            self.arrays.set(i, avail, after.util, after.queue_delay_s)
            updated.append(i)
        if updated:
            last = self.sampled_at.get(switch)
            if last is None or now - last > self.staleness_s:
                self.fresh_epoch += 1
            self.sampled_at[switch] = now
        return updated

    def _remember(self, i: int, now: float, sent: int, kv: int) -> None:
        times, sents, kvs = self.hist_t[i], self.hist_sent[i], self.hist_kv[i]
        times.append(now)
        sents.append(sent)
        kvs.append(kv)
        if len(times) > _TRIM_EVERY:
            keep_from = bisect_right(times, now - self.history_s) - 1
            if keep_from > _TRIM_EVERY // 2:
                del times[:keep_from]
                del sents[:keep_from]
                del kvs[:keep_from]

    def is_fresh(self, switch: str, now: float) -> bool:
        """True when ``switch`` was sampled within the staleness limit."""
        last = self.sampled_at.get(switch)
        return last is not None and now - last <= self.staleness_s

    def set_capacity(self, i: int, bps: float) -> None:
        """Port ``i`` runs at ``bps`` from now on: its load keeps its bit/s (its
        utilisations, and the queueing delay its depth makes, are rescaled) and its
        available bandwidth follows, in every list and array, in place."""
        old = self.capacity[i]
        self.capacity[i] = float(bps)
        self.arrays.capacity[i] = float(bps)
        self.ports[i] = replace(self.ports[i], capacity_bps=int(bps))
        state = self.state[i]
        avail = float(bps)
        if state is not None and state.sampled:
            scale = old / bps
            state = self.state[i] = replace(
                state,
                util=min(1.0, state.util * scale),
                bg_util=min(1.0, state.bg_util * scale),
                raw_util=min(1.0, state.raw_util * scale),
                queue_delay_s=state.queue_delay_s * scale,
            )
            avail = bps * max(MIN_AVAILABLE, 1.0 - state.bg_util)
            self.util[i] = state.util
            self.qdelay_s[i] = state.queue_delay_s
        self.avail_bps[i] = avail
        self.arrays.set(i, avail, self.util[i], self.qdelay_s[i])

    # -- the engine's own placements -------------------------------------------------

    def add(self, contributions: Sequence[tuple[int, int]]) -> None:
        """Count ``(port, bytes)`` of a newly placed transfer (unless placements are not
        counted)."""
        if not self.count_placements:
            return
        inflight, mirror = self.inflight, self.arrays.inflight
        for i, b in contributions:
            inflight[i] += b
            mirror[i] = inflight[i]

    def remove(self, contributions: Sequence[tuple[int, int]]) -> None:
        """Forget ``(port, bytes)`` of a transfer that ended; never below zero."""
        inflight, mirror = self.inflight, self.arrays.inflight
        for i, b in contributions:
            inflight[i] = max(0, inflight[i] - b)
            mirror[i] = inflight[i]

    # -- history ----------------------------------------------------------------------

    def sent_between(self, i: int, t0: float, t1: float) -> tuple[int, float] | None:
        """Bytes port ``i`` sent over the smallest sampled window covering [t0, t1].

        Returns (bytes, window seconds), or None when no sample at or after ``t1``
        exists yet, or none at or before ``t0`` is still kept.
        """
        times = self.hist_t[i]
        lo = bisect_right(times, t0) - 1
        hi = bisect_left(times, t1)
        if lo < 0 or hi >= len(times) or times[hi] <= times[lo]:
            return None
        sents = self.hist_sent[i]
        return sents[hi] - sents[lo], times[hi] - times[lo]

    def sent_at(self, i: int, t: float) -> float | None:
        """Bytes port ``i`` had sent by time ``t``, interpolated between its samples.

        None when ``t`` is outside the kept history (before the first sample or after
        the last): counters of different switches are read at slightly different
        times, and interpolating to one instant keeps their differences honest.
        """
        times = self.hist_t[i]
        if not times or t < times[0] or t > times[-1]:
            return None
        hi = bisect_left(times, t)
        sents = self.hist_sent[i]
        if times[hi] == t or hi == 0:
            return float(sents[hi])
        t0, t1 = times[hi - 1], times[hi]
        s0, s1 = sents[hi - 1], sents[hi]
        return s0 + (s1 - s0) * (t - t0) / (t1 - t0)


_TRIM_EVERY = 256


FloatArray = npt.NDArray[np.float64]


class PortArrays:
    """The load table's per-port figures as numpy arrays, kept equal to its lists (which
    the rest of the engine reads one port at a time): what path selection reads for
    every candidate at once (:func:`~controller.engine.selection.evaluate`)."""

    __slots__ = ("avail", "capacity", "inflight", "qdelay", "util")

    def __init__(self, capacity: Sequence[float]) -> None:
        self.capacity: FloatArray = np.array(capacity, dtype=np.float64)
        self.avail: FloatArray = self.capacity.copy()
        self.util: FloatArray = np.zeros(len(capacity))
        self.qdelay: FloatArray = np.zeros(len(capacity))
        self.inflight: FloatArray = np.zeros(len(capacity))

    def set(self, i: int, avail: float, util: float, qdelay: float) -> None:
        """Port ``i``'s new sample."""
        self.avail[i] = avail
        self.util[i] = util
        self.qdelay[i] = qdelay
