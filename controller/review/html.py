"""The review as one self-contained HTML file: tables, and matplotlib PNGs embedded as
``data:`` URIs (no external asset, no script), so the file can be mailed or archived.
Figures are drawn on :class:`~matplotlib.figure.Figure` objects directly (the Agg
canvas, no pyplot state).

Each section draws one figure of :mod:`figures`; a section with nothing to show
says so instead of drawing an empty plot. Times are UTC.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
from collections.abc import Callable, Sequence

import matplotlib.dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from controller.review.figures import (
    EFFICIENCY_LINE,
    OUTLIER_FACTOR,
    P99_LIMIT_S,
    WINDOW_S,
    Review,
)

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #1d2330; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em;
     border-bottom: 1px solid #dde1e8; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { text-align: left; padding: .2em .8em; border-bottom: 1px solid #eef0f4; }
img { max-width: 100%; }
.none { color: #7a8397; font-style: italic; }
"""


def _when(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC)


def _stamp(t: float) -> str:
    return _when(t).strftime("%Y-%m-%d %H:%M:%S UTC")


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<img alt="" src="data:image/png;base64,{data}">'


def _figure(height: float = 3.2) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(11, height))
    ax = fig.subplots()
    ax.grid(alpha=0.3)
    return fig, ax


def _time_axis(ax: Axes, r: Review) -> None:
    """Dates in UTC over the review's whole period (a single point gets a sane range)."""
    ax.xaxis_date(tz=dt.UTC)
    pad = max(60.0, 0.03 * (r.end - r.start))
    ax.set_xlim(_num(r.start - pad), _num(r.end + pad))
    shape = "%m-%d %H:%M" if r.end - r.start > 86400 else "%H:%M:%S"
    formatter = mdates.DateFormatter(shape, tz=dt.UTC)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_formatter(formatter)
    for label in ax.get_xticklabels():
        label.set_rotation(20)
        label.set_horizontalalignment("right")


def _num(t: float) -> float:
    return float(mdates.date2num(_when(t)))  # type: ignore[no-untyped-call]


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    if not rows:
        return '<p class="none">none</p>'
    out = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out += ["<tr>", *(f"<td>{html.escape(str(c))}</td>" for c in row), "</tr>"]
    return "".join(out) + "</table>"


def _latency(r: Review) -> str:
    if not r.latency:
        return '<p class="none">no completed transfer</p>'
    fig, ax = _figure()
    x = [_num(w.start) for w in r.latency]
    for name, values in (("p50", [w.p50_s for w in r.latency]),
                         ("p95", [w.p95_s for w in r.latency]),
                         ("p99", [w.p99_s for w in r.latency])):  # fmt: skip
        ax.plot(x, [v * 1e3 for v in values], marker="o", label=name)
    ax.axhline(P99_LIMIT_S * 1e3, color="#c62828", linestyle="--", label="100 ms limit")
    ax.set_ylabel("transfer time (ms)")
    ax.legend(loc="upper left")
    _time_axis(ax, r)
    rows = [(_stamp(w.start), w.count, *(f"{v * 1e3:.1f}" for v in (w.p50_s, w.p95_s, w.p99_s)))
            for w in r.latency]  # fmt: skip
    return _png(fig) + _table(["window start", "n", "p50 ms", "p95 ms", "p99 ms"], rows)


def _pairs(r: Review) -> str:
    if not r.pairs:
        return '<p class="none">no completed transfer</p>'
    fig, ax = _figure(3.6)
    for i, p in enumerate(r.pairs):
        colour = f"C{i % 10}"
        ax.scatter(
            [_num(t) for t, _ in p.points],
            [d * 1e3 for _, d in p.points],
            s=10,
            color=colour,
            label=f"{p.pair} (baseline {p.baseline_s * 1e3:.1f} ms)",
        )
        ax.axhline(p.baseline_s * 1e3, color=colour, linestyle=":", linewidth=1)
        if p.outliers:
            ax.scatter(
                [_num(t) for t, _ in p.outliers],
                [d * 1e3 for _, d in p.outliers],
                s=40,
                marker="x",
                color="#c62828",
            )
    ax.set_ylabel("transfer time (ms)")
    ax.legend(loc="upper left", fontsize=8)
    _time_axis(ax, r)
    rows = [(p.pair, p.count, f"{p.baseline_s * 1e3:.1f}", f"{p.p99_s * 1e3:.1f}",
             len(p.outliers)) for p in r.pairs]  # fmt: skip
    worst = sorted((o for p in r.pairs for o in ((p.pair, *x) for x in p.outliers)),
                   key=lambda o: -o[2])[:20]  # fmt: skip
    return (
        _png(fig)
        + _table(
            [
                "rack pair",
                "n",
                "baseline (median) ms",
                "p99 ms",
                f"outliers (> {OUTLIER_FACTOR:g}x baseline)",
            ],
            rows,
        )
        + "<p>Slowest outliers:</p>"
        + _table(
            ["rack pair", "time", "ms"], [(p, _stamp(t), f"{d * 1e3:.1f}") for p, t, d in worst]
        )
    )


