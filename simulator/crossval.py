"""Flow against packet: the same scenarios, seeds and modes through both engines.

    python -m simulator.crossval [--rates lab|production] [--scale S] [--queue N]
        [--modes LIST] [--seed S] [--scenarios LIST] [--out DIR]

For each scenario (the lab's five by default: ``design-example``, ``asymmetric``,
``collisions``, ``failure``, ``herding``; ``--rates production`` takes their ``-400g``
variants) every mode runs on the flow engine and on the packet engine (ns-3), with the
same schedule. The packet run takes ``simulation.packet`` settings from the command
line: ``--scale`` (production runs are too many packets for ns-3 at full scale: rates
and bytes are scaled together, so a transfer keeps its duration) and ``--queue``
(packets per egress queue; default the scenario's ``shaping.queue``). The flow run
needs none of it (a fluid model is the same at any scale).

Out come, per scenario and mode, both engines' p99 and mean reductions against ECMP,
their differences in percentage points, whether the two engines rank the modes (by
mean) the same, and each run's wall time and packets: one JSON file per scenario (a
scenario whose file is there is not run again), ``crossval.json``,
``crossval.md`` (the table, also printed) and ``crossval.png`` (packet against flow
reductions, with the ±10-point band). :func:`compare_scenario` is the library entry
the benchmark uses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiment.scenario import Scenario, Tool, load_scenario
from experiment.scenario_sim import PacketSettings
from simulator.run import Simulation, simulate

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_DIR = ROOT / "topologies" / "scenarios"
LAB_FIVE = ("design-example", "asymmetric", "collisions", "failure", "herding")
MODES = ("ecmp", "flowlet", "kv-aware", "isolated")
BAND_PP = 10.0
"""How far apart (percentage points) the engines' reductions may be."""


def scenario_path(name: str, rates: str) -> Path:
    """The scenario file of ``name`` at lab or production rates."""
    return SCENARIO_DIR / (f"{name}-400g.yaml" if rates == "production" else f"{name}.yaml")


def for_engine(scenario: Scenario, engine: str, packet: PacketSettings) -> Scenario:
    """``scenario`` with the packet settings for the packet engine, none for the flow one."""
    settings = packet if engine == "packet" else None
    return dataclasses.replace(
        scenario, simulation=dataclasses.replace(scenario.simulation, packet=settings)
    )


def compare_scenario(
    scenario: Scenario, modes: Sequence[str], packet: PacketSettings, *, seed: int = 1
) -> dict[str, Any]:
    """Both engines' results for ``scenario`` and how far apart they are."""
    docs: dict[str, dict[str, Any]] = {}
    wall: dict[str, float] = {}
    for engine in ("flow", "packet"):
        sim = Simulation(for_engine(scenario, engine, packet), tuple(modes), seed=seed,
                         engine=engine)  # fmt: skip
        t0 = time.perf_counter()
        docs[engine] = simulate(sim)
        wall[engine] = time.perf_counter() - t0
    rows = []
    for mode in modes:
        if mode == "ecmp":
            continue
        row: dict[str, Any] = {"mode": mode}
        for metric in ("p99", "mean"):
            for engine, doc in docs.items():
                fct = doc["modes"]
                row[f"{engine}_{metric}"] = 100 * (
                    1 - fct[mode]["fct_ms"][metric] / fct["ecmp"]["fct_ms"][metric]
                )
            row[f"gap_{metric}"] = row[f"packet_{metric}"] - row[f"flow_{metric}"]
        rows.append(row)
    ranks = {e: _ranking(doc, modes) for e, doc in docs.items()}
    runs = docs["packet"]["simulation"]["runs"]
    return {
        "scenario": scenario.name,
        "rows": rows,
        "ranking": ranks,
        "same_ranking": ranks["flow"] == ranks["packet"],
        "within_band": all(
            abs(r["gap_p99"]) <= BAND_PP and abs(r["gap_mean"]) <= BAND_PP for r in rows
        ),
        "mean_ms": {
            e: {m: doc["modes"][m]["fct_ms"]["mean"] for m in modes} for e, doc in docs.items()
        },
        "p99_ms": {
            e: {m: doc["modes"][m]["fct_ms"]["p99"] for m in modes} for e, doc in docs.items()
        },
        "wall_s": wall,
        "packets": sum(r["packets"] or 0 for r in runs.values()),
        "packet_cpu_s": sum(r["cpu_s"] for r in runs.values()),
        "scale": packet.scale,
    }


