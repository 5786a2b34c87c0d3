"""``kvfabric simulate``: run a scenario's modes on a simulated fabric (no root needed).

    kvfabric simulate --scenario topologies/scenarios/design-cluster.yaml \\
        [--engine flow|packet] \\
        [--modes ecmp,ecmp-k,flowlet,kv-aware,isolated,scheduled,spray,bound] \\
        [--repeat N] [--seed S] [--out DIR]
    kvfabric simulate --sweep topologies/scenarios/sweep-400g.yaml \\
        [--scheduler tcp://HOST:8786] [--modes LIST] [--repeat N] [--seed S] [--out DIR]

Two engines run the same modes on the same fabric. ``flow`` (the default,
:mod:`simulator.flow`) is flow-level: event-driven, max-min fair rates between
events, at any scale, three-tier pods included. ``packet`` (:mod:`simulator.packet`)
is ns-3: TCP connections whose packets cross real queues (slow start, drops, ECN),
the reference the flow engine is checked against, for two-tier fabrics within its
size limits. Keys only one engine honours are refused by the other.

The scenario is read by the lab's parser for the simulator (keys the simulator does
not honour, and the simulator's own keys, are located errors that name the tool that
honours them). ``DIR`` (default ``results/sim-<scenario>``) receives ``results.json``
(the experiment's schema), ``results.md``, ``cdf.png`` and ``utilisation.png``; the
comparison table is printed at the end. A sweep file (the lab's format) runs every
(grid point, mode, seed) as an independent Dask task, on a local in-process cluster
by default or on the ``dask scheduler`` at ``--scheduler``; a progress line follows
the tasks as they complete, and ``DIR`` (default ``results/sim-<sweep>``) receives
each point's outputs in its own directory plus ``sweep.json``, ``sweep.md`` (the
table, also printed) and ``sweep.png``. Exit statuses: 0 for a run whose transfers
all completed, 3 when some failed (a path that stayed down: reported, not hidden), 1
for a bad scenario or sweep file or an unreachable scheduler, 2 for a bad command
line, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from controller.errors import ConfigError
from kvfabric.commands.options import checked_modes, exit_status

if TYPE_CHECKING:
    from experiment.sweep import Sweep


def configure(parser: argparse.ArgumentParser) -> None:
    """The command's options."""
    from simulator.run import ENGINES

    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--scenario", type=Path, help="scenario file (topologies/scenarios/*.yaml)")
    what.add_argument(
        "--sweep", type=Path, help="sweep file: run a scenario over a grid, as Dask tasks"
    )
    parser.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default="flow",
        help="flow (default): flow-level, max-min fair rates between events, any scale; "
        "packet: ns-3, TCP packets through real queues (slow start, drops, ECN), two-tier "
        "fabrics within its size limits",
    )
    parser.add_argument(
        "--modes", help="comma-separated: ecmp,ecmp-k,flowlet,kv-aware,isolated,scheduled, "
        "and the flow engine's references spray,bound (default: the scenario's)",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="runs of every mode (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="arrival seed of the first run")
    parser.add_argument("--out", type=Path, help="output directory (default results/sim-NAME)")
    parser.add_argument(
        "-j", "--jobs", type=int, default=None,
        help="runs (modes x repeats) side by side in this many processes (default: the "
        "CPUs available; 1: one after another in this process)",
    )  # fmt: skip
    parser.add_argument(
        "--scheduler",
        help="with --sweep: a Dask scheduler, tcp://HOST:8786 (default: a local in-process "
        "cluster)",
    )


def run(args: argparse.Namespace) -> int:
    """Simulate; see the module docstring for exit statuses."""
    from experiment.errors import ExperimentError
    from experiment.scenario import ModeName

    if args.jobs is not None and args.jobs < 1:
        print(f"kvfabric simulate: error: --jobs must be 1 or more, got {args.jobs}",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.scheduler is not None and args.sweep is None:
        print("kvfabric simulate: error: --scheduler goes with --sweep", file=sys.stderr)
        return 2
    try:
        modes = checked_modes(args.repeat, args.modes, [str(m) for m in ModeName])
    except ValueError as exc:
        print(f"kvfabric simulate: error: {exc}", file=sys.stderr)
        return 2
    scenario_or_sweep = _sweep if args.sweep is not None else _scenario
    errors = (ExperimentError, ConfigError)
    return exit_status("simulate", partial(scenario_or_sweep, args, modes), errors)


def _scenario(args: argparse.Namespace, modes: tuple[str, ...] | None) -> int:
    """Run a scenario's modes; 0 when every transfer completed, else 3."""
    from experiment.progress import Progress
    from experiment.results import markdown_table
    from experiment.scenario import Tool, load_scenario
    from simulator.parallel import default_jobs
    from simulator.run import Simulation, simulate, write_outputs

    scenario = load_scenario(args.scenario, Tool.SIMULATE)
    sim = Simulation(
        scenario,
        modes or tuple(str(m) for m in scenario.modes),
        repeat=args.repeat,
        seed=args.seed,
        engine=args.engine,
        jobs=args.jobs if args.jobs is not None else default_jobs(),
    )
    progress = Progress(scenario.transfers * len(sim.modes) * args.repeat)
    try:
        doc = simulate(sim, on_transfer=progress.advance, on_stage=progress.set_stage)
    finally:
        progress.close()
    out = args.out or Path("results") / f"sim-{scenario.name}"
    write_outputs(sim, doc, out)
    print(markdown_table(doc))
    print(f"results: {out / 'results.json'}")
    return 0 if doc["valid"] else 3


def _sweep(args: argparse.Namespace, modes: tuple[str, ...] | None) -> int:
    """Run a sweep file's grid as Dask tasks; the sweep's exit status."""
    from experiment.scenario import Tool
    from experiment.sweep import load_sweep
    from simulator.sweep import sweep_table

    sweep = load_sweep(args.sweep, Tool.SIMULATE)
    points = _run_sweep(args, sweep, modes or sweep.modes)
    out = args.out or Path("results") / f"sim-{sweep.name}"
    print(sweep_table(sweep, points, modes or sweep.modes))
    print(f"sweep: {len(points)} points; table: {out / 'sweep.md'}; plot: {out / 'sweep.png'}")
    return 0 if all(p["valid"] for p in points) else 3


def _run_sweep(
    args: argparse.Namespace, sweep: Sweep, modes: tuple[str, ...]
) -> list[dict[str, object]]:
    from experiment.progress import Progress
    from simulator.cluster import cluster_client
    from simulator.sweep import plan, run_sweep
    from simulator.tasks import TaskResult, TaskSpec

    points, specs = plan(sweep, modes, seed=args.seed, repeat=args.repeat, engine=args.engine)
    transfers = {p.index: p.scenario.transfers for p in points}
    progress = Progress(sum(transfers[s.point] for s in specs))
    where = args.scheduler or "a local in-process cluster"
    progress.set_stage(f"{len(specs)} tasks ({len(points)} points) on {where}")
    done = 0

    def on_task(spec: TaskSpec, result: TaskResult) -> None:
        nonlocal done
        done += 1
        progress.stage = (
            f"task {done}/{len(specs)}: point {spec.point + 1} {spec.mode} seed {spec.seed}"
        )
        progress.advance(transfers[spec.point])

    out = args.out or Path("results") / f"sim-{sweep.name}"
    try:
        with cluster_client(args.scheduler) as client:
            return run_sweep(
                sweep, modes, client, out, seed=args.seed, repeat=args.repeat,
                engine=args.engine, on_task=on_task,
            )  # fmt: skip
    finally:
        progress.close()