def _efficiency(r: Review) -> str:
    if not r.efficiency:
        return '<p class="none">no judged transfer (efficiency records) in the log</p>'
    fig, ax = _figure()
    ax.plot([_num(w.start) for w in r.efficiency], [w.ratio * 100 for w in r.efficiency],
            marker="o", label="efficiency per window")  # fmt: skip
    ax.axhline(EFFICIENCY_LINE * 100, color="#c62828", linestyle="--", label="80% line")
    ax.set_ylim(0, 105)
    ax.set_ylabel("on the offline-best path (%)")
    ax.legend(loc="lower left")
    _time_axis(ax, r)
    return _png(fig)


def _reroutes(r: Review) -> str:
    parts = []
    if r.reroutes or r.fallbacks:
        fig = Figure(figsize=(11, 3.2))
        a1, a2 = fig.subplots(1, 2, width_ratios=(2, 1))
        kinds = sorted({k for _, _, k in r.reroutes})
        for i, kind in enumerate(kinds):
            times = [_num(t) for t, _, k in r.reroutes if k == kind]
            a1.scatter(times, [i] * len(times), marker="|", s=200)
        a1.set_yticks(range(len(kinds)), kinds)
        a1.set_title("reroutes and moves")
        _time_axis(a1, r)
        if r.fallbacks:
            names = list(r.fallbacks)
            a2.barh(names, [r.fallbacks[n] for n in names], color="#b35c00")
        else:
            a2.set_axis_off()
            a2.text(0.5, 0.5, "none", ha="center", va="center", color="#7a8397")
        a2.set_title("transfers left to ECMP, by reason")
        parts.append(_png(fig))
    else:
        parts.append('<p class="none">no reroute, move or fallback</p>')
    parts.append("<p>Mode changes:</p>")
    parts.append(_table(["time", "mode", "reason"], [(_stamp(t), m, why) for t, m, why in r.modes]))
    return "".join(parts)


def _tiers(r: Review) -> str:
    if not r.tiers:
        return '<p class="none">no tiers record in the log</p>'
    fig, ax = _figure()
    for i, (tier, points) in enumerate(sorted(r.tiers.items())):
        x = [_num(t) for t, _, _ in points]
        ax.plot(x, [m * 100 for _, m, _ in points], color=f"C{i}", label=f"{tier} mean")
        ax.plot(x, [p * 100 for _, _, p in points], color=f"C{i}", linestyle="--",
                label=f"{tier} p95")  # fmt: skip
    ax.axhline(70, color="#b35c00", linestyle=":", label="70% mean limit")
    ax.axhline(85, color="#c62828", linestyle=":", label="85% p95 limit")
    ax.set_ylabel("utilisation (%)")
    ax.legend(loc="upper left", fontsize=8, ncol=2)
    _time_axis(ax, r)
    return _png(fig)


def _alerts(r: Review) -> str:
    if not r.alerts:
        return '<p class="none">no alert</p>'
    fig, ax = _figure(0.6 + 0.35 * len(r.alerts))
    end = r.end
    for i, a in enumerate(r.alerts):
        stop = a.end if a.end is not None else end
        colour = "#c62828" if a.severity == "critical" else "#b35c00"
        left, right = _num(a.start), _num(stop)
        ax.barh(i, right - left, left=left, height=0.6, color=colour)  # fmt: skip
    ax.set_yticks(range(len(r.alerts)), [f"{a.name} {a.subject}" for a in r.alerts], fontsize=8)
    ax.xaxis_date(tz=dt.UTC)
    _time_axis(ax, r)
    rows = [(a.name, a.subject, a.severity, _stamp(a.start),
             _stamp(a.end) if a.end is not None else "still firing", a.message)
            for a in r.alerts]  # fmt: skip
    return _png(fig) + _table(["alert", "subject", "severity", "fired", "resolved", "message"],
                              rows)  # fmt: skip


def _skipped(r: Review) -> str:
    rec = r.records
    if not rec.skipped:
        return "<p>Every line was usable.</p>"
    rows = [(reason, n, ", ".join(rec.examples.get(reason, [])))
            for reason, n in rec.skipped.most_common()]  # fmt: skip
    return _table(["reason", "lines", "first at"], rows)


SECTIONS: tuple[tuple[str, Callable[[Review], str]], ...] = (
    (f"Transfer time p50 / p95 / p99 per {WINDOW_S / 60:g}-minute window", _latency),
    ("Rack pairs: baseline and outliers", _pairs),
    ("Scheduling efficiency", _efficiency),
    ("Reroutes and fallbacks", _reroutes),
    ("Per-tier utilisation", _tiers),
    ("Alerts", _alerts),
    ("Skipped log lines", _skipped),
)


def render_html(r: Review, title: str = "kvfabric weekly review") -> str:
    """The whole report as one HTML document."""
    period = f"{_stamp(r.start)} to {_stamp(r.end)}" if r.records.records else "no records"
    body = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(period)}</p>",
            "<h2>Summary</h2>", _table(["", ""], r.summary)]  # fmt: skip
    for heading, section in SECTIONS:
        body += [f"<h2>{html.escape(heading)}</h2>", section(r)]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
