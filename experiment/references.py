"""Every mode against the simulator's physical references, overall and per phase.

``spray`` (ideal per-packet spraying) and ``bound`` (SRPT over pooled links) are modes
of ``kvfabric simulate`` (:mod:`simulator.reference`); a run that lists them compares
every mode with both: the mode's statistic over the reference's, so 1.00 is the
reference's figure and 2.00 twice as slow. Ratios are taken at p50, p99 and the mean,
over all transfers and per phase: *bursts* (phases of kind ``burst``) and *steady*
arrivals (the other kinds), from each transfer's ``phase_kind``. In ``results.json``::

    "modes": {"ecmp": {..., "phases": {"bursts": {"n": 2560, "fct_ms": {...},
                                                 "fct_ms_lower_bound": []},
                                      "steady": {...}}}, ...},
    "vs_reference": {"ecmp": {"spray": {"all": {"p50": 2.1, "p99": 1.6, "mean": 1.9},
                                        "bursts": {...}, "steady": {...}},
                              "bound": {...}}, ...},
    "vs_reference_bounds": {"ecmp": {"spray": {"all": {"p50": "exact", ...}, ...}}},
    "floor": {"fct_ms": {...}, "samples_ms": [...], "beaten": {"ecmp": 0, ...}}

Timed-out transfers count at the time they ran, as in every statistic
(:mod:`experiment.censored`): a ratio is "at least" when the mode's statistic is a
lower bound, "at most" when the reference's is, and left out when both are. A mode
(or the reference) whose run is invalid gets no ratios. ``floor`` summarises the
bound's per-transfer floor (no mode can complete a transfer faster) and counts, per
mode, the transfers that finished under it: anything but 0 is a fault of the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from experiment.censored import (
    AT_LEAST,
    AT_MOST,
    EXACT,
    Summary,
    summarise_censored,
    summary_doc,
    summary_from_doc,
)
from experiment.scenario import REFERENCE_MODES, PhaseKind

RATIO_STATS = ("p50", "p99", "mean")
PHASE_GROUPS: dict[str, Callable[[str | None], bool]] = {
    "bursts": lambda kind: kind == PhaseKind.BURST,
    "steady": lambda kind: kind is not None and kind != PhaseKind.BURST,
}
"""The phase groups ratios are split by, from a transfer's phase kind."""
GROUPS = ("all", *PHASE_GROUPS)
FLOOR_SLACK = 1e-9
"""Relative slack under a floor that still counts as meeting it (the engines' rounding)."""


class Timed(Protocol):
    """What a transfer tells (:class:`experiment.results.TransferResult`)."""

    @property
    def index(self) -> int: ...
    @property
    def fct_s(self) -> float | None: ...
    @property
    def censored_s(self) -> float | None: ...
    @property
    def phase_kind(self) -> str | None: ...
    @property
    def floor_s(self) -> float | None: ...
    @property
    def timed_out(self) -> bool: ...


class Run(Protocol):
    """One mode's run (:class:`experiment.results.ModeRun`)."""

    @property
    def repeat(self) -> int: ...
    @property
    def transfers(self) -> Sequence[Timed]: ...


def phase_docs(transfers: Sequence[Timed]) -> dict[str, dict[str, object]]:
    """Per phase group with transfers: their count and statistics (``fct_ms`` and the
    names of those that are lower bounds)."""
    out: dict[str, dict[str, object]] = {}
    for group, member in PHASE_GROUPS.items():
        chosen = [t for t in transfers if member(t.phase_kind)]
        exact = [t.fct_s * 1000.0 for t in chosen if t.fct_s is not None]
        censored = [t.censored_s * 1000.0 for t in chosen if t.timed_out and t.censored_s]
        fct, lower = summary_doc(summarise_censored(exact, censored))
        if fct is not None:
            out[group] = {
                "n": len(exact) + len(censored),
                "fct_ms": fct,
                "fct_ms_lower_bound": lower,
            }
    return out


def ratio(mode: Summary | None, ref: Summary | None) -> tuple[dict[str, float], dict[str, str]]:
    """``mode / ref`` at p50, p99 and the mean, and whether each is exact, at least or at
    most that (statistics both sides only bound are left out)."""
    values: dict[str, float] = {}
    bounds: dict[str, str] = {}
    if mode is None or ref is None:
        return values, bounds
    for k in RATIO_STATS:
        if not ref.stats.get(k) or k not in mode.stats:
            continue
        mode_low, ref_low = k in mode.lower_bound, k in ref.lower_bound
        if mode_low and ref_low:
            continue
        values[k] = mode.stats[k] / ref.stats[k]
        bounds[k] = AT_LEAST if mode_low else AT_MOST if ref_low else EXACT
    return values, bounds


