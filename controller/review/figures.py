"""The review's numbers, computed from log records (pure: no I/O, no clock).

- *Latency*: completed transfers' ``duration_s`` per fixed 5-minute window
  (:data:`WINDOW_S`) from the first record: count, p50, p95, p99.
- *Rack pairs*: each pair's baseline is the median of its durations; an outlier is
  a transfer slower than :data:`OUTLIER_FACTOR` times it (the design's reroute rule).
  The pair is the record's ``pair`` (source leaf > destination leaf) or, in older
  logs, the leaves of its pinned ``path``, or ``?`` when neither says.
- *Efficiency*: the ``efficiency`` records (one per judged transfer) per window, the
  share on the offline-best path, against the design's 80% line.
- *Reroutes and fallbacks*: transfers the safety rules ``rerouted`` or ``moved`` off
  a broken cable; transfers left to ECMP, by the first clause of their fallback
  reason; ``mode`` records (the reroute limit tripping to ECMP, and back).
- *Tiers*: the ``tiers`` records, each tier's mean and p95 utilisation over time.
- *Alerts*: ``alert`` records paired into intervals, from firing to resolved (open at
  the end of the log when never resolved).
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from controller.engine.telemetry_math import percentile
from controller.review.logs import Records

WINDOW_S = 300.0
OUTLIER_FACTOR = 2.0
EFFICIENCY_LINE = 0.80
P99_LIMIT_S = 0.100


@dataclass(frozen=True, slots=True)
class LatencyWindow:
    """One window's completed transfers: when it starts (wall clock) and percentiles."""

    start: float
    count: int
    p50_s: float
    p95_s: float
    p99_s: float


@dataclass(frozen=True, slots=True)
class PairStats:
    """A rack pair's baseline (median) and its outliers (time, duration)."""

    pair: str
    count: int
    baseline_s: float
    p99_s: float
    outliers: tuple[tuple[float, float], ...]
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class EfficiencyWindow:
    """One window's judged transfers and the share on the offline-best path."""

    start: float
    evaluated: int
    efficient: int

    @property
    def ratio(self) -> float:
        """The window's scheduling efficiency."""
        return self.efficient / self.evaluated


@dataclass(frozen=True, slots=True)
class AlertSpan:
    """An alert from firing to resolved (``end`` None: still firing when the log ends)."""

    name: str
    subject: str
    severity: str
    start: float
    end: float | None
    message: str


@dataclass(slots=True)
class Review:
    """Everything the report shows (see the module docstring)."""

    start: float
    end: float
    summary: list[tuple[str, str]] = field(default_factory=list)
    latency: list[LatencyWindow] = field(default_factory=list)
    pairs: list[PairStats] = field(default_factory=list)
    efficiency: list[EfficiencyWindow] = field(default_factory=list)
    reroutes: list[tuple[float, str, str]] = field(default_factory=list)
    fallbacks: Counter[str] = field(default_factory=Counter)
    modes: list[tuple[float, str, str]] = field(default_factory=list)
    tiers: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    alerts: list[AlertSpan] = field(default_factory=list)
    records: Records = field(default_factory=Records)


def _time(r: dict[str, object]) -> float:
    return float(r["time_wall"])  # type: ignore[arg-type]


def pair_of(r: dict[str, object]) -> str:
    """A transfer record's rack pair (see the module docstring)."""
    pair = r.get("pair")
    if isinstance(pair, str) and pair:
        return pair
    path = r.get("path")
    if isinstance(path, str) and path.count(">") == 2:
        src, _, dst = path.split(">")
        return f"{src}>{dst}"
    return "?"


def review(records: Records, window_s: float = WINDOW_S) -> Review:
    """The review of ``records`` (see the module docstring)."""
    rs = records.records
    if not rs:
        return Review(0.0, 0.0, summary=_summary([], records, []), records=records)
    start, end = _time(rs[0]), _time(rs[-1])
    transfers = [r for r in rs if r["event"] == "transfer"]
    done = [r for r in transfers if not r.get("timed_out")]
    out = Review(start, end, records=records)
    out.latency = _latency(done, start, window_s)
    out.pairs = _pairs(done)
    out.efficiency = _efficiency([r for r in rs if r["event"] == "efficiency"], start, window_s)
    for r in transfers:
        if r.get("rerouted"):
            out.reroutes.append((_time(r), pair_of(r), "rerouted (slower than 2x baseline)"))
        moved = r.get("moved")
        if isinstance(moved, list) and moved:
            out.reroutes.append((_time(r), pair_of(r), "moved off a broken cable"))
        if r.get("path") == "ecmp":
            reasons = r.get("fallbacks")
            first = reasons[0] if isinstance(reasons, list) and reasons else None
            reason = str(first).split(":")[0] if first else f"mode {r.get('mode', '?')}"
            out.fallbacks[reason] += 1
    out.modes = [(_time(r), str(r.get("mode")), str(r.get("reason", ""))) for r in rs
                 if r["event"] == "mode"]  # fmt: skip
    for r in rs:
        tiers = r.get("tiers") if r["event"] == "tiers" else None
        if isinstance(tiers, dict):
            for tier, v in tiers.items():
                if isinstance(v, dict) and "mean" in v and "p95" in v:
                    out.tiers.setdefault(str(tier), []).append(
                        (_time(r), float(v["mean"]), float(v["p95"]))
                    )
    out.alerts = _alerts([r for r in rs if r["event"] == "alert"])
    out.summary = _summary(transfers, records, out.alerts, out)
    return out


