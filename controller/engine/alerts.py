"""Alert conditions of the design, evaluated over fixed windows (5 minutes by default).

- *Latency*: when a window closes, its p99 transfer latency above ``p99_limit``
  fires ``latency_p99``; above ``1 + p99_rise`` times the median of the previous
  windows' p99 within ``median_window`` (the 7-day rolling median; at least three
  earlier windows needed) fires ``latency_p99_rise``.
- *Efficiency*: the share of evaluated transfers that went on the offline best path;
  below ``efficiency_min`` in ``efficiency_windows`` consecutive windows fires
  ``efficiency_low``. A window without evaluated transfers breaks the streak.
- *Tiers*: every raw utilisation sample of a tier's ports in a window goes into a
  histogram (0.1% bins); a mean above ``tier_mean_max`` or a p95 above
  ``tier_p95_max`` fires ``tier_utilisation`` for that tier.

Each condition is re-judged when its window closes, and :class:`AlertBook` turns
judgements into :class:`Alert` updates only when an alert starts or stops.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass

from controller.config import AlertSettings
from controller.engine.telemetry_math import percentile
from controller.engine.updates import Alert
from controller.topology import Tier

_BINS = 1000
MIN_MEDIAN_WINDOWS = 3


class AlertBook:
    """Active alerts; emits an :class:`Alert` only when one starts or stops."""

    def __init__(self) -> None:
        self.active: dict[tuple[str, str], Alert] = {}

    def judge(
        self, name: str, subject: str, firing: bool, message: str, severity: str = "warning"
    ) -> list[Alert]:
        """Record the condition's current state; the update to emit if it changed."""
        key = (name, subject)
        if firing and key not in self.active:
            alert = Alert(name, subject, True, message, severity)
            self.active[key] = alert
            return [alert]
        if not firing and key in self.active:
            del self.active[key]
            return [Alert(name, subject, False, message, severity)]
        return []


class WindowClock:
    """Fixed windows of ``width`` seconds from ``origin``: [origin + k*width, ...)."""

    def __init__(self, origin: float, width: float) -> None:
        self.origin = origin
        self.width = width
        self.current = 0

    def index(self, t: float) -> int:
        """The window ``t`` falls in."""
        return max(0, math.floor((t - self.origin) / self.width))

    def end(self, k: int) -> float:
        """When window ``k`` closes."""
        return self.origin + (k + 1) * self.width


@dataclass(frozen=True, slots=True)
class LatencyWindow:
    """A closed latency window: its p99 and the rolling median it is compared with."""

    end: float
    count: int
    p99_s: float | None
    median_p99_s: float | None


class LatencyWindows:
    """Transfer latencies per window, and the window p99s of the median window."""

    def __init__(self, settings: AlertSettings, origin: float) -> None:
        self.settings = settings
        self.clock = WindowClock(origin, settings.window_s)
        self.samples: list[float] = []
        self.p99s: deque[tuple[float, float]] = deque()

    def add(self, t: float, duration_s: float) -> list[LatencyWindow]:
        """Record a completion at ``t``; returns the windows this closed."""
        closed = self.roll(t)
        self.samples.append(duration_s)
        return closed

    def roll(self, now: float) -> list[LatencyWindow]:
        """Close every window that ended by ``now``."""
        k = self.clock.index(now)
        if k <= self.clock.current:
            return []
        end = self.clock.end(self.clock.current)
        horizon = end - self.settings.median_window_s
        while self.p99s and self.p99s[0][0] <= horizon:
            self.p99s.popleft()
        median = (
            statistics.median(p for _, p in self.p99s)
            if len(self.p99s) >= MIN_MEDIAN_WINDOWS
            else None
        )
        p99 = percentile(self.samples, 99) if self.samples else None
        out = [LatencyWindow(end, len(self.samples), p99, median)]
        if p99 is not None:
            self.p99s.append((end, p99))
        self.samples = []
        self.clock.current = k
        return out

    def alerts(self, window: LatencyWindow, book: AlertBook) -> list[Alert]:
        """Judge the latency conditions on a closed window."""
        s = self.settings
        p99 = window.p99_s
        limit_hit = p99 is not None and p99 > s.p99_limit_s
        rise_hit = (
            p99 is not None
            and window.median_p99_s is not None
            and p99 > (1 + s.p99_rise) * window.median_p99_s
        )
        p99_text = f"{p99 * 1e3:.1f} ms" if p99 is not None else "no transfers"
        out = book.judge(
            "latency_p99",
            "fabric",
            limit_hit,
            f"p99 transfer latency {p99_text} (limit {s.p99_limit_s * 1e3:g} ms)",
        )
        median = window.median_p99_s
        median_text = f"{median * 1e3:.1f} ms" if median is not None else "n/a"
        out += book.judge(
            "latency_p99_rise",
            "fabric",
            rise_hit,
            f"p99 transfer latency {p99_text} vs rolling median {median_text} "
            f"(limit +{s.p99_rise:.0%})",
        )
        return out


