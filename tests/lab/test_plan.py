"""Planning an experiment without root: roles, background flows, scaling, sweeps, validity."""

from __future__ import annotations

import dataclasses
import io
import warnings
from pathlib import Path
from typing import Any

import pytest

from controller.config import FabricConfig
from controller.config.generate import leaf_spine
from experiment.arrivals import generate
from experiment.background import Pairing, for_flowlet
from experiment.ecmp import FLOWLET_STEP, EcmpOracle
from experiment.errors import ScenarioError
from experiment.fabric import fabric_from_params
from experiment.flows import FlowKey
from experiment.progress import Progress
from experiment.roles import Roles, resolve_roles
from experiment.scenario import BackgroundLoad, Tool, load_scenario, parse_scenario
from experiment.sweep import load_sweep
from lab.monitor import Counters, Observed, unexplained_drops
from lab.run import Experiment, plan_experiment
from lab.sweep import run_sweep
from lab.traffic import (
    client_argv,
    load_spine,
    plan_background,
    server_argv,
)
from lab.validity import judge
from simulator.workload import build_workload

from .conftest import ROOT

SCENARIOS = ROOT / "topologies" / "scenarios"


def plan_of(name: str) -> Any:
    with warnings.catch_warnings():  # shifting-failure's after_failure is deprecated
        warnings.simplefilter("ignore", FutureWarning)
        s = load_scenario(SCENARIOS / f"{name}.yaml")
    return s, plan_experiment(
        Experiment(s, fabric_from_params(s.fabric, s.name), Path("/tmp/unused"))
    )


