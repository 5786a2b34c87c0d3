"""A sweep on the simulator: every (grid point, mode, seed) run is a Dask task.

The sweep file is the experiment's (:mod:`experiment.sweep`, the same parser and located
errors as the lab's),
read for ``kvfabric simulate`` so that its scenario and modes may be the simulator's.
:func:`plan` makes one :class:`~simulator.tasks.TaskSpec` per point, mode and seed
(``seed``, ``seed + 1``, ... for ``repeat`` runs, as ``--scenario`` uses them);
:func:`run_sweep` submits them all to a ``distributed`` client and gathers them as
they complete, in any order. When a point's last task arrives its runs are put back
in ``--scenario``'s order (repeat, then mode) and written like a single simulation
(``results.json``, ``results.md``, ``cdf.png``, ``utilisation.png`` in the point's
directory); at the end ``sweep.json``, ``sweep.md`` (the table) and ``sweep.png``
(the experiment's plot) describe the whole grid. A failed task fails the sweep: the other
tasks are cancelled and the task's error is raised; a task whose workers kept dying
(``distributed``'s ``KilledWorker``) or that was cancelled is a
:class:`~simulator.cluster.ClusterError` (``distributed`` itself moves a dead worker's
tasks to the others, up to its ``allowed-failures`` per task).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import Client, Future, KilledWorker, as_completed

from experiment.results import change_vs_ecmp
from experiment.scenario import Scenario
from experiment.sweep import Sweep, samples, write_sweep
from simulator.cluster import ClusterError
from simulator.run import Simulation, check_mode, record, results_document, write_outputs
from simulator.tasks import TaskResult, TaskSpec, run_task, submit_kwargs
from simulator.workload import build_workload


@dataclass(slots=True)
class Point:
    """One grid point: its axis values, scenario, and the task results so far."""

    index: int
    values: dict[str, Any]
    scenario: Scenario
    expected: int
    results: list[TaskResult] = field(default_factory=list)


def plan(
    sweep: Sweep, modes: Sequence[str], *, seed: int, repeat: int, engine: str
) -> tuple[list[Point], list[TaskSpec]]:
    """The grid's points and one task per point, mode and seed."""
    points: list[Point] = []
    specs: list[TaskSpec] = []
    for i, values in enumerate(sweep.points()):
        text, file = sweep.point_text(values)
        scenario = sweep.scenario_at(values)
        for mode in modes:
            check_mode(scenario, mode, engine)
        points.append(Point(i, values, scenario, len(modes) * repeat))
        specs.extend(
            TaskSpec(i, text, file, mode, r + 1, seed + r, engine)
            for r in range(repeat)
            for mode in modes
        )
    return points, specs


def run_sweep(
    sweep: Sweep,
    modes: Sequence[str],
    client: Client,
    out: Path,
    *,
    seed: int = 1,
    repeat: int = 1,
    engine: str = "flow",
    on_task: Callable[[TaskSpec, TaskResult], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the grid on ``client``; write every point's and the sweep's outputs in ``out``."""
    points, specs = plan(sweep, modes, seed=seed, repeat=repeat, engine=engine)
    out.mkdir(parents=True, exist_ok=True)
    futures: dict[Future[TaskResult], TaskSpec] = {
        client.submit(run_task, **submit_kwargs(s), key=s.key, pure=False, retries=0): s
        for s in specs
    }
    records: dict[int, dict[str, Any]] = {}
    try:
        for future in as_completed(futures):
            spec = futures[future]
            try:
                result: TaskResult = future.result()
            except (KilledWorker, CancelledError) as exc:
                raise ClusterError(f"task {spec.key} was lost: {exc}") from None
            if on_task is not None:
                on_task(spec, result)
            point = points[spec.point]
            point.results.append(result)
            if len(point.results) == point.expected:
                records[point.index] = _finish(
                    point, modes, out, seed=seed, repeat=repeat, engine=engine
                )
    finally:
        client.cancel(list(futures))
    ordered = [records[i] for i in sorted(records)]
    plotted = "kv-aware" if "kv-aware" in modes else next((m for m in modes if m != "ecmp"), "")
    write_sweep(sweep, ordered, out, mode=plotted)
    (out / "sweep.md").write_text(sweep_table(sweep, ordered, modes) + "\n", encoding="utf-8")
    return ordered


def _finish(
    point: Point, modes: Sequence[str], out: Path, *, seed: int, repeat: int, engine: str
) -> dict[str, Any]:
    """Write the point's outputs; its record in ``sweep.json``."""
    sim = Simulation(point.scenario, tuple(modes), repeat=repeat, seed=seed, engine=engine)
    sim.workload = build_workload(point.scenario)
    rank = {m: i for i, m in enumerate(modes)}
    for task in sorted(point.results, key=lambda t: (t.result.run.repeat, rank[t.result.run.mode])):
        record(sim, task.result)
    doc = results_document(sim)
    write_outputs(sim, doc, out / point.scenario.name)
    reductions: Mapping[str, Any] = doc["reduction_vs_ecmp"]
    return {
        **point.values,
        "scenario": point.scenario.name,
        "reduction": reductions.get("kv-aware"),
        "reductions": dict(reductions),
        "reduction_bounds": dict(doc.get("reduction_bounds") or {}),
        "fct_ms": {m: d["fct_ms"] for m, d in doc["modes"].items()},
        "n": samples(doc),
        "valid": doc["valid"],
        "workers": sorted({t.worker for t in point.results}),
    }


def sweep_table(sweep: Sweep, points: Sequence[Mapping[str, Any]], modes: Sequence[str]) -> str:
    """The grid as a markdown table: each mode's statistic, and its change against ECMP
    (negative is faster, as in the experiment's table)."""
    stat = sweep.stat
    axes = [a.name for a in sweep.axes]
    others = [m for m in modes if m != "ecmp"] if "ecmp" in modes else []
    head = [*axes, "n", *(f"{m} {stat} ms" for m in modes), *(f"{m} vs ECMP" for m in others)]
    lines = [
        f"### {sweep.name}: {stat} per point",
        "",
        "| " + " | ".join([*head, "valid"]) + " |",
        "|" + "---:|" * len(head) + "---|",
    ]
    for p in points:
        fct = p["fct_ms"]
        cells = [str(p[a]) for a in axes] + [str(p["n"] if p["n"] is not None else "-")]
        cells += [f"{fct[m][stat]:.1f}" if fct.get(m) else "-" for m in modes]
        bounds = p["reduction_bounds"]
        cells += [change_vs_ecmp(p["reductions"].get(m), bounds.get(m), stat) for m in others]
        lines.append("| " + " | ".join([*cells, "yes" if p["valid"] else "no"]) + " |")
    return "\n".join(lines)
