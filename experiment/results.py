"""What an experiment found: results.json and the comparison table.

Each mode's runs (one per repeat) are pooled. ``results.json``::

    {
      "scenario": "design-example",
      "modes": {"ecmp": {"n": 40, "completed": 38, "timed_out": 2, "failed": 0,
                         "valid": true,
                         "fct_ms": {"p50": .., "p95": .., "p99": .., "mean": ..},
                         "fct_ms_lower_bound": ["p99", "mean"],
                         "fct_censored_ms": [60012.3, 60004.1],
                         "fct_real_ms": {...}, "scheduling_efficiency": null,
                         "tier_utilisation": {"inter-rack": {"mean": .., "p95": ..}, ...},
                         "paths": {"spine1": 12, ...},
                         "held_ms": {...}, "deadlines": {"met": 30, "of": 40}}, ...},
      "reduction_vs_ecmp": {"kv-aware": {"p50": 0.21, "p95": .., "p99": .., "mean": ..}},
      "reduction_bounds": {"kv-aware": {"p50": "exact", "p99": "at most", ...}},
      "vs_reference": {...}, "vs_reference_bounds": {...}, "floor": {...},
                                                            (experiment.references)
      "goals": {...},                                       (experiment.goals)
      "scheduling_efficiency": {"kv-aware": 0.93, ...},
      "tier_utilisation": {"ecmp": {...}, ...},
      "scaling": {...}, "seed": 1, "repeat": 3, "partial": false,
      "valid": true, "invalid_reasons": []
    }

Each mode also has ``phases``: its statistics for burst and steady arrivals. When the
simulator's references (``spray``, ``bound``) ran, ``vs_reference`` gives every mode's
ratio to each, overall and per phase (:mod:`experiment.references`).

A reduction is ``1 - mode / ecmp`` (0.4 is 40% lower than ECMP; negative is worse);
it is null when either side is invalid or empty. ``held_ms`` summarises how long
transfers waited before their sender started (the controller's hold in ``scheduled``,
a burst's stagger), which their completion times include; ``deadlines`` counts the
transfers that completed within their deadline (null when they had none).
Percentiles interpolate linearly between ranks. A mode whose run was invalid keeps
its numbers in the JSON for diagnosis, but the table says why it is invalid instead
of showing them.

A transfer that timed out is a result, not a failure of the lab: its completion time
is censored (at least the time it ran), it is counted in ``timed_out``, and it takes
part in the statistics as a lower bound (:mod:`experiment.censored`). Statistics it may have
held down are listed in ``fct_ms_lower_bound`` and shown with "≥" in the table; a
reduction is then a bound too (``reduction_bounds``). Only a transfer that failed
otherwise (refused, reset: the lab could not carry it) makes its mode invalid.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.engine.telemetry_math import percentile
from experiment.censored import (
    AT_LEAST,
    AT_MOST,
    bounded_reduction,
    summarise_censored,
    summary_doc,
    summary_from_doc,
)
from experiment.goals import goals, goals_markdown
from experiment.references import floor_doc, phase_docs, references_markdown, vs_references

STATS = ("p50", "p95", "p99", "mean")


@dataclass(frozen=True, slots=True)
class TransferResult:
    """One KV transfer as the sender saw it; ``fct_s`` is None when it failed.

    ``censored_s`` is set when it timed out: its completion time is at least that.
    ``room`` (timed-out transfers only) names the spines whose path between its leaves
    had room while it was stuck (None: not measured).
    """

    index: int
    src: str
    dst: str
    nbytes: int
    fct_s: float | None
    spine: str | None = None
    error: str | None = None
    decision_s: float | None = None  # the controller's answer, inside fct_s (kv-aware)
    retransmits: int | None = None  # TCP segments the sender retransmitted
    censored_s: float | None = None
    room: tuple[str, ...] | None = None
    started_s: float | None = None  # monotonic clock, when the sender started
    held_s: float | None = None  # waited before sending (controller hold, stagger), in fct_s
    deadline_s: float | None = None  # after the request, when it had to be done
    phase: int | None = None  # the arrival phase it belongs to (from 0)
    phase_kind: str | None = None  # that phase's kind: burst, poisson, sequential
    floor_s: float | None = None  # bound only: no mode completes it faster than this

    @property
    def met_deadline(self) -> bool | None:
        """Whether it completed within its deadline (None: it had none)."""
        if self.deadline_s is None:
            return None
        return self.fct_s is not None and self.fct_s <= self.deadline_s

    @property
    def timed_out(self) -> bool:
        """True when the transfer ran out of time (a censored result, not a failure)."""
        return self.fct_s is None and self.censored_s is not None


@dataclass(slots=True)
class ModeRun:
    """One mode's run: its transfers, the fabric's utilisation and the validity verdict."""

    mode: str
    repeat: int
    transfers: list[TransferResult] = field(default_factory=list)
    tier_samples: dict[str, list[float]] = field(default_factory=dict)
    efficiency: tuple[int, int] | None = None  # (efficient, evaluated), from the controller
    invalid_reasons: list[str] = field(default_factory=list)
    complete: bool = True
    health: dict[str, object] = field(default_factory=dict)  # lab.validity.health

    @property
    def valid(self) -> bool:
        """True when nothing invalidated the run."""
        return not self.invalid_reasons


def summarise(values: Sequence[float]) -> dict[str, float] | None:
    """p50, p95, p99 and mean of ``values``; None for no values."""
    if not values:
        return None
    out = {f"p{q}": percentile(values, q) for q in (50, 95, 99)}
    out["mean"] = sum(values) / len(values)
    return out


def reduction(
    mode: Mapping[str, float] | None, ecmp: Mapping[str, float] | None
) -> dict[str, float] | None:
    """``1 - mode/ecmp`` per statistic; None when either is missing."""
    if mode is None or ecmp is None:
        return None
    return {k: 1.0 - mode[k] / ecmp[k] for k in STATS if ecmp.get(k)}


def build_results(
    scenario: str,
    runs: Iterable[ModeRun],
    *,
    modes: Sequence[str],
    extra: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The results document of ``runs`` (any number of repeats per mode)."""
    by_mode: dict[str, list[ModeRun]] = {m: [] for m in modes}
    for run in runs:
        by_mode.setdefault(run.mode, []).append(run)
    time_scale = _time_scale(extra)
    mode_docs: dict[str, dict[str, object]] = {}
    invalid: list[str] = []
    for mode, mode_runs in by_mode.items():
        doc, reasons = _mode_doc(mode_runs, time_scale)
        mode_docs[mode] = doc
        invalid.extend(f"{mode}: {r}" for r in reasons)
    reductions: dict[str, dict[str, float] | None] = {}
    bounds: dict[str, dict[str, str] | None] = {}
    ecmp = mode_docs.get("ecmp")
    for mode, doc in mode_docs.items():
        if mode == "ecmp":
            continue
        ok = ecmp is not None and ecmp["valid"] and doc["valid"]
        red = bounded_reduction(_summary(doc), _summary(ecmp)) if ok and ecmp else None
        reductions[mode] = red[0] if red else None
        bounds[mode] = red[1] if red else None
    vs_ref, vs_ref_bounds = vs_references(mode_docs)
    partial = any(not r.complete for rs in by_mode.values() for r in rs) or any(
        not rs for rs in by_mode.values()
    )
    result: dict[str, Any] = {
        "scenario": scenario,
        "modes": mode_docs,
        "reduction_vs_ecmp": reductions,
        "reduction_bounds": bounds,
        "vs_reference": vs_ref,
        "vs_reference_bounds": vs_ref_bounds,
        "floor": floor_doc(by_mode),
        "goals": goals(mode_docs),
        "scheduling_efficiency": {m: d["scheduling_efficiency"] for m, d in mode_docs.items()},
        "tier_utilisation": {m: d["tier_utilisation"] for m, d in mode_docs.items()},
        "partial": partial,
        "valid": not invalid and not partial,
        "invalid_reasons": invalid
        + (["the run was interrupted: results are partial"] if partial else []),
    }
    if extra:
        result.update(extra)
    return result


