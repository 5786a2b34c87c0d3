"""The goals a run is judged against, from the modes' results.

Two goals of kv-aware placement, checked on every run that has both modes:

- **not worse than ECMP** at the mean and at p99. With timed-out transfers the
  statistics may be lower bounds (:mod:`experiment.censored`); a comparison the bounds
  cannot settle is ``null`` ("undecided"), never guessed.
- **no timeout while a spine has room**: no kv-aware transfer timed out while some
  spine's path between its leaves had room (its busier cable below
  :data:`ROOM_UTILISATION` on average over the time the transfer was stuck; the
  experiment measures it, :mod:`lab.room`). A timed-out transfer whose room was not
  measured leaves the goal undecided.

``holds`` is true, false or null (undecided) per goal and for all of them. A goal is
checked whether or not the modes were valid; ``valid`` says whether the lab vouches
for the numbers it was checked on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from experiment.censored import not_worse, summary_from_doc

ROOM_UTILISATION = 0.5
"""A path has room when its busier cable ran below this share of its capacity."""
MODE, BASELINE = "kv-aware", "ecmp"


def goals(modes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The goals block of a results document; None without kv-aware or ECMP."""
    kv, ecmp = modes.get(MODE), modes.get(BASELINE)
    if kv is None or ecmp is None:
        return None
    kv_sum = summary_from_doc(kv.get("fct_ms"), kv.get("fct_ms_lower_bound") or ())
    ecmp_sum = summary_from_doc(ecmp.get("fct_ms"), ecmp.get("fct_ms_lower_bound") or ())
    comparison: dict[str, Any] = {}
    for stat in ("mean", "p99"):
        comparison[stat] = {
            "holds": not_worse(kv_sum, ecmp_sum, stat),
            MODE: kv_sum.stats[stat] if kv_sum else None,
            BASELINE: ecmp_sum.stats[stat] if ecmp_sum else None,
            "lower_bounds": [
                m for m, s in ((MODE, kv_sum), (BASELINE, ecmp_sum)) if s and stat in s.lower_bound
            ],
        }
    room = _timeouts_with_room(kv.get("transfers") or [])
    verdicts = [comparison["mean"]["holds"], comparison["p99"]["holds"], room["holds"]]
    return {
        "not_worse_than_ecmp": comparison,
        "no_timeout_while_room": room,
        "holds": False if False in verdicts else None if None in verdicts else True,
        "valid": bool(kv.get("valid")) and bool(ecmp.get("valid")),
        "room_utilisation": ROOM_UTILISATION,
    }


def _timeouts_with_room(transfers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    stuck = [t for t in transfers if t.get("timed_out")]
    with_room = [
        {k: t.get(k) for k in ("index", "src", "dst", "spine", "room")}
        for t in stuck
        if t.get("room")
    ]
    unmeasured = sum(1 for t in stuck if t.get("room") is None)
    holds = False if with_room else None if unmeasured else True
    return {
        "holds": holds,
        "timed_out": len(stuck),
        "with_room": with_room,
        "unmeasured": unmeasured,
    }


def goals_markdown(doc: Mapping[str, Any]) -> list[str]:
    """The goals as markdown lines (a heading and one line per goal)."""
    lines = ["Goals (kv-aware):"]
    for stat in ("mean", "p99"):
        c = doc["not_worse_than_ecmp"][stat]
        bound = f" (lower bounds: {', '.join(c['lower_bounds'])})" if c["lower_bounds"] else ""
        lines.append(
            f"- not worse than ECMP at {stat}: **{_verdict(c['holds'])}**: "
            f"{_ms(c[MODE])} against {_ms(c[BASELINE])}{bound}"
        )
    r = doc["no_timeout_while_room"]
    detail = f"{r['timed_out']} timed out"
    if r["with_room"]:
        detail += "; with room on " + "; ".join(
            f"t{t['index']} ({t['src']}->{t['dst']} via {t['spine']}): {', '.join(t['room'])}"
            for t in r["with_room"]
        )
    if r["unmeasured"]:
        detail += f"; {r['unmeasured']} without a measurement of the spines"
    lines.append(f"- no timeout while a spine has room: **{_verdict(r['holds'])}** ({detail})")
    if not doc["valid"]:
        lines.append("- (checked on a run the lab does not vouch for: see the verdict above)")
    return lines


def _verdict(holds: bool | None) -> str:
    return "holds" if holds else "undecided" if holds is None else "fails"


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f} ms"
