"""One task of a simulated sweep: one (scenario, mode, seed) run, as a Dask worker runs it.

A sweep's tasks are independent and travel to workers that may be other processes or
other machines, so :func:`run_task` is a module-level function of plain, picklable
arguments: the point's scenario as YAML text (re-validated on the worker), the mode,
the schedule's seed, the repeat number and the engine's name. It runs the mode through
:func:`simulator.run.run_mode`, the very code ``kvfabric simulate --scenario`` runs,
so the same scenario and seed give the same transfers on a worker as on the client.
A worker needs kvfabric installed (the same version as the client).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from experiment.scenario import Tool, parse_scenario
from simulator.run import ModeResult, run_mode
from simulator.workload import build_workload


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """What one task runs: point ``point`` of the sweep, one mode, one seed."""

    point: int
    scenario_text: str
    scenario_file: str
    mode: str
    repeat: int  # from 1; the schedule's seed is ``seed``
    seed: int
    engine: str = "flow"

    @property
    def key(self) -> str:
        """The task's name on the scheduler (unique within a sweep)."""
        return f"sim-point{self.point}-{self.mode}-seed{self.seed}"


@dataclass(frozen=True, slots=True)
class TaskResult:
    """A task's outcome and the worker (``host:pid``) that ran it."""

    point: int
    result: ModeResult
    worker: str


def run_task(
    *,
    point: int,
    scenario_text: str,
    scenario_file: str,
    mode: str,
    repeat: int,
    seed: int,
    engine: str,
) -> TaskResult:
    """Simulate one mode of one point over the schedule of ``seed``."""
    scenario = parse_scenario(scenario_text, scenario_file, Tool.SIMULATE)
    work = build_workload(scenario)
    result = run_mode(work, work.schedule(seed), mode, repeat=repeat, engine=engine)
    return TaskResult(point, result, f"{socket.gethostname()}:{os.getpid()}")


def submit_kwargs(spec: TaskSpec) -> dict[str, str | int]:
    """``spec`` as :func:`run_task`'s (keyword) arguments."""
    return {
        "point": spec.point,
        "scenario_text": spec.scenario_text,
        "scenario_file": spec.scenario_file,
        "mode": spec.mode,
        "repeat": spec.repeat,
        "seed": spec.seed,
        "engine": spec.engine,
    }