def _latency(done: list[dict[str, object]], start: float, width: float) -> list[LatencyWindow]:
    by_window: dict[int, list[float]] = {}
    for r in done:
        by_window.setdefault(int((_time(r) - start) // width), []).append(_duration(r))
    return [
        LatencyWindow(start + k * width, len(d), percentile(d, 50), percentile(d, 95),
                      percentile(d, 99))
        for k, d in sorted(by_window.items())
    ]  # fmt: skip


def _duration(r: dict[str, object]) -> float:
    return float(r["duration_s"])  # type: ignore[arg-type]


def _pairs(done: list[dict[str, object]]) -> list[PairStats]:
    by_pair: dict[str, list[tuple[float, float]]] = {}
    for r in done:
        by_pair.setdefault(pair_of(r), []).append((_time(r), _duration(r)))
    out = []
    for pair, points in sorted(by_pair.items()):
        durations = [d for _, d in points]
        baseline = statistics.median(durations)
        outliers = tuple(p for p in points if p[1] > OUTLIER_FACTOR * baseline)
        out.append(PairStats(pair, len(points), baseline, percentile(durations, 99), outliers,
                             tuple(points)))  # fmt: skip
    return out


def _efficiency(
    judged: list[dict[str, object]], start: float, width: float
) -> list[EfficiencyWindow]:
    counts: dict[int, list[int]] = {}
    for r in judged:
        c = counts.setdefault(int((_time(r) - start) // width), [0, 0])
        c[0] += 1
        c[1] += 1 if r.get("efficient") else 0
    return [EfficiencyWindow(start + k * width, n, e) for k, (n, e) in sorted(counts.items())]


def _alerts(records: list[dict[str, object]]) -> list[AlertSpan]:
    open_: dict[tuple[str, str], AlertSpan] = {}
    out: list[AlertSpan] = []
    for r in records:
        key = (str(r.get("name")), str(r.get("subject")))
        if r.get("firing"):
            if key not in open_:
                open_[key] = AlertSpan(*key, str(r.get("severity", "")), _time(r), None,
                                       str(r.get("message", "")))  # fmt: skip
        elif key in open_:
            a = open_.pop(key)
            out.append(AlertSpan(a.name, a.subject, a.severity, a.start, _time(r), a.message))
    out += open_.values()
    return sorted(out, key=lambda a: a.start)


def _summary(
    transfers: list[dict[str, object]],
    records: Records,
    alerts: list[AlertSpan],
    out: Review | None = None,
) -> list[tuple[str, str]]:
    done = [_duration(r) for r in transfers if not r.get("timed_out")]
    paths = Counter(
        "ecmp" if r.get("path") == "ecmp" else "local" if r.get("path") == "local" else "pinned"
        for r in transfers
    )
    rows = [
        ("logs", ", ".join(records.files)),
        ("lines read", str(records.lines)),
        ("lines skipped", str(sum(records.skipped.values()))),
        ("records before --since", str(records.too_old)),
        ("transfers", str(len(transfers))),
        ("completed / timed out", f"{len(done)} / {len(transfers) - len(done)}"),
        ("pinned / ECMP / local",
         f"{paths['pinned']} / {paths['ecmp']} / {paths['local']}"),
    ]  # fmt: skip
    if done:
        slow = sum(1 for d in done if d > P99_LIMIT_S)
        rows += [
            ("p50 / p95 / p99", " / ".join(f"{percentile(done, q) * 1e3:.1f} ms"
                                           for q in (50, 95, 99))),
            ("slower than 100 ms", f"{slow} ({slow / len(done):.1%})"),
        ]  # fmt: skip
    if out is not None:
        judged = sum(w.evaluated for w in out.efficiency)
        if judged:
            good = sum(w.efficient for w in out.efficiency)
            below = sum(1 for w in out.efficiency if w.ratio < EFFICIENCY_LINE)
            rows.append(("scheduling efficiency",
                         f"{good / judged:.1%} of {judged} judged; "
                         f"{below} of {len(out.efficiency)} windows below 80%"))  # fmt: skip
        trips = sum(1 for _, mode, reason in out.modes if mode == "ecmp" and reason != "operator")
        rows += [
            ("reroutes and moves", str(len(out.reroutes))),
            ("fallbacks to ECMP (transfers)", str(sum(out.fallbacks.values()))),
            ("scheduler fallen back to ECMP", str(trips)),
        ]
    rows.append(("alerts fired", str(len(alerts))))
    return rows