@dataclass(frozen=True, slots=True)
class EfficiencyWindow:
    """A closed efficiency window."""

    end: float
    evaluated: int
    efficient: int

    @property
    def ratio(self) -> float | None:
        """Share of evaluated transfers that were on the offline best path."""
        return self.efficient / self.evaluated if self.evaluated else None


class EfficiencyWindows:
    """Offline verdicts per window and the streak of low windows."""

    def __init__(self, settings: AlertSettings, origin: float) -> None:
        self.settings = settings
        self.clock = WindowClock(origin, settings.window_s)
        self.evaluated = 0
        self.efficient = 0
        self.total_evaluated = 0
        self.total_efficient = 0
        self.streak = 0
        self.last: EfficiencyWindow | None = None

    def add(self, t: float, efficient: bool) -> list[EfficiencyWindow]:
        """Record one verdict at ``t``; returns the windows this closed."""
        closed = self.roll(t)
        self.evaluated += 1
        self.efficient += int(efficient)
        self.total_evaluated += 1
        self.total_efficient += int(efficient)
        return closed

    def roll(self, now: float) -> list[EfficiencyWindow]:
        """Close every window that ended by ``now``."""
        k = self.clock.index(now)
        if k <= self.clock.current:
            return []
        window = EfficiencyWindow(
            self.clock.end(self.clock.current), self.evaluated, self.efficient
        )
        ratio = window.ratio
        self.streak = (
            self.streak + 1 if ratio is not None and ratio < self.settings.efficiency_min else 0
        )
        if k > self.clock.current + 1:
            self.streak = 0
        self.evaluated = self.efficient = 0
        self.clock.current = k
        self.last = window
        return [window]

    def alerts(self, window: EfficiencyWindow, book: AlertBook) -> list[Alert]:
        """Judge the efficiency condition after ``window`` closed."""
        s = self.settings
        ratio = window.ratio
        text = f"{ratio:.0%}" if ratio is not None else "no evaluated transfers"
        return book.judge(
            "efficiency_low",
            "fabric",
            self.streak >= s.efficiency_windows,
            f"scheduling efficiency {text} (below {s.efficiency_min:.0%} for "
            f"{self.streak} consecutive windows)",
        )


@dataclass(frozen=True, slots=True)
class TierStats:
    """Mean and p95 utilisation of a tier."""

    mean: float
    p95: float
    samples: int


class TierWindows:
    """Histograms of raw port utilisation per tier, per window."""

    def __init__(self, settings: AlertSettings, origin: float) -> None:
        self.settings = settings
        self.clock = WindowClock(origin, settings.window_s)
        self.hist: dict[Tier, list[int]] = {t: [0] * (_BINS + 1) for t in Tier}
        self.sums: dict[Tier, float] = dict.fromkeys(Tier, 0.0)
        self.last: dict[Tier, TierStats] = {}

    def add(self, tier: Tier, util: float) -> None:
        """Record one port's utilisation sample."""
        self.hist[tier][min(_BINS, max(0, round(util * _BINS)))] += 1
        self.sums[tier] += util

    def roll(self, now: float) -> dict[Tier, TierStats] | None:
        """Close the window if it ended by ``now``: the stats of each tier with samples."""
        k = self.clock.index(now)
        if k <= self.clock.current:
            return None
        out: dict[Tier, TierStats] = {}
        for tier, hist in self.hist.items():
            n = sum(hist)
            if n:
                out[tier] = TierStats(self.sums[tier] / n, _hist_quantile(hist, n, 0.95), n)
            self.hist[tier] = [0] * (_BINS + 1)
            self.sums[tier] = 0.0
        self.clock.current = k
        self.last = out
        return out

    def alerts(self, stats: dict[Tier, TierStats], book: AlertBook) -> list[Alert]:
        """Judge each tier's utilisation on a closed window."""
        s = self.settings
        out: list[Alert] = []
        for tier in Tier:
            st = stats.get(tier)
            hot = st is not None and (st.mean > s.tier_mean_max or st.p95 > s.tier_p95_max)
            text = f"mean {st.mean:.0%}, p95 {st.p95:.0%}" if st is not None else "no samples"
            out += book.judge(
                "tier_utilisation",
                str(tier),
                hot,
                f"{tier} utilisation {text} (limits: mean {s.tier_mean_max:.0%}, "
                f"p95 {s.tier_p95_max:.0%})",
            )
        return out


def _hist_quantile(hist: list[int], n: int, q: float) -> float:
    target = q * n
    seen = 0
    for i, count in enumerate(hist):
        seen += count
        if seen >= target:
            return i / _BINS
    return 1.0