def _ranking(doc: dict[str, Any], modes: Sequence[str]) -> list[str]:
    """Modes from fastest to slowest mean; a mode within 2% of the previous group's
    first joins it (written ``a=b``): a tie is no ranking."""
    means = {m: doc["modes"][m]["fct_ms"]["mean"] for m in modes}
    groups: list[list[str]] = []
    for m in sorted(modes, key=means.__getitem__):
        if groups and means[m] <= means[groups[-1][0]] * 1.02:
            groups[-1].append(m)
        else:
            groups.append([m])
    return ["=".join(sorted(g)) for g in groups]


def markdown(results: Sequence[dict[str, Any]], title: str) -> str:
    """The cross-validation table."""
    lines = [
        f"### {title}",
        "",
        "| scenario | mode | p99 flow | p99 packet | gap (pp) | mean flow | mean packet "
        "| gap (pp) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        for r in res["rows"]:
            lines.append(
                f"| {res['scenario']} | {r['mode']} | {-r['flow_p99']:+.0f}% "
                f"| {-r['packet_p99']:+.0f}% | {r['gap_p99']:+.0f} | {-r['flow_mean']:+.0f}% "
                f"| {-r['packet_mean']:+.0f}% | {r['gap_mean']:+.0f} |"
            )
    lines += [
        "",
        "| scenario | ranking (flow) | ranking (packet) | same | within 10 pp "
        "| packet run s | flow run s | packets |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    for res in results:
        lines.append(
            f"| {res['scenario']} | {' < '.join(res['ranking']['flow'])} "
            f"| {' < '.join(res['ranking']['packet'])} | {'yes' if res['same_ranking'] else 'no'} "
            f"| {'yes' if res['within_band'] else 'no'} | {res['wall_s']['packet']:.0f} "
            f"| {res['wall_s']['flow']:.1f} | {res['packets']:,} |"
        )
    return "\n".join(lines) + "\n"


def plot(results: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Packet against flow reductions (p99 and mean), with the ±10-point band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5))
    lo, hi = -70.0, 100.0
    ax.fill_between([lo, hi], [lo - BAND_PP, hi - BAND_PP], [lo + BAND_PP, hi + BAND_PP],
                    color="0.9", label="±10 points")  # fmt: skip
    ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8)
    markers = {"flowlet": "s", "kv-aware": "o", "isolated": "^", "ecmp-k": "D"}
    for metric, fill in (("p99", True), ("mean", False)):
        for mode, marker in markers.items():
            rows = [r for res in results for r in res["rows"] if r["mode"] == mode]
            if rows:
                ax.scatter(
                    [r[f"flow_{metric}"] for r in rows],
                    [r[f"packet_{metric}"] for r in rows],
                    marker=marker,
                    label=f"{mode} {metric}",
                    facecolors="C0" if fill else "none",
                    edgecolors="C0" if fill else "C1",
                )
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("flow engine: reduction against ECMP (%)")
    ax.set_ylabel("packet engine (ns-3): reduction against ECMP (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; write crossval.json, .md and .png."""
    p = argparse.ArgumentParser(prog="python -m simulator.crossval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--rates", choices=("lab", "production"), default="lab")
    p.add_argument("--scale", type=float, default=1.0, help="packet engine's scale (0..1]")
    p.add_argument("--queue", type=int, help="packets per egress queue (packet engine)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--scenarios", default=",".join(LAB_FIVE))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("results") / "crossval")
    args = p.parse_args(argv)
    packet = PacketSettings(scale=args.scale, queue_packets=args.queue)
    modes = tuple(m for m in args.modes.split(",") if m)
    results = []
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenarios.split(","):
        scenario = load_scenario(scenario_path(name, args.rates), Tool.SIMULATE)
        done = args.out / f"{scenario.name}.json"  # a scenario already compared is reused
        if done.exists():
            results.append(json.loads(done.read_text()))
            continue
        res = compare_scenario(scenario, modes, packet, seed=args.seed)
        done.write_text(json.dumps(res, indent=1) + "\n")
        print(f"{res['scenario']}: packet {res['wall_s']['packet']:.0f} s, "
              f"same ranking: {res['same_ranking']}", flush=True)  # fmt: skip
        results.append(res)
    title = f"flow against packet, {args.rates} rates" + (
        f" (packet engine at scale {args.scale:g})" if args.scale != 1 else ""
    )
    (args.out / "crossval.json").write_text(json.dumps(results, indent=1) + "\n")
    table = markdown(results, title)
    (args.out / "crossval.md").write_text(table)
    plot(results, args.out / "crossval.png", title)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
