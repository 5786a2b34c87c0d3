"""``kvfabric bench simulate``: the flow-level simulator's speed, and how it grows.

Two measurements, on the design's cluster (``topologies/scenarios/design-cluster.yaml``:
1,280 GPUs in 24 racks, 4 spines):

1. *growth*: ECMP runs of 10^2, 10^3, 10^4 and 10^5 transfers arriving as one Poisson
   stream at the scenario's load (a mean gap of 8 ms), with its background and neither
   bursts nor cable events, so that the number of concurrent flows stays the same and
   only the length of the run grows. Each size reports events handled, wall and CPU seconds, and
   events per CPU second; the slope of log(time) against log(transfers) says how run
   time grows (1.0 is linear);
2. *the cluster*: the scenario as shipped (10,000 transfers with bursts of 256), every
   mode, against the goal of 30 s for all of them on this 2-core machine.

Wall time depends on what else the machine runs; CPU time (``time.process_time``) is
reported next to it and is the steadier figure. The last line printed is one JSON
object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from experiment.scenario import Tool, load_scenario, parse_scenario
from simulator.run import Simulation, simulate

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "topologies" / "scenarios" / "design-cluster.yaml"
GOAL_S = 30.0


def parser() -> argparse.ArgumentParser:
    """The benchmark's command line."""
    p = argparse.ArgumentParser(prog="kvfabric bench simulate", description=__doc__)
    p.add_argument("--sizes", default="100,1000,10000,100000", help="transfers per growth run")
    p.add_argument("--no-cluster", action="store_true", help="skip the all-modes cluster run")
    return p


def poisson_variant(count: int) -> str:
    """The cluster's scenario text with one Poisson phase of ``count`` transfers."""
    text = CLUSTER.read_text(encoding="utf-8")
    start = text.index("arrivals:")
    end = text.index("background:")
    arrivals = f"arrivals:\n  - {{kind: poisson, count: {count}, mean_gap: 8ms}}\n\n"
    text = text[:start] + arrivals + text[end:]
    return text[: text.index("events:")] + text[text.index("run:") :]


def growth(sizes: list[int]) -> list[dict[str, float]]:
    """ECMP runs of every size; one row of figures each."""
    rows = []
    for n in sizes:
        scenario = parse_scenario(poisson_variant(n), f"poisson-{n}.yaml", Tool.SIMULATE)
        sim = Simulation(scenario, ("ecmp",))
        w0, c0 = time.perf_counter(), time.process_time()
        simulate(sim)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        st = sim.stats["ecmp"]
        row = {
            "transfers": n,
            "events": st.events,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "events_per_cpu_s": round(st.events / st.cpu_s) if st.cpu_s else 0,
            "simulated_s": round(st.simulated_s, 3),
        }
        print(
            f"  {n:>7} transfers: {st.events:>8} events, {wall:7.2f} s wall, {cpu:7.2f} s CPU "
            f"(run {st.cpu_s:.2f} s: {row['events_per_cpu_s']} events/s), "
            f"{st.simulated_s:.1f} s simulated",
            flush=True,
        )
        rows.append(row)
    return rows


def slope(rows: list[dict[str, float]]) -> float | None:
    """Least-squares slope of log(CPU s) against log(transfers), sizes of 1,000 and up."""
    pts = [(math.log(r["transfers"]), math.log(r["cpu_s"])) for r in rows if r["transfers"] >= 1000]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    num = sum((x - mx) * (y - my) for x, y in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return num / den if den else None


def cluster() -> dict[str, object]:
    """The shipped cluster scenario, every mode."""
    scenario = load_scenario(CLUSTER, Tool.SIMULATE)
    sim = Simulation(scenario, tuple(str(m) for m in scenario.modes))
    w0, c0 = time.perf_counter(), time.process_time()
    simulate(sim)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    modes = {
        m: {"events": st.events, "wall_s": round(st.wall_s, 3), "cpu_s": round(st.cpu_s, 3)}
        for m, st in sim.stats.items()
    }
    for m, f in modes.items():
        print(
            f"  {m:>9}: {f['events']:>7} events, {f['wall_s']:6.2f} s wall, {f['cpu_s']:6.2f} s CPU"
        )
    verdict = "meets" if wall < GOAL_S else "misses"
    print(
        f"  all modes: {wall:.2f} s wall, {cpu:.2f} s CPU ({verdict} the {GOAL_S:.0f} s goal on "
        "wall time)",
        flush=True,
    )
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "goal_s": GOAL_S, "modes": modes}


def main() -> None:
    """Run the benchmark and print its figures."""
    args = parser().parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    print("growth (ECMP, Poisson arrivals at the cluster's load):", flush=True)
    rows = growth(sizes)
    k = slope(rows)
    if k is not None:
        print(f"  run time grows as transfers^{k:.2f}", flush=True)
    out: dict[str, object] = {"growth": rows, "growth_exponent": k}
    if not args.no_cluster:
        print("design cluster, 10,000 transfers, every mode:", flush=True)
        out["cluster"] = cluster()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
