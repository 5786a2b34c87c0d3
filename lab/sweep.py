"""A sweep on the emulated fabric: every point of a sweep file run as a lab experiment.

The sweep file, its points and ``sweep.json``/``sweep.png`` are the experiment's
(:mod:`experiment.sweep`); this module only runs each point on Mininet, into its own
directory, and writes the sweep's files after every point.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiment.scenario import Scenario
from experiment.sweep import Sweep, samples, write_sweep

if TYPE_CHECKING:
    from lab.run import Experiment


def run_sweep(
    sweep: Sweep,
    build: Callable[[Scenario, Path], Experiment],
    out: Path,
    runner: Callable[[Experiment], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Run every point (``build`` makes its experiment); write sweep.json and sweep.png."""
    if runner is None:
        from lab.run import run_experiment

        runner = run_experiment
    out.mkdir(parents=True, exist_ok=True)
    points: list[dict[str, Any]] = []
    for point in sweep.points():
        scenario = sweep.scenario_at(point)
        doc = runner(build(scenario, out / scenario.name))
        red = doc["reduction_vs_ecmp"].get("kv-aware")
        points.append(
            {
                **point,
                "scenario": scenario.name,
                "reduction": red,
                "n": samples(doc),
                "valid": doc["valid"],
            }
        )
        write_sweep(sweep, points, out)
    return points
