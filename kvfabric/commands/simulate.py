"""``kvfabric simulate``: run a scenario's modes on a simulated fabric (no root needed).

    kvfabric simulate --scenario topologies/scenarios/design-cluster.yaml \\
        [--engine flow] [--modes ecmp,ecmp-k,flowlet,kv-aware,isolated] [--repeat N] \\
        [--seed S] [--out DIR]

The scenario is read by the lab's parser for the simulator (keys the simulator does
not honour, and the simulator's own keys, are located errors that name the tool that
honours them). ``DIR`` (default ``results/sim-<scenario>``) receives ``results.json``
(the experiment's schema), ``results.md``, ``cdf.png`` and ``utilisation.png``; the
comparison table is printed at the end. Exit statuses: 0 for a run whose transfers
all completed, 3 when some failed (a path that stayed down: reported, not hidden), 1
for a bad scenario, 2 for a bad command line, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from controller.errors import ConfigError
from kvfabric.suggest import did_you_mean


def configure(parser: argparse.ArgumentParser) -> None:
    """The command's options."""
    from simulator.run import ENGINES

    parser.add_argument(
        "--scenario", type=Path, required=True, help="scenario file (topologies/scenarios/*.yaml)"
    )
    parser.add_argument(
        "--engine", choices=sorted(ENGINES), default="flow", help="simulator engine (flow)"
    )
    parser.add_argument(
        "--modes", help="comma-separated: ecmp,ecmp-k,flowlet,kv-aware,isolated (default: "
        "the scenario's)",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="runs of every mode (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="arrival seed of the first run")
    parser.add_argument("--out", type=Path, help="output directory (default results/sim-NAME)")


def run(args: argparse.Namespace) -> int:
    """Simulate; see the module docstring for exit statuses."""
    from lab.errors import LabError
    from lab.progress import Progress
    from lab.results import markdown_table
    from lab.scenario import ModeName, Tool, load_scenario
    from simulator.run import Simulation, simulate, write_outputs

    if args.repeat < 1:
        print("kvfabric simulate: error: --repeat must be at least 1", file=sys.stderr)
        return 2
    known = [str(m) for m in ModeName]
    modes: tuple[str, ...] | None = None
    if args.modes:
        modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
        for m in modes:
            if m not in known:
                print(
                    f"kvfabric simulate: error: unknown mode {m!r}{did_you_mean(m, known)} "
                    f"(modes: {', '.join(known)})",
                    file=sys.stderr,
                )
                return 2
    try:
        scenario = load_scenario(args.scenario, Tool.SIMULATE)
        sim = Simulation(
            scenario,
            modes or tuple(str(m) for m in scenario.modes),
            repeat=args.repeat,
            seed=args.seed,
            engine=args.engine,
        )
        progress = Progress(scenario.transfers * len(sim.modes) * args.repeat)
        try:
            doc = simulate(sim, on_transfer=progress.advance, on_stage=progress.set_stage)
        finally:
            progress.close()
        out = args.out or Path("results") / f"sim-{scenario.name}"
        write_outputs(sim, doc, out)
    except KeyboardInterrupt:
        print("\nkvfabric simulate: interrupted", file=sys.stderr)
        return 130
    except (LabError, ConfigError) as exc:
        print(f"kvfabric simulate: error: {exc}", file=sys.stderr)
        return 1
    print(markdown_table(doc))
    print(f"results: {out / 'results.json'}")
    return 0 if doc["valid"] else 3