def _group_summary(doc: Mapping[str, Any], group: str) -> Summary | None:
    part = doc if group == "all" else (doc.get("phases") or {}).get(group)
    if not isinstance(part, Mapping):
        return None
    return summary_from_doc(part.get("fct_ms"), part.get("fct_ms_lower_bound") or [])


def vs_references(
    mode_docs: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, dict[str, dict[str, dict[str, float]]]], dict[str, Any]]:
    """Every mode's ratios to every reference that ran, per group; and their bounds."""
    refs = [str(r) for r in REFERENCE_MODES if r in mode_docs and mode_docs[r]["valid"]]
    values: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    bounds: dict[str, Any] = {}
    if not refs:
        return values, bounds
    for mode, doc in mode_docs.items():
        if not doc["valid"]:
            continue
        for ref in refs:
            if ref == mode:
                continue
            for group in GROUPS:
                got, how = ratio(_group_summary(doc, group), _group_summary(mode_docs[ref], group))
                if got:
                    values.setdefault(mode, {}).setdefault(ref, {})[group] = got
                    bounds.setdefault(mode, {}).setdefault(ref, {})[group] = how
    return values, bounds


def floor_doc(runs_by_mode: Mapping[str, Sequence[Run]]) -> dict[str, object] | None:
    """The bound's per-transfer floors (None: no floors), and per mode the transfers
    that completed under theirs."""
    floors: dict[tuple[int, int], float] = {}
    for run in runs_by_mode.get("bound", ()):
        for t in run.transfers:
            if t.floor_s is not None:
                floors[run.repeat, t.index] = t.floor_s
    if not floors:
        return None
    beaten: dict[str, int] = {}
    for mode, runs in runs_by_mode.items():
        beaten[mode] = sum(
            1
            for run in runs
            for t in run.transfers
            if t.fct_s is not None
            and (run.repeat, t.index) in floors
            and t.fct_s < floors[run.repeat, t.index] * (1.0 - FLOOR_SLACK)
        )
    samples = sorted(x * 1000.0 for x in floors.values())
    fct, _ = summary_doc(summarise_censored(samples))
    return {"fct_ms": fct, "samples_ms": samples, "beaten": beaten}


# -- output ----------------------------------------------------------------------------


def references_markdown(results: Mapping[str, Any]) -> list[str]:
    """The table of every mode against the references (no lines when none ran)."""
    vs = results.get("vs_reference") or {}
    how = results.get("vs_reference_bounds") or {}
    modes = results["modes"]
    refs = [str(r) for r in REFERENCE_MODES if r in modes]
    if not vs or not refs:
        return []
    head = " | ".join(f"x {r} {k}" for r in refs for k in RATIO_STATS)
    lines = [
        "Against the physical references (the mode's figure over the reference's: 1.00 is "
        "the reference's, 2.00 twice as slow); bursts are the burst phases' transfers, "
        "steady the others':",
        "",
        f"| mode | phase | n | {head} |",
        "|---|---|---:|" + "---:|" * (len(refs) * len(RATIO_STATS)),
    ]
    for mode, doc in modes.items():
        if not doc["valid"] or doc["fct_ms"] is None:
            continue
        for group in GROUPS:
            part = doc if group == "all" else (doc.get("phases") or {}).get(group)
            if not isinstance(part, Mapping):
                continue
            cells = [
                "-" if r == mode else _cell(vs, how, mode=mode, ref=r, group=group, stat=k)
                for r in refs
                for k in RATIO_STATS
            ]
            label = mode if group == "all" else ""
            lines.append(f"| {label} | {group} | {part['n']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.extend(_floor_lines(results.get("floor")))
    return lines


def _cell(
    vs: Mapping[str, Any], how: Mapping[str, Any], *, mode: str, ref: str, group: str, stat: str
) -> str:
    value = vs.get(mode, {}).get(ref, {}).get(group, {}).get(stat)
    if value is None:
        return "n/a"
    kind = how.get(mode, {}).get(ref, {}).get(group, {}).get(stat)
    prefix = "≥" if kind == AT_LEAST else "≤" if kind == AT_MOST else ""
    return f"{prefix}{value:.2f}"


def _floor_lines(floor: object) -> list[str]:
    if not isinstance(floor, Mapping) or not isinstance(floor.get("fct_ms"), Mapping):
        return []
    fct = floor["fct_ms"]
    text = (
        "bound's floor (each transfer's size over the best rate its NIC, host port and "
        "pooled paths ever allow, plus its burst hold: no mode completes it faster): "
        f"p50 {fct['p50']:.0f} ms, p99 {fct['p99']:.0f} ms, mean {fct['mean']:.0f} ms."
    )
    beaten = {m: n for m, n in (floor.get("beaten") or {}).items() if n}
    if beaten:
        text += (
            " FINISHED UNDER THEIR FLOOR (a fault of the model): "
            + ", ".join(f"{m} {n}" for m, n in beaten.items())
            + "."
        )
    else:
        text += " No transfer of any mode finished under its floor."
    return [text, ""]
