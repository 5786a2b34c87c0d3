"""``kvfabric experiment``: run a scenario's modes on the emulated fabric (needs root).

    kvfabric experiment --scenario topologies/scenarios/design-example.yaml \\
        [--topology FILE] [--modes ecmp,flowlet,kv-aware,isolated,scheduled] [--repeat N] \\
        [--seed S] [--out DIR] [--switch kvfabric|bmv2] [--program FILE] \\
        [--p4info FILE --p4blob FILE] [--pin-background] [--scale-controller-time]
    kvfabric experiment --sweep topologies/scenarios/sweep.yaml [--out DIR] ...

Without ``--topology`` the fabric is built from the scenario's ``fabric`` section.
``DIR`` (default ``results/<scenario>``) receives ``results.json``, ``results.md``,
``cdf.png``, the fabric file the controller loaded and every process's log; the
comparison table and its validity verdict are printed at the end. The controller
compiles ``p4/kv_fabric.p4`` with ``kvfabric compile`` unless ``--p4info`` and
``--p4blob`` name prebuilt files; ``--switch bmv2`` needs them (p4c-bm2-ss's P4Info
and BMv2 JSON: simple_switch_grpc loads only its own compiler's output).
``--pin-background`` holds every background flow on its planned spine with a static
pin (``POST /v1/pins``) rather than choosing source ports that ECMP hashes there; the
controller then moves those pins off a cable that goes down.
``--scale-controller-time`` runs the lab in the production regime: the controller's
time constants are multiplied by the run's time scale, so that a transfer spans as
many polls as the real one it stands for (:mod:`lab.timescale`). Exit statuses:
0 for a valid run, 3 for a run that completed but is invalid, 1 for an error, 2 for
a bad command line, 130 after Ctrl-C (the partial results are written).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from controller.errors import ConfigError
from kvfabric.commands.options import checked_modes, exit_status

if TYPE_CHECKING:
    from experiment.scenario import Scenario
    from experiment.sweep import Sweep
    from lab.run import Experiment


def configure(parser: argparse.ArgumentParser) -> None:
    """The command's options."""
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--scenario", type=Path, help="scenario file (topologies/scenarios/*.yaml)")
    what.add_argument("--sweep", type=Path, help="sweep file: run a scenario over a grid")
    parser.add_argument("--topology", type=Path, help="fabric file (default: the scenario's)")
    parser.add_argument("--modes", help="comma-separated: ecmp,flowlet,kv-aware,isolated,scheduled")
    parser.add_argument("--repeat", type=int, default=1, help="runs of every mode (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="arrival seed of the first run")
    parser.add_argument("--out", type=Path, help="output directory (default results/NAME)")
    parser.add_argument(
        "--switch", choices=("kvfabric", "bmv2"), default="kvfabric", help="switch target"
    )
    parser.add_argument("--program", help="P4 program the switches start with (default: none)")
    parser.add_argument("--p4info", type=Path, help="prebuilt P4Info the controller pushes")
    parser.add_argument("--p4blob", type=Path, help="prebuilt device config (with --p4info)")
    parser.add_argument(
        "--pin-background",
        action="store_true",
        help="hold background flows on their spines with POST /v1/pins (flow_pin) instead "
        "of steering them through the ECMP hash",
    )
    parser.add_argument(
        "--scale-controller-time",
        action="store_true",
        help="multiply the controller's time constants (polling, telemetry and audit hold "
        "times, timeouts, latency limits) by the run's time scale: the production regime",
    )
    parser.add_argument("--verbose", action="store_true", help="show Mininet's own output")


def run(args: argparse.Namespace) -> int:
    """Run the experiment or sweep; see the module docstring for exit statuses."""
    from experiment.errors import ExperimentError
    from experiment.scenario import LAB_MODES
    from experiment.sweep import Sweep

    try:
        modes = checked_modes(args.repeat, args.modes, [str(m) for m in LAB_MODES])
    except ValueError as exc:
        print(f"kvfabric experiment: error: {exc}", file=sys.stderr)
        return 2
    problem = _pipeline_problem(args)
    if problem is not None:
        print(f"kvfabric experiment: error: {problem}", file=sys.stderr)
        return 2
    # The files are read and validated before anything else, so that a user with a
    # broken scenario hears about the file, not about root.
    try:
        plan = _load(args)
    except (ExperimentError, ConfigError) as exc:
        print(f"kvfabric experiment: error: {exc}", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("kvfabric experiment: error: needs root (Mininet builds the fabric)", file=sys.stderr)
        return 1
    from mininet.log import setLogLevel

    setLogLevel("info" if args.verbose else "warning")
    work: Callable[[], int]
    if isinstance(plan, Sweep):
        work = partial(_sweep, args, plan, modes)
    else:
        work = partial(_experiment, args, plan, modes)
    interrupted = "interrupted; partial results written"
    return exit_status("experiment", work, (ExperimentError, ConfigError), interrupted)


def _pipeline_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the pipeline options, if anything."""
    if (args.p4info is None) != (args.p4blob is None):
        return "--p4info and --p4blob go together"
    if args.switch == "bmv2" and args.p4info is None:
        return (
            "--switch bmv2 needs p4c-bm2-ss's output: --p4info FILE --p4blob FILE "
            "(simple_switch_grpc cannot load kvfabric compile's device config)"
        )
    for name in ("p4info", "p4blob"):
        path = getattr(args, name)
        if path is not None and not path.is_file():
            return f"--{name}: no file {str(path)!r}"
    return None


def _load(args: argparse.Namespace) -> Scenario | Sweep:
    """The scenario or sweep named on the command line, and the topology, validated."""
    from controller.config import load_config
    from experiment.scenario import load_scenario
    from experiment.sweep import load_sweep

    if args.topology is not None:
        load_config(args.topology)
    if args.sweep is not None:
        return load_sweep(args.sweep)
    return load_scenario(args.scenario)


def _experiment(args: argparse.Namespace, scenario: Scenario, modes: tuple[str, ...] | None) -> int:
    from experiment.results import markdown_table
    from lab.run import run_experiment

    exp = _build(args, scenario, modes, args.out or Path("results") / scenario.name)
    doc = run_experiment(exp)
    print(markdown_table(doc))
    print(f"results: {exp.out / 'results.json'}")
    return 0 if doc["valid"] else 3


def _build(
    args: argparse.Namespace, scenario: Scenario, modes: Sequence[str] | None, out: Path
) -> Experiment:
    from controller.config import load_config
    from experiment.fabric import fabric_from_params
    from lab.nodes import Bmv2Switch, P4Switch
    from lab.run import Experiment

    fabric = (
        load_config(args.topology)
        if args.topology is not None
        else fabric_from_params(scenario.fabric, scenario.name)
    )
    return Experiment(
        scenario=scenario,
        fabric=fabric,
        out=out,
        modes=tuple(modes) if modes else tuple(str(m) for m in scenario.modes),
        repeat=args.repeat,
        seed=args.seed,
        switch_cls=Bmv2Switch if args.switch == "bmv2" else P4Switch,
        program=args.program,
        pipeline_files=(args.p4info, args.p4blob) if args.p4info is not None else None,
        pin_background=args.pin_background,
        scale_controller_time=args.scale_controller_time,
    )


def _sweep(args: argparse.Namespace, sweep: Sweep, modes: tuple[str, ...] | None) -> int:
    from lab.sweep import run_sweep

    out = args.out or Path("results") / sweep.name
    points = run_sweep(sweep, lambda s, o: _build(args, s, modes or sweep.modes, o), out)
    print(f"sweep: {len(points)} points; plot: {out / 'sweep.png'}")
    return 0 if all(p["valid"] for p in points) else 3