def _summary(doc: Mapping[str, object] | None) -> Any:
    """The :class:`experiment.censored.Summary` of a mode document (None without statistics)."""
    if doc is None:
        return None
    fct, lower = doc.get("fct_ms"), doc.get("fct_ms_lower_bound")
    if not isinstance(fct, Mapping):
        return None
    return summary_from_doc(fct, lower if isinstance(lower, list) else [])


def _time_scale(extra: Mapping[str, object] | None) -> float | None:
    scaling = (extra or {}).get("scaling")
    if isinstance(scaling, Mapping):
        scale = scaling.get("time_scale")
        if isinstance(scale, int | float) and scale > 0:
            return float(scale)
    return None


def _mode_doc(
    runs: Sequence[ModeRun], time_scale: float | None
) -> tuple[dict[str, object], list[str]]:
    transfers = [t for r in runs for t in r.transfers]
    ok = [t.fct_s * 1000.0 for t in transfers if t.fct_s is not None]
    censored = [t.censored_s * 1000.0 for t in transfers if t.timed_out and t.censored_s]
    failed = [t for t in transfers if t.fct_s is None and not t.timed_out]
    reasons = [f"repeat {r.repeat}: {reason}" for r in runs for reason in r.invalid_reasons]
    reasons += [f"transfer {t.index} ({t.src}->{t.dst}) failed: {t.error}" for t in failed]
    if not runs:
        reasons.append("not run")
    fct, lower = summary_doc(summarise_censored(ok, censored))
    samples: dict[str, list[float]] = {}
    for r in runs:
        for tier, values in r.tier_samples.items():
            samples.setdefault(tier, []).extend(values)
    efficient = sum(r.efficiency[0] for r in runs if r.efficiency is not None)
    evaluated = sum(r.efficiency[1] for r in runs if r.efficiency is not None)
    doc: dict[str, object] = {
        "n": len(ok) + len(censored),
        "completed": len(ok),
        "timed_out": len(censored),
        "failed": len(failed),
        "repeats": len(runs),
        "valid": not reasons,
        "fct_ms": fct,
        "fct_ms_lower_bound": lower,
        "fct_censored_ms": censored,
        "fct_real_ms": (
            {k: x / time_scale for k, x in fct.items()} if fct and time_scale else None
        ),
        "scheduling_efficiency": efficient / evaluated if evaluated else None,
        "tier_utilisation": {
            tier: {"mean": sum(v) / len(v), "p95": percentile(v, 95)}
            for tier, v in sorted(samples.items())
            if v
        },
        "paths": dict(sorted(Counter(t.spine or "unknown" for t in transfers).items())),
        "lab_health": [r.health for r in runs],
        "fct_samples_ms": ok,
        "decision_ms": summarise(
            [t.decision_s * 1000.0 for t in transfers if t.decision_s is not None]
        ),
        "retransmits": _retransmits(transfers),
        "held_ms": summarise([t.held_s * 1000.0 for t in transfers if t.held_s is not None]),
        "deadlines": _deadlines(transfers),
        "phases": phase_docs(transfers),
        "transfers": [_transfer_doc(t) for t in transfers],
    }
    return doc, reasons


