"""``kvfabric bench simulate_packet``: the packet engine's (ns-3's) speed.

Three measurements:

1. *loading*: the first use of ns-3 in a process imports it through cppyy and compiles
   the engine's C++ side (``simulator/packet_model.cpp``) just in time;
2. *packets per second*: four 20 MB transfers between the two leaves of a 2 x 2
   fabric at 1 Gb/s (two per spine), with no background: packet transmissions (every
   hop counted) per wall and per CPU second of the run;
3. *the small cross-validation scenarios*: each of the lab's five scenarios at lab
   rates (20 Mb/s, 1 MB transfers) in the lab's four modes on the packet engine:
   wall and CPU seconds, packets, and simulated seconds.

Wall time depends on what else the machine runs; CPU time (``time.process_time``) is
the steadier figure. The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import time

from controller.config.generate import leaf_spine
from experiment.scenario import Tool, load_scenario
from simulator.crossval import LAB_FIVE, MODES, scenario_path
from simulator.network import Network
from simulator.packet import PacketEngine, ns3_model
from simulator.run import Simulation, simulate

GBPS = 1_000_000_000


def parser() -> argparse.ArgumentParser:
    """The benchmark's command line."""
    p = argparse.ArgumentParser(prog="kvfabric bench simulate_packet", description=__doc__)
    p.add_argument("--scenarios", default=",".join(LAB_FIVE), help="lab scenarios to time")
    return p


def loading() -> float:
    """Seconds to import ns-3 and compile the engine's C++ side."""
    t0 = time.perf_counter()
    ns3_model()
    return time.perf_counter() - t0


def packet_rate() -> dict[str, float]:
    """Four 20 MB transfers across a 2 x 2 fabric: packets per second."""
    net = Network(leaf_spine(2, 2, 2, link_bps=GBPS, host_bps=10 * GBPS))
    engine = PacketEngine(net)
    pairs = [("h11", "h21", "spine1"), ("h12", "h22", "spine1"), ("h11", "h22", "spine2"),
             ("h12", "h21", "spine2")]  # fmt: skip
    for src, dst, spine in pairs:
        engine.start_flow(net.path(src, dst, spine), 20e6)
    w0, c0 = time.perf_counter(), time.process_time()
    engine.run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    packets = engine.packet_count()
    return {
        "packets": packets,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "packets_per_wall_s": round(packets / wall),
        "packets_per_cpu_s": round(packets / cpu),
        "simulated_s": round(engine.now, 4),
    }


def scenario_times(names: list[str]) -> dict[str, dict[str, float]]:
    """Each lab scenario, the lab's four modes, on the packet engine."""
    out = {}
    for name in names:
        scenario = load_scenario(scenario_path(name, "lab"), Tool.SIMULATE)
        sim = Simulation(scenario, MODES, engine="packet")
        w0, c0 = time.perf_counter(), time.process_time()
        simulate(sim)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        packets = sum(st.packets or 0 for st in sim.stats.values())
        simulated = sum(st.simulated_s for st in sim.stats.values())
        out[name] = {
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "packets": packets,
            "simulated_s": round(simulated, 1),
        }
        print(f"  {name:>15}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, {packets:>10,} packets, "
              f"{simulated:6.1f} s simulated (4 modes)", flush=True)  # fmt: skip
    return out


def main() -> None:
    """Run the benchmark and print its figures."""
    args = parser().parse_args()
    load = loading()
    print(f"loading ns-3 and compiling the engine: {load:.1f} s", flush=True)
    rate = packet_rate()
    print(
        f"packets: {rate['packets']:,} in {rate['wall_s']:.2f} s wall, {rate['cpu_s']:.2f} s "
        f"CPU: {rate['packets_per_wall_s']:,} per wall s, {rate['packets_per_cpu_s']:,} per "
        "CPU s",
        flush=True,
    )
    print("the lab's scenarios at lab rates, packet engine:", flush=True)
    times = scenario_times([n for n in args.scenarios.split(",") if n])
    print(json.dumps({"load_s": round(load, 1), "packet_rate": rate, "scenarios": times}))


if __name__ == "__main__":
    main()
