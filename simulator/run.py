"""One scenario's modes and repeats, simulated, into the experiment's results document.

Run ``r`` of every mode uses the schedule of seed ``seed + r`` (as the lab does), so
modes differ only in where transfers go. Results go through the lab's own writer
(:func:`experiment.results.build_results`): ``results.json`` has the experiment's schema,
with the simulator's facts under ``simulation`` (engine, events, run time, the
model's settings), ``results.md`` its table and ``cdf.png`` its plot; ``utilisation.png``
adds each tier's mean utilisation over time, per mode.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from experiment.arrivals import Schedule
from experiment.errors import ScenarioError
from experiment.results import ModeRun, build_results
from experiment.scenario import REFERENCE_MODES, Scenario
from simulator.engine import FabricEngine, RatePolicy
from simulator.flow import FlowEngine
from simulator.kvaware import KvAware, Scheduled
from simulator.modes import DRIVERS, Driver, TierSeries
from simulator.parallel import run_parallel
from simulator.reference import Bound, Spray
from simulator.workload import Workload, build_workload


class _Run(NamedTuple):
    """One run of :func:`simulate`: its repeat (from 1) and its mode."""

    repeat: int
    mode: str

    def __str__(self) -> str:
        return f"{self.mode}, repeat {self.repeat}"


def _flow_engine(work: Workload, policy: RatePolicy) -> FabricEngine:
    return FlowEngine(work.network, policy)


def _packet_engine(work: Workload, policy: RatePolicy) -> FabricEngine:
    if policy is not RatePolicy.MAX_MIN:
        raise ValueError(f"the packet engine shares links as TCP does, not by {policy}")
    from simulator.packet import for_workload  # ns-3 loads (and JITs) on first use

    return for_workload(work)


ENGINES: dict[str, Callable[[Workload, RatePolicy], FabricEngine]] = {
    "flow": _flow_engine,
    "packet": _packet_engine,
}
"""Simulator engines by name."""

ENGINE_ONLY: dict[str, str] = {"simulation.packet": "packet", "fabric.pods": "flow"}
"""Scenario keys only one engine honours, and that engine (the packet engine has two
tiers)."""


def check_engine(scenario: Scenario, engine: str) -> None:
    """A located error for a scenario key that ``engine`` does not honour."""
    packet = scenario.simulation.packet
    given: dict[str, tuple[int | None, int | None] | None] = {
        "simulation.packet": (packet.line, packet.col) if packet is not None else None,
        "fabric.pods": (None, None) if scenario.fabric.pods > 1 else None,
    }
    for key, owner in ENGINE_ONLY.items():
        where = given.get(key)
        if where is not None and owner != engine:
            raise ScenarioError(
                scenario.source, key, f"honoured only by the {owner} engine, not by the "
                f"{engine} engine: remove it, or run with `--engine {owner}`", *where,
            )  # fmt: skip


def check_mode(scenario: Scenario, mode: str, engine: str) -> None:
    """A located error for a mode ``engine`` does not run (the references need the flow
    engine's pools)."""
    if mode in REFERENCE_MODES and engine != "flow":
        raise ScenarioError(
            scenario.source, "modes", f"{mode!r}: spray and bound are flow-engine references "
            f"(ns-3's TCP sends a connection on one path, it does not spray): run them with "
            f"`--engine flow`, or leave them out of the modes (`--modes`)",
        )  # fmt: skip


def driver_for(mode: str) -> type[Driver]:
    """The driver class of ``mode``."""
    special: dict[str, type[Driver]] = {
        "kv-aware": KvAware, "scheduled": Scheduled, "spray": Spray, "bound": Bound,
    }  # fmt: skip
    return special.get(mode) or DRIVERS[mode]


@dataclass(slots=True)
class ModeStats:
    """What a mode's runs cost: events handled, packets sent (packet engine: every hop
    counted), wall and CPU seconds, simulated seconds."""

    events: int = 0
    packets: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    simulated_s: float = 0.0


@dataclass(slots=True)
class Simulation:
    """A scenario, the modes to run, and everything the runs produced."""

    scenario: Scenario
    modes: tuple[str, ...]
    repeat: int = 1
    seed: int = 1
    engine: str = "flow"
    jobs: int = 1
    """Worker processes for the runs (:mod:`simulator.parallel`); 1: in this one."""
    runs: list[ModeRun] = field(default_factory=list)
    series: dict[str, TierSeries] = field(default_factory=dict)
    stats: dict[str, ModeStats] = field(default_factory=dict)
    workload: Workload | None = None


@dataclass(slots=True)
class ModeResult:
    """One run of one mode: the transfers, the tiers' utilisation over time, the cost."""

    run: ModeRun
    series: TierSeries
    stats: ModeStats


def run_mode(
    work: Workload,
    schedule: Schedule,
    mode: str,
    *,
    repeat: int,
    engine: str = "flow",
    on_transfer: Callable[[], None] | None = None,
) -> ModeResult:
    """Run ``mode`` over ``schedule`` (run number ``repeat``, from 1) on a fresh engine."""
    check_engine(work.scenario, engine)
    check_mode(work.scenario, mode, engine)
    cls = driver_for(mode)
    fabric = ENGINES[engine](work, cls.rate_policy)
    driver = cls(fabric, work, schedule, repeat=repeat, on_transfer=on_transfer)
    t0, c0 = time.perf_counter(), time.process_time()
    run = driver.run()
    stats = ModeStats(
        events=fabric.events,
        packets=fabric.packet_count(),
        wall_s=time.perf_counter() - t0,
        cpu_s=time.process_time() - c0,
        simulated_s=fabric.now,
    )
    return ModeResult(run, driver.series, stats)


def record(sim: Simulation, result: ModeResult) -> None:
    """Add one mode's run to ``sim`` (its series are kept from the first repeat)."""
    mode = result.run.mode
    sim.runs.append(result.run)
    stats = sim.stats.setdefault(mode, ModeStats())
    stats.wall_s += result.stats.wall_s
    stats.cpu_s += result.stats.cpu_s
    stats.events += result.stats.events
    if result.stats.packets is not None:
        stats.packets = (stats.packets or 0) + result.stats.packets
    stats.simulated_s += result.stats.simulated_s
    if result.run.repeat == 1:
        sim.series[mode] = result.series


def simulate(sim: Simulation, on_transfer: Callable[[], None] | None = None,
             on_stage: Callable[[str], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Run every mode ``repeat`` times; the results document."""
    check_engine(sim.scenario, sim.engine)
    for mode in sim.modes:
        check_mode(sim.scenario, mode, sim.engine)
    work = sim.workload or build_workload(sim.scenario)
    sim.workload = work
    runs = [(r + 1, mode) for r in range(sim.repeat) for mode in sim.modes]
    if sim.jobs > 1 and len(runs) > 1:
        schedules = {r: work.schedule(sim.seed + r - 1) for r in range(1, sim.repeat + 1)}

        def run_one(run: tuple[int, str], count: Callable[[], None]) -> ModeResult:
            repeat, mode = run
            return run_mode(work, schedules[repeat], mode, repeat=repeat, engine=sim.engine,
                            on_transfer=count)  # fmt: skip

        for result in run_parallel(
            [_Run(r, m) for r, m in runs], run_one, jobs=sim.jobs,
            on_transfer=on_transfer, on_stage=on_stage,
        ):  # fmt: skip
            record(sim, result)
        return results_document(sim)
    for r in range(sim.repeat):
        schedule = work.schedule(sim.seed + r)
        for mode in sim.modes:
            if on_stage is not None:
                on_stage(f"{mode}, repeat {r + 1}/{sim.repeat}")
            result = run_mode(
                work, schedule, mode, repeat=r + 1, engine=sim.engine, on_transfer=on_transfer
            )
            record(sim, result)
    return results_document(sim)


def results_document(sim: Simulation) -> dict[str, Any]:
    """The experiment's results document for the runs so far."""
    work = sim.workload
    assert work is not None
    s = sim.scenario.simulation
    controller = s.controller or work.fabric.controller
    extra: dict[str, object] = {
        "seed": sim.seed,
        "repeat": sim.repeat,
        "simulation": {
            "engine": sim.engine,
            "transfer_bytes": work.nbytes,
            "hosts": len(work.fabric.hosts),
            "leaves": len(work.network.leaves),
            "spines": len(work.network.spines),
            "ecmp_k": s.ecmp_k,
            "flowlet_period_s": s.flowlet_period_s,
            "write_latency_s": s.write_latency_s,
            "telemetry_delay_s": s.telemetry_delay_s,
            "poll_interval_s": controller.telemetry.poll_interval_s,
            "runs": {
                mode: {
                    "events": st.events,
                    "packets": st.packets,
                    "wall_s": st.wall_s,
                    "cpu_s": st.cpu_s,
                    "simulated_s": st.simulated_s,
                    "events_per_s": st.events / st.wall_s if st.wall_s > 0 else None,
                }
                for mode, st in sim.stats.items()
            },
        },
    }
    if work.scaling is not None:
        extra["scaling"] = work.scaling.as_dict()
    return build_results(sim.scenario.name, sim.runs, modes=sim.modes, extra=extra)


def write_outputs(sim: Simulation, doc: dict[str, Any], out: Path) -> Sequence[Path]:
    """results.json, results.md, cdf.png and utilisation.png in ``out``."""
    from experiment.plots import plot_cdf
    from experiment.results import write_results
    from simulator.plots import plot_utilisation

    json_path, md_path = write_results(out, doc)
    cdf = plot_cdf(doc, out / "cdf.png")
    util = plot_utilisation(sim.series, out / "utilisation.png", title=sim.scenario.name)
    return json_path, md_path, cdf, util
