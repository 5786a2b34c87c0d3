"""The engine's picture of every egress port: measured load and its own placements.

Ports are numbered once (``index``) and their figures kept in flat lists, so that a
decision reads a few list slots per candidate path and nothing else:

- ``avail_bps[i]``: capacity left by the background traffic (smoothed), floored at
  1% of the capacity so that a saturated port is very expensive, not infinitely so;
- ``qdelay_s[i]``: queueing delay from the deepest queue of the last read;
- ``inflight[i]``: bytes of KV transfers the engine placed on the port and has not
  yet seen complete. Adding or removing a transfer touches only its own ports, so a
  decision costs O(paths), however many transfers are in flight.

Each port also keeps a short history of (time, bytes sent so far), which the offline
recomputation of scheduling efficiency reads after a transfer ends.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from controller.telemetry_math import PortCounters, PortState, advance
from controller.topology import EgressPort, PortRef

MIN_AVAILABLE = 0.01
"""Floor of the available share of a port's capacity."""


class LoadTable:
    """Per egress port: capacity, measured load, queueing, in-flight bytes, history."""

    def __init__(self, ports: Iterable[EgressPort], history_s: float) -> None:
        self.ports: list[EgressPort] = list(ports)
        self.index: dict[PortRef, int] = {p.ref: i for i, p in enumerate(self.ports)}
        n = len(self.ports)
        self.capacity: list[float] = [float(p.capacity_bps) for p in self.ports]
        self.avail_bps: list[float] = list(self.capacity)
        self.qdelay_s: list[float] = [0.0] * n
        self.inflight: list[int] = [0] * n
        self.state: list[PortState | None] = [None] * n
        self.history: list[deque[tuple[float, int]]] = [deque() for _ in range(n)]
        self.history_s = history_s
        self.by_switch: dict[str, list[int]] = {}
        for i, p in enumerate(self.ports):
            self.by_switch.setdefault(p.ref.switch, []).append(i)
        self.sampled_at: dict[str, float] = {}

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
            if not after.sampled:
                self.history[i].append((now, 0))
                continue
            cap = self.capacity[i]
            self.avail_bps[i] = cap * max(MIN_AVAILABLE, 1.0 - after.bg_util)
            self.qdelay_s[i] = after.queue_delay_s
            hist = self.history[i]
            hist.append((now, after.sent_bytes))
            while len(hist) > 2 and hist[1][0] < now - self.history_s:
                hist.popleft()
            updated.append(i)
        if updated:
            self.sampled_at[switch] = now
        return updated

    def util(self, i: int) -> float:
        """Smoothed total utilisation of port ``i`` (0 before its first sample)."""
        st = self.state[i]
        return st.util if st is not None else 0.0

    def bg_util(self, i: int) -> float:
        """Smoothed background (non-KV) utilisation of port ``i``."""
        st = self.state[i]
        return st.bg_util if st is not None else 0.0

    # -- the engine's own placements -------------------------------------------------

    def add(self, contributions: Sequence[tuple[int, int]]) -> None:
        """Count ``(port, bytes)`` of a newly placed transfer."""
        inflight = self.inflight
        for i, b in contributions:
            inflight[i] += b

    def remove(self, contributions: Sequence[tuple[int, int]]) -> None:
        """Forget ``(port, bytes)`` of a transfer that ended; never below zero."""
        inflight = self.inflight
        for i, b in contributions:
            inflight[i] = max(0, inflight[i] - b)

    # -- history ----------------------------------------------------------------------

    def sent_between(self, i: int, t0: float, t1: float) -> tuple[int, float] | None:
        """Bytes port ``i`` sent over the smallest sampled window covering [t0, t1].

        Returns (bytes, window seconds), or None when no sample at or after ``t1``
        exists yet, or none at or before ``t0`` is still kept.
        """
        hist = self.history[i]
        if not hist or hist[-1][0] < t1 or hist[0][0] > t0:
            return None
        lo = bisect_right(hist, t0, key=_time) - 1
        hi = bisect_left(hist, t1, key=_time)
        (ta, sa), (tb, sb) = hist[lo], hist[hi]
        if tb <= ta:
            return None
        return sb - sa, tb - ta


def _time(entry: tuple[float, int]) -> float:
    return entry[0]