def _retransmits(transfers: Sequence[TransferResult]) -> dict[str, int] | None:
    """Retransmitted segments in all, and how many transfers had any (TCP_INFO)."""
    known = [t.retransmits for t in transfers if t.retransmits is not None]
    if not known:
        return None
    return {"segments": sum(known), "transfers": sum(1 for n in known if n), "of": len(known)}


def _deadlines(transfers: Sequence[TransferResult]) -> dict[str, int] | None:
    """Transfers that met their deadline, of those that had one."""
    judged = [t.met_deadline for t in transfers if t.met_deadline is not None]
    if not judged:
        return None
    return {"met": sum(judged), "of": len(judged)}


def _transfer_doc(t: TransferResult) -> dict[str, object]:
    return {
        "index": t.index,
        "src": t.src,
        "dst": t.dst,
        "spine": t.spine,
        "fct_ms": t.fct_s * 1000.0 if t.fct_s is not None else None,
        "decision_ms": t.decision_s * 1000.0 if t.decision_s is not None else None,
        "retransmits": t.retransmits,
        "error": t.error,
        "timed_out": t.timed_out,
        "censored_ms": t.censored_s * 1000.0 if t.censored_s is not None else None,
        "room": list(t.room) if t.room is not None else None,
        "held_ms": t.held_s * 1000.0 if t.held_s is not None else None,
        "deadline_ms": t.deadline_s * 1000.0 if t.deadline_s is not None else None,
        "phase": t.phase,
        "phase_kind": t.phase_kind,
        "floor_ms": t.floor_s * 1000.0 if t.floor_s is not None else None,
    }


# -- output ----------------------------------------------------------------------------


