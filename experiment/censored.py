"""Statistics of completion times when some transfers timed out (right-censored values).

A transfer that times out after ``T`` seconds is a result of its mode: its completion
time is not known, but it is *at least* ``T``. Dropping it would flatter the mode that
stalls (its worst outcomes vanish); calling the whole mode invalid would erase it.
Here the censored values take part in every statistic at their lower bound, and each
statistic says whether it is exact or itself only a lower bound.

A statistic is a lower bound when raising the censored values could raise it:

- the mean, as soon as one value is censored;
- a percentile interpolated between the order statistics ``lo`` and ``hi``
  (``pos = (n - 1) q / 100``, as :func:`controller.engine.telemetry_math.percentile`), when a
  censored value sorts at or below the highest of them with a weight (``hi``, or
  ``lo`` when ``pos`` is a whole number). Censored values sort after exact values
  equal to them: raising them cannot move an exact value up.

Comparisons with ECMP follow: ``1 - mode / ecmp`` is an upper bound on the true
reduction when only the mode's statistic is a lower bound, a lower bound when only
ECMP's is, and unknown (left out) when both are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

STATS = ("p50", "p95", "p99", "mean")
EXACT, AT_MOST, AT_LEAST = "exact", "at most", "at least"


@dataclass(frozen=True, slots=True)
class Summary:
    """Statistics of exact and censored values; ``lower_bound`` names the inexact ones."""

    stats: dict[str, float]
    lower_bound: frozenset[str]


def summarise_censored(exact: Sequence[float], censored: Sequence[float] = ()) -> Summary | None:
    """p50, p95, p99 and mean over both kinds of values; None when there are none."""
    values = sorted([(x, False) for x in exact] + [(x, True) for x in censored])
    if not values:
        return None
    stats: dict[str, float] = {}
    inexact: set[str] = set()
    for q in (50, 95, 99):
        pos = (len(values) - 1) * q / 100.0
        lo = math.floor(pos)
        hi = min(lo + 1, len(values) - 1)
        stats[f"p{q}"] = values[lo][0] + (values[hi][0] - values[lo][0]) * (pos - lo)
        top = hi if pos > lo else lo  # the highest rank with a weight
        if any(c for _, c in values[: top + 1]):
            inexact.add(f"p{q}")
    stats["mean"] = sum(x for x, _ in values) / len(values)
    if censored:
        inexact.add("mean")
    return Summary(stats, frozenset(inexact))


def bounded_reduction(
    mode: Summary | None, ecmp: Summary | None
) -> tuple[dict[str, float], dict[str, str]] | None:
    """``1 - mode/ecmp`` per statistic and whether each is exact, at most or at least that.

    Statistics whose bound is unknown (both sides censored) are left out. None when either
    side is missing.
    """
    if mode is None or ecmp is None:
        return None
    values: dict[str, float] = {}
    bounds: dict[str, str] = {}
    for k in STATS:
        if not ecmp.stats.get(k):
            continue
        mode_low, ecmp_low = k in mode.lower_bound, k in ecmp.lower_bound
        if mode_low and ecmp_low:
            continue
        values[k] = 1.0 - mode.stats[k] / ecmp.stats[k]
        bounds[k] = AT_MOST if mode_low else AT_LEAST if ecmp_low else EXACT
    return values, bounds


def not_worse(mode: Summary | None, ecmp: Summary | None, stat: str) -> bool | None:
    """Whether the mode's ``stat`` is at most ECMP's; None when the data cannot decide."""
    if mode is None or ecmp is None:
        return None
    m, e = mode.stats[stat], ecmp.stats[stat]
    m_low, e_low = stat in mode.lower_bound, stat in ecmp.lower_bound
    if m <= e:
        # true mode >= m and true ecmp >= e: only an exact mode value settles it
        return True if not m_low else None
    # m > e: an exact ECMP value settles it (the true mode is at least m)
    return False if not e_low else None


def summary_doc(summary: Summary | None) -> tuple[dict[str, float] | None, list[str]]:
    """The JSON form: the statistics, and the names of those that are lower bounds."""
    if summary is None:
        return None, []
    return dict(summary.stats), [k for k in STATS if k in summary.lower_bound]


def summary_from_doc(stats: Mapping[str, float] | None, lower: Iterable[str]) -> Summary | None:
    """The :class:`Summary` of a mode's ``fct_ms`` and ``fct_ms_lower_bound``."""
    if stats is None:
        return None
    return Summary(dict(stats), frozenset(lower))