@pytest.mark.parametrize(
    "name", ["design-example", "collisions", "failure", "shifting-failure", "herding"]
)
def test_the_lab_and_the_simulator_plan_the_same_background(name: str) -> None:
    s, plan = plan_of(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        work = build_workload(load_scenario(SCENARIOS / f"{name}.yaml", Tool.SIMULATE))
    assert work.pairing is Pairing.RACKS  # the scenario names its background hosts

    def tuples(flows: Any) -> list[tuple[Any, ...]]:
        return [(f.key, f.spine, f.rate_bps, f.after_failure) for f in flows]

    assert tuples(work.background) == tuples(plan.background)
    assert (name == "herding") == (not plan.background)
    for repeat in (1, 2, 3):  # flowlet mode's own ports, fresh per run, the same in both
        flowlet = for_flowlet(work.background, work.fabric, repeat, s.failed_cables)
        assert tuples(flowlet) == tuples(plan.background_for("flowlet", repeat))
    # and the transfers of a seed: the same arrivals, hosts and ECMP source ports
    for seed in (1, 7):
        lab = generate(s.phases, plan.roles, work.nbytes, seed, s.scheduling.deadline_s)
        assert lab == work.schedule(seed)


def test_design_example_plan():
    _, plan = plan_of("design-example")
    assert plan.roles.senders == ("h11", "h12") and plan.roles.receivers == ("h21", "h22")
    flows = {(f.spine, f.key.src, f.key.dst, f.rate_bps, f.key.protocol) for f in plan.background}
    assert flows == {
        ("spine1", "h13", "h23", 15_000_000, "udp"),
        ("spine2", "h14", "h24", 12_500_000, "udp"),
    }
    # Steered by the choice of source port: ECMP itself puts each flow on its spine.
    oracle = EcmpOracle(plan.fabric, salts=(0,))
    assert not any(f.pinned for f in plan.background)
    assert all(oracle(f.key) == f.spine for f in plan.background)
    # Flowlet mode gets its own ports, steered for a slot's first flowlet, fresh per repeat.
    first = EcmpOracle(plan.fabric, salts=(FLOWLET_STEP,))
    flowlet = plan.background_for("flowlet", 0)
    assert [(f.spine, f.rate_bps) for f in flowlet] == [
        (f.spine, f.rate_bps) for f in plan.background
    ]
    assert all(first(f.key) == f.spine for f in flowlet)
    ports = {f.key.src_port for f in plan.background}
    assert not ports & {f.key.src_port for f in flowlet}
    assert {f.key.src_port for f in flowlet} != {
        f.key.src_port for f in plan.background_for("flowlet", 1)
    }
    assert plan.background_for("kv-aware", 3) == plan.background
    assert plan.scaling.lab_bytes == 1_000_000
    assert plan.scaling.real_bytes == 1_342_177_280
    assert plan.fabric.controller.api.port != 8080  # free ports for every run


def test_pinned_background_when_asked():
    s = load_scenario(SCENARIOS / "design-example.yaml")
    exp = Experiment(s, fabric_from_params(s.fabric, s.name), Path("/tmp/x"), pin_background=True)
    plan = plan_experiment(exp)
    assert all(f.pinned for f in plan.background)
    assert plan.background_for("flowlet", 0) == plan.background


def test_ecmp_oracle_matches_the_p4_reference_model():
    from tests.p4 import fabric_model

    fabric = leaf_spine(4, 2, 2)
    oracle = EcmpOracle(fabric)
    uplinks = [3, 4, 5, 6]  # leaf1's uplinks to spine1..4, in member order
    for sport in range(40000, 40100):
        key = FlowKey("h11", "h21", "tcp", sport, 7000)
        flow = fabric_model.Flow("10.0.1.1", "10.0.2.1", 6, sport, 7000)
        for salt in (0, FLOWLET_STEP):
            port = fabric_model.ecmp_port(flow, uplinks, salt)
            assert oracle.spine(key, salt) == f"spine{uplinks.index(port) + 1}"


def test_collisions_background_loads_every_spine_lightly():
    _, plan = plan_of("collisions")
    per_spine: dict[str, int] = {}
    for f in plan.background:
        per_spine[f.spine] = per_spine.get(f.spine, 0) + f.rate_bps
    # Two leaf pairs (leaf1->leaf3, leaf2->leaf4), 10% of 20 Mb/s each, on each spine.
    assert per_spine == {f"spine{i}": 4_000_000 for i in range(1, 5)}
    ports = [(f.key.src, f.key.src_port) for f in plan.background]
    assert len(set(ports)) == len(ports)
    assert len({f.key.dst_port for f in plan.background}) == len(plan.background)


def test_asymmetric_slow_cable_and_failure_event():
    _, plan = plan_of("asymmetric")
    rates = {(lk.a.switch, lk.b.switch): lk.capacity_bps for lk in plan.fabric.links}
    assert rates[("leaf1", "spine2")] == 5_000_000
    s, _ = plan_of("failure")
    assert s.events[0].leaf == "leaf1" and not s.events[0].up


def two_by_two_with_background_hosts() -> tuple[FabricConfig, Roles]:
    """A 2x2 fabric, h11 -> h21 for the transfers and h12, h22 for the background."""
    fabric = leaf_spine(2, 2, 2)
    s = parse_scenario(
        "transfer: {bytes: 1MB}\narrivals: [{kind: sequential, count: 1}]\n"
        "hosts: {senders: [h11], receivers: [h21], background: [h12, h22]}\n"
    )
    return fabric, resolve_roles(s, fabric)


def test_an_oracle_chooses_ports_that_ecmp_puts_on_the_spine():
    fabric, roles = two_by_two_with_background_hosts()

    def oracle(key: FlowKey) -> str:
        return "spine1" if key.src_port % 2 else "spine2"

    flows = load_spine(fabric, roles, "spine2", 0.5, oracle=oracle)
    assert len(flows) == 1 and flows[0].key.src_port % 2 == 0 and not flows[0].pinned
    assert flows[0].rate_bps == 10_000_000


def test_background_that_hosts_cannot_carry_is_an_error():
    fabric, roles = two_by_two_with_background_hosts()
    loads = [BackgroundLoad("spine1", 0.75), BackgroundLoad("spine2", 0.75)]
    with pytest.raises(ScenarioError, match=r"background\[1\].*cannot carry 75%"):
        plan_background(loads, fabric, roles)
    with pytest.raises(ScenarioError, match="has no spine 'spine7'"):
        plan_background([BackgroundLoad("spine7", 0.1)], fabric, roles)


def test_shifting_failure_background_moves_where_the_scenario_says():
    s, plan = plan_of("shifting-failure")
    assert s.failed_cables == {("leaf1", "spine3")}
    assert max(p.size for p in s.phases) > len(plan.fabric.spines)  # bursts beyond the spines
    before, after = (
        EcmpOracle(plan.fabric, salts=(0,)),
        EcmpOracle(plan.fabric, salts=(0,), down={("leaf1", "spine3")}),
    )
    moves = [(f.spine, f.after_failure, f.rate_bps) for f in plan.background]
    assert moves == [
        ("spine1", "spine2", 16_000_000),
        ("spine2", "spine2", 10_000_000),
        ("spine3", "spine1", 4_000_000),
    ]
    for f in plan.background:
        assert before(f.key) == f.spine and after(f.key) == f.after_failure
    # flowlet mode: its own ports, the same moves under the first flowlet's salt
    first = EcmpOracle(plan.fabric, salts=(FLOWLET_STEP,))
    first_after = EcmpOracle(plan.fabric, salts=(FLOWLET_STEP,), down={("leaf1", "spine3")})
    for f in plan.background_for("flowlet", 0):
        assert first(f.key) == f.spine and first_after(f.key) == f.after_failure
    # without 'after_failure', each flow still records where the re-hash takes it
    _, failure = plan_of("failure")
    gone = EcmpOracle(failure.fabric, salts=(0,), down={("leaf1", "spine1")})
    assert all(f.after_failure == gone(f.key) for f in failure.background)
    assert {f.after_failure for f in failure.background if f.src_leaf == "leaf1"} <= {
        "spine2", "spine3", "spine4",
    }  # fmt: skip


@pytest.mark.filterwarnings("ignore::FutureWarning")  # after_failure: deprecated, honoured
def test_after_failure_onto_a_cut_off_or_unknown_spine_is_an_error():
    fabric = leaf_spine(3, 2, 2)
    s = parse_scenario(
        "transfer: {bytes: 1MB}\narrivals: [{kind: sequential, count: 1}]\n"
        "hosts: {senders: [h11], receivers: [h21], background: [h12, h22]}\n"
        "background: [{spine: spine1, load: 10%, after_failure: spine3}]\n"
        "events: [{at: 1s, link: {leaf: leaf1, spine: spine3}, state: down}]\n",
        "s.yaml",
    )
    roles = resolve_roles(s, fabric)
    oracle = EcmpOracle(fabric, salts=(0,))
    after = EcmpOracle(fabric, salts=(0,), down=s.failed_cables)
    kw: dict[str, Any] = {"oracle": oracle, "after": after, "failed": s.failed_cables}
    with pytest.raises(
        ScenarioError,
        match=r"s.yaml: background\[0\].after_failure: the failure takes down the cable "
        r"leaf1-spine3",
    ):
        plan_background(s.background, fabric, roles, source="s.yaml", **kw)
    unknown = [dataclasses.replace(s.background[0], after_failure="spine9")]
    with pytest.raises(ScenarioError, match=r"after_failure: the fabric has no spine 'spine9'"):
        plan_background(unknown, fabric, roles, source="s.yaml", **kw)


def test_roles_errors_name_the_key():
    fabric = leaf_spine(2, 2, 2)
    s = parse_scenario(
        "transfer: {bytes: 1MB}\narrivals: [{kind: sequential, count: 1}]\n"
        "hosts: {senders: [h111]}\n",
        "s.yaml",
    )
    with pytest.raises(
        ScenarioError, match=r"s.yaml: hosts.senders: .*no host 'h111'; did you mean"
    ):
        resolve_roles(s, fabric)
    s = parse_scenario(
        "transfer: {bytes: 1MB}\narrivals: [{kind: sequential, count: 1}]\n"
        "background: [{spine: spine1, load: 10%}]\n",
        "s.yaml",
    )
    with pytest.raises(ScenarioError, match="background traffic needs hosts"):
        resolve_roles(s, fabric)


def test_iperf3_command_lines():
    _, plan = plan_of("design-example")
    f = plan.background[0]
    assert server_argv(f) == ["iperf3", "-s", "-p", str(f.key.dst_port)]
    argv = client_argv(f, "10.0.2.3", duration_s=60)
    assert argv[:4] == ["iperf3", "-c", "10.0.2.3", "-p"]
    assert ["--cport", str(f.key.src_port)] == argv[5:7]
    assert argv[-3:] == ["-u", "-l", "8900"] and "15000000" in argv


def test_unexplained_drops_and_validity():
    assert unexplained_drops(Counters(rx=1000, tx=990, rx_dropped=0, queue_drops=10)) == 0
    assert unexplained_drops(Counters(rx=1000, tx=900, rx_dropped=5, queue_drops=10)) == 95
    ok = Observed(
        switch_cpu={"leaf1": [0.2, 0.3]},
        machine_cpu=[0.5],
        counters={"leaf1": Counters(1000, 1000)},
    )
    assert judge(ok) == []
    bad = dataclasses.replace(
        ok,
        switch_cpu={"leaf1": [0.2, 0.97, 0.99]},
        machine_cpu=[0.99, 0.5, 0.97],
        counters={"spine1": Counters(rx=10_000, tx=9_000, queue_drops=100)},
    )
    reasons = judge(bad, extra=["background flow stopped"])
    assert len(reasons) == 4
    assert "switch leaf1 saturated: 99% of a core" in reasons[0] and "for 2s" in reasons[0]
    assert "above 95% busy for 67% of the run" in reasons[1]
    assert "switch spine1 lost 900 of 10000 packets" in reasons[2]
    assert reasons[3] == "background flow stopped"


def test_progress_bar():
    out = io.StringIO()
    p = Progress(4, stream=out)
    p.set_stage("ecmp, repeat 1/1")
    p.advance()
    p.advance(3)
    assert p.line().startswith("[" + "#" * 30 + "] 100% 4/4 transfers | ecmp, repeat 1/1 |")
    assert "4/4 transfers" in out.getvalue()


def test_sweep_points_and_run(tmp_path: Path):
    sweep = load_sweep(SCENARIOS / "sweep.yaml")
    points = sweep.points()
    assert points[0] == {"background_load": "0%", "burst_size": 1}
    s = sweep.scenario_at({"background_load": "30%", "burst_size": 2})
    assert s.background[0].load == 0.3 and s.phases[0].size == 2
    assert s.name == "collisions.background_load-30pct.burst_size-2"

    def fake_runner(exp: Experiment) -> dict[str, Any]:
        load = exp.scenario.background[0].load
        size = exp.scenario.phases[0].size
        return {
            "reduction_vs_ecmp": {"kv-aware": {"p99": 0.1 * size + load}},
            "modes": {"ecmp": {"n": 8 * size}, "kv-aware": {"n": 8 * size - 1}},
            "valid": True,
        }

    def build(scenario: Any, out: Path) -> Experiment:
        return Experiment(scenario, fabric_from_params(scenario.fabric, scenario.name), out)

    results = run_sweep(sweep, build, tmp_path, runner=fake_runner)
    assert len(results) == 12
    assert results[-1]["reduction"]["p99"] == pytest.approx(0.4 + 0.45)
    assert [p["n"] for p in results[:3]] == [7, 15, 31]  # the fewer of the two modes
    assert (tmp_path / "sweep.json").exists() and (tmp_path / "sweep.png").stat().st_size > 1000


def test_sweep_errors(tmp_path: Path):
    (tmp_path / "base.yaml").write_text((SCENARIOS / "collisions.yaml").read_text())
    bad_key = tmp_path / "s.yaml"
    bad_key.write_text(
        "scenario: base.yaml\naxes: [{name: x, key: 'background[3].load', values: [1%]}]\n"
    )
    with pytest.raises(
        ScenarioError, match=r"axes.x.key: the base scenario has no 'background\[3\].load'"
    ):
        load_sweep(bad_key)
    bad_value = tmp_path / "v.yaml"
    bad_value.write_text(
        "scenario: base.yaml\naxes: [{name: x, key: 'background[0].load', values: [150%]}]\n"
    )
    with pytest.raises(ScenarioError, match=r"v.yaml: axes \(x-150pct\).*expected a percentage"):
        load_sweep(bad_value)
    typo = tmp_path / "t.yaml"
    typo.write_text("scenario: base.yaml\naxis: []\n")
    with pytest.raises(ScenarioError, match="did you mean 'axes'"):
        load_sweep(typo)