def markdown_table(results: Mapping[str, object]) -> str:
    """The comparison table with its validity verdict, as GitHub markdown."""
    modes = results["modes"]
    reductions = results["reduction_vs_ecmp"]
    assert isinstance(modes, Mapping) and isinstance(reductions, Mapping)
    lines = [
        f"### {results['scenario']}",
        "",
        "| mode | n | p50 ms | p95 ms | p99 ms | mean ms "
        "| p50 vs ECMP | p99 vs ECMP | mean vs ECMP |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    bounds = results.get("reduction_bounds")
    for mode, doc in modes.items():
        fct = doc["fct_ms"]
        if not doc["valid"]:
            lines.append(f"| {mode} | {doc['n']} | invalid (see below) | | | | | | |")
            continue
        if fct is None:
            lines.append(f"| {mode} | 0 | no transfers | | | | | | |")
            continue
        red = reductions.get(mode)
        bound = bounds.get(mode) if isinstance(bounds, Mapping) else None
        low = set(doc.get("fct_ms_lower_bound") or ())
        cells = [("≥" if k in low else "") + f"{fct[k]:.0f}" for k in STATS]
        deltas = [
            change_vs_ecmp(red, bound, k) if mode != "ecmp" else "-" for k in ("p50", "p99", "mean")
        ]
        n = f"{doc['n']} ({doc['timed_out']} timed out)" if doc.get("timed_out") else doc["n"]
        lines.append(f"| {mode} | {n} | " + " | ".join(cells + deltas) + " |")
    lines.append("")
    censored = [m for m, d in modes.items() if d.get("timed_out")]
    if censored:
        lines.append(
            "≥: a lower bound. A transfer that timed out counts with the time it ran "
            "(its completion time is at least that); "
            + ", ".join(f"{m}: {modes[m]['timed_out']} timed out" for m in censored)
            + "."
        )
        lines.append("")
    met = {m: d["deadlines"] for m, d in modes.items() if d.get("deadlines")}
    if met:
        lines.append(
            "Deadlines met: " + ", ".join(f"{m} {x['met']}/{x['of']}" for m, x in met.items()) + "."
        )
        lines.append("")
    lines.extend(references_markdown(results))
    verdict = "valid" if results["valid"] else "INVALID"
    lines.append(f"Verdict: **{verdict}**.")
    reasons = results["invalid_reasons"]
    assert isinstance(reasons, Sequence)
    lines.extend(f"- {r}" for r in reasons)
    goal_doc = results.get("goals")
    if isinstance(goal_doc, Mapping):
        lines.append("")
        lines.extend(goals_markdown(goal_doc))
    scaling = results.get("scaling")
    if isinstance(scaling, Mapping) and isinstance(scaling.get("stands_for"), Sequence):
        lines.append("")
        lines.append("What this run stands for:")
        lines.extend(f"- {s}" for s in scaling["stands_for"])
    return "\n".join(lines) + "\n"


def change_vs_ecmp(
    red: Mapping[str, float] | None, bound: Mapping[str, str] | None, key: str
) -> str:
    """The change against ECMP (positive: slower), with its bound when censored."""
    if red is None or key not in red:
        return "n/a"
    kind = (bound or {}).get(key)
    # the reduction is at most r: the change (-r) is at least -r, and vice versa
    prefix = "≥" if kind == AT_MOST else "≤" if kind == AT_LEAST else ""
    return f"{prefix}{-red[key] * 100:+.0f}%"


def write_results(out: Path, results: Mapping[str, object]) -> tuple[Path, Path]:
    """Write ``results.json`` and ``results.md`` into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "results.json"
    md_path = out / "results.md"
    tmp = json_path.with_suffix(".json.tmp")
    tmp.write_text(to_json(results) + "\n", encoding="utf-8")
    tmp.replace(json_path)
    md_path.write_text(markdown_table(results), encoding="utf-8")
    return json_path, md_path


def to_json(value: object, indent: str = "") -> str:
    """``value`` as JSON laid out for reading: an object holding objects or lists has
    one key a line, indented by two; a list of objects (a mode's transfers) one object a
    line each; anything else (statistics, samples) is one line.

    The lines are the compact encoder's, which is C: a simulated run of 10,000 transfers
    per mode writes in half the time ``indent=2`` takes, and in two thirds of the bytes.
    """
    inner = indent + "  "
    if isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values()):
        items = [f"{inner}{json.dumps(k)}: {to_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return "[\n" + ",\n".join(inner + json.dumps(v) for v in value) + "\n" + indent + "]"
    return json.dumps(value)
