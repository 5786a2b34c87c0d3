"""Safety state: per-pair baselines, reroute marks, and the fallback to ECMP.

A *pair* is (source leaf, destination leaf): the design's (prefill rack, decode
rack), which shares its candidate paths and gathers samples faster than host pairs.

Baselines. KV transfers differ in size, so a pair's baseline is the rolling median
of *seconds per byte* over its last ``baseline_window`` completions; the baseline
for a transfer is that median times its bytes. Until ``baseline_min_samples``
completions exist there is no baseline and nothing is slow.

Reroutes. A pinned transfer slower than ``slow_factor`` times its baseline (or one
that timed out) marks its pair: for one ``reroute_window`` the pair's transfers avoid
the spine that was slow (the counters did not show what slowed it, so the picture
of that path is not trusted), unless every other candidate is expected to take more
than ``selection.max_cost_ratio`` times as long as it: the mark then yields and is
lifted (:mod:`selection`), since a guess must not outweigh what every counter
measures now. Each new mark is a reroute; slow completions on the
spine already avoided add none, so a burst that was slow together counts once. More
than ``reroute_limit`` reroutes within ``reroute_window`` disable kv-aware placement
(ECMP everywhere, an alert) until an operator re-enables it or ``quiet_period`` has
passed since the fallback.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

from controller.config import SafetySettings


@dataclass(slots=True)
class PairMemory:
    """What the engine remembers of one (source leaf, destination leaf) pair."""

    last_spine: str | None = None
    avoid_spine: str | None = None
    avoid_until: float = 0.0
    last_ratio: float | None = None
    spb: deque[float] = field(default_factory=deque)

    def avoiding(self, now: float) -> str | None:
        """The spine this pair avoids at ``now``, if any."""
        if self.avoid_spine is not None and now >= self.avoid_until:
            self.avoid_spine = None
        return self.avoid_spine

    def baseline_s(self, size: int, min_samples: int) -> float | None:
        """Baseline duration for ``size`` bytes, or None with too few samples."""
        if len(self.spb) < min_samples:
            return None
        return statistics.median(self.spb) * size

    def record(self, duration_s: float, size: int, window: int) -> None:
        """Add a completion to the rolling window."""
        self.spb.append(duration_s / size)
        while len(self.spb) > window:
            self.spb.popleft()


class RerouteGuard:
    """Counts reroutes in a sliding window and holds the fallback state."""

    def __init__(self, settings: SafetySettings) -> None:
        self.settings = settings
        self.recent: deque[float] = deque()
        self.fallback_since: float | None = None
        self.total = 0

    @property
    def tripped(self) -> bool:
        """True while kv-aware placement is disabled."""
        return self.fallback_since is not None

    def reroute(self, now: float) -> bool:
        """Count a reroute at ``now``; True when this one trips the fallback."""
        self.total += 1
        self.recent.append(now)
        self._expire(now)
        if self.fallback_since is None and len(self.recent) > self.settings.reroute_limit:
            self.fallback_since = now
            return True
        return False

    def count(self, now: float) -> int:
        """Reroutes within the window ending at ``now``."""
        self._expire(now)
        return len(self.recent)

    def quiet_over(self, now: float) -> bool:
        """True when a fallback has lasted its quiet period."""
        return (
            self.fallback_since is not None
            and now - self.fallback_since >= self.settings.quiet_period_s
        )

    def reset(self) -> None:
        """Re-enable placement: forget the fallback and the reroutes that caused it."""
        self.fallback_since = None
        self.recent.clear()

    def _expire(self, now: float) -> None:
        horizon = now - self.settings.reroute_window_s
        while self.recent and self.recent[0] <= horizon:
            self.recent.popleft()
