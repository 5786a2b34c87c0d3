"""Safety state: per-pair baselines, reroute marks, and the fallback to ECMP.

A *pair* is (source leaf, destination leaf): the design's (prefill rack, decode
rack), which shares its candidate paths and gathers samples faster than host pairs.

Baselines. KV transfers differ in size, and in what runs beside them: the engine's
own transfers, the background, how many spines one is split over. A pinned transfer
comes with the engine's expectation (``Decision.expected_s``, from the fluid picture:
:mod:`fluid`), so a pair's baseline is the rolling median, over its last
``baseline_window`` completions, of how much longer than expected its transfers took
(``duration / expected_s``), and the baseline for a transfer is its expectation times
that median: what this pair's transfers usually take *given what the engine knew*.
Measured per byte alone (the earlier baseline), a transfer split over four spines set
a baseline that the next one on one spine, or beside three others of the engine's,
exceeded twice over for no fault of its path; every such "slow" transfer marked its
pair, and in the design's cluster the marks tripped the fallback within seconds and
kept kv-aware placement off (ECMP) for 89% of the run. A transfer with no expectation
(left to ECMP) keeps the per-byte median (``seconds per byte`` times its bytes). Until
``baseline_min_samples`` completions exist there is no baseline and nothing is slow.

Reroutes. Between pods (the simulator's three-tier fabrics) a path is placed on its
first two hops only, and its far side is the superspine's ECMP: a slow completion
there is no evidence against the spine chosen, and marks nothing (a timeout does).
Counted, the bursts' congestion on the destination racks' downlinks, which no placement
of the first hops changes, tripped the fallback in design-cluster-3tier.yaml within
seconds and left kv-aware worse than ECMP at p99 (1,622 ms against 1,317).

A pinned transfer slower than ``slow_factor`` times its baseline (or one
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
    slowdowns: deque[float] = field(default_factory=deque)

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

    def usual_slowdown(self, min_samples: int) -> float | None:
        """The median of ``duration / expected`` of the pair's recent pinned transfers,
        or None with too few samples."""
        if len(self.slowdowns) < min_samples:
            return None
        return statistics.median(self.slowdowns)

    def record_slowdown(self, ratio: float, window: int) -> None:
        """Add a pinned transfer's ``duration / expected`` to the rolling window."""
        self.slowdowns.append(ratio)
        while len(self.slowdowns) > window:
            self.slowdowns.popleft()


def baseline_of(
    memory: PairMemory, size: int, expected_s: float | None, settings: SafetySettings
) -> float | None:
    """A transfer's baseline (see the module docstring): its expectation times the pair's
    usual slowdown, or the per-byte median without an expectation; None until the pair
    has ``baseline_min_samples`` completions of the kind."""
    if expected_s is not None and expected_s > 0:
        usual = memory.usual_slowdown(settings.baseline_min_samples)
        return expected_s * usual if usual is not None else None
    return memory.baseline_s(size, settings.baseline_min_samples)


def remember(
    memory: PairMemory,
    size: int,
    expected_s: float | None,
    duration_s: float,
    settings: SafetySettings,
) -> None:
    """Add a completion to the pair's window of its kind (see :func:`baseline_of`)."""
    if expected_s is not None and expected_s > 0:
        memory.record_slowdown(duration_s / expected_s, settings.baseline_window)
    else:
        memory.record(duration_s, size, settings.baseline_window)


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
