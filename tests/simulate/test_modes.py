"""The modes on small scenarios, against what can be worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.config import FabricConfig
from experiment.ecmp import EcmpOracle
from experiment.flows import RECEIVER_PORT, FlowKey
from experiment.scenario import Tool, load_scenario, parse_scenario
from simulator.run import Simulation, simulate

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "topologies" / "scenarios" / "design-example.yaml"


@pytest.fixture(scope="module")
def design():
    sim = Simulation(load_scenario(DESIGN, Tool.SIMULATE), ("ecmp", "kv-aware", "isolated"))
    return sim, simulate(sim)


def test_isolated_is_the_transfer_alone_on_the_roomier_spine(design):
    _, doc = design
    # 1 MB at the 37.5% spine 2 leaves of 20 Mb/s: 8e6 / 7.5e6 s
    iso = doc["modes"]["isolated"]
    assert iso["paths"] == {"spine2": 16}
    assert iso["fct_ms"]["p99"] == pytest.approx(8e6 / 7.5e6 * 1000, rel=1e-6)


def test_ecmp_takes_the_data_planes_hash(design):
    sim, doc = design
    assert sim.workload is not None
    fabric: FabricConfig = sim.workload.fabric
    oracle = EcmpOracle(fabric)
    schedule = sim.workload.schedule(sim.seed)
    expected = {
        a.index: oracle.spine(FlowKey(a.src, a.dst, "tcp", a.ecmp_port, RECEIVER_PORT))
        for a in schedule.arrivals
    }
    got = {t["index"]: t["spine"] for t in doc["modes"]["ecmp"]["transfers"]}
    assert got == expected


def test_kv_aware_is_the_controllers_choice(design):
    # alone, a transfer goes to spine 2 (37.5% left against 25%); in a burst of two the
    # engine counts the first one in flight and sends the second to spine 1 (5 Mb/s
    # alone beats half of spine 2's 7.5 Mb/s)
    _, doc = design
    kv = doc["modes"]["kv-aware"]
    assert kv["failed"] == 0
    spines = {t["index"]: t["spine"] for t in kv["transfers"]}
    assert all(spines[i] == "spine2" for i in range(6))
    for burst in range(5):
        assert sorted(spines[6 + 2 * burst + k] for k in range(2)) == ["spine1", "spine2"]
    assert doc["reduction_vs_ecmp"]["kv-aware"]["p99"] > 0.3


TWO_PATHS = """\
name: tiny
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 2, link_rate: 10Gbps, prefill_leaves: 1}
transfer: {bytes: 125MB}
arrivals:
  - {kind: burst, size: 2, bursts: 1, window: 0s, every: 1s}
run: {warmup: 1s}
simulation: {ecmp_k: 2}
modes: [ecmp-k, flowlet, isolated]
"""


def test_every_mode_moves_every_byte():
    # 125 MB at 10 Gb/s: 100 ms alone; two at once on two spines: no faster than that
    sim = Simulation(
        parse_scenario(TWO_PATHS, "tiny.yaml", Tool.SIMULATE), ("ecmp-k", "flowlet", "isolated")
    )
    doc = simulate(sim)
    for mode in ("ecmp-k", "flowlet", "isolated"):
        m = doc["modes"][mode]
        assert m["n"] == 2 and m["failed"] == 0
        assert min(m["fct_samples_ms"]) >= 100.0 - 1e-6
    assert doc["modes"]["isolated"]["fct_ms"]["p99"] == pytest.approx(100.0)


def test_the_drivers_hash_is_the_data_planes_with_every_salt(design):
    from experiment.ecmp import FLOWLET_STEP, selector_hash, uplink_order
    from simulator.flow import FlowEngine
    from simulator.modes import Driver

    sim, _ = design
    work = sim.workload
    driver = Driver(FlowEngine(work.network), work, work.schedule(1))
    hosts = {h.name: h for h in work.fabric.hosts}
    group = uplink_order(work.fabric, "leaf1")
    for sport in (1024, 5000, 40000, 65535):
        for salt in (0, FLOWLET_STEP, (7 * FLOWLET_STEP) & 0xFFFF):
            h = selector_hash(
                hosts["h11"].ipv4, hosts["h21"].ipv4, 6, sport, RECEIVER_PORT, salt=salt
            )
            assert driver.ecmp_spine("h11", "h21", sport, salt) == group[h % len(group)]


FAILING = """\
name: failing
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 4, link_rate: 10Gbps, prefill_leaves: 1}
transfer: {bytes: 125MB}
arrivals:
  - {kind: burst, size: 4, bursts: 1, window: 0s, every: 1s}
events:
  - {at: 50ms, link: {leaf: leaf1, spine: spine1}, state: down}
run: {warmup: 1s, transfer_timeout: 10s}
"""


@pytest.mark.parametrize("mode", ["ecmp", "ecmp-k", "flowlet", "kv-aware", "isolated"])
def test_a_dead_cable_delays_transfers_but_loses_none(mode):
    sim = Simulation(parse_scenario(FAILING, "failing.yaml", Tool.SIMULATE), (mode,))
    doc = simulate(sim)
    m = doc["modes"][mode]
    assert m["n"] == 4 and m["failed"] == 0
    # nothing beats 125 MB at 10 Gb/s, and whatever crossed spine 1 after 50 ms waited
    # for the audit (2 x 100 ms) to take the cable out of its group or its pin
    assert min(m["fct_samples_ms"]) >= 100.0 - 1e-6
    assert max(m["fct_samples_ms"]) < 1000.0


def test_a_staggered_transfers_hold_counts_in_its_completion_time():
    # 125 MB at 10 Gb/s: 100 ms alone; the burst's second transfer is held 1 s back,
    # so the first has finished: 100 ms, then 1 s + 100 ms from its arrival
    text = TWO_PATHS.replace("every: 1s}", "every: 2s, stagger: 1s}")
    sim = Simulation(parse_scenario(text, "tiny.yaml", Tool.SIMULATE), ("ecmp",))
    transfers = simulate(sim)["modes"]["ecmp"]["transfers"]
    assert [t["fct_ms"] for t in transfers] == [pytest.approx(100.0), pytest.approx(1100.0)]
    assert [t["held_ms"] for t in transfers] == [0.0, pytest.approx(1000.0)]


ONE_PATH = """\
name: one-path
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, link_rate: 10Gbps, prefill_leaves: 1}
transfer: {bytes: 125MB}
arrivals:
  - {kind: sequential, count: 2, gap: 500ms}
  - {kind: burst, size: 2, bursts: 3, window: 0s, every: 1s}
run: {warmup: 1s}
scheduling: {policy: fifo, max_wait: 1s}
"""


def _fcts(doc: dict[str, Any], mode: str) -> list[float]:
    return [t["fct_ms"] for t in sorted(doc["modes"][mode]["transfers"], key=lambda t: t["index"])]


def test_scheduled_sends_a_paths_transfers_one_after_the_other():
    # 125 MB at 10 Gb/s: 100 ms alone. Two at once on the one path: 200 ms each when
    # shared (kv-aware); held, the second starts when the first ends: 100 and 200 ms,
    # request to last byte. Alone (the sequential phase), nothing is held.
    scenario = parse_scenario(ONE_PATH, "one.yaml", Tool.SIMULATE)
    assert "scheduled" in scenario.modes
    doc = simulate(Simulation(scenario, ("kv-aware", "scheduled")))
    ms = pytest.approx
    assert _fcts(doc, "kv-aware") == [ms(100.0, abs=2)] * 2 + [ms(200.0, abs=2)] * 6
    fcts = _fcts(doc, "scheduled")
    assert fcts[:2] == [ms(100.0, abs=2)] * 2
    assert sorted(fcts[2:]) == [ms(100.0, abs=2)] * 3 + [ms(200.0, abs=2)] * 3
    held = [t["held_ms"] for t in doc["modes"]["scheduled"]["transfers"]]
    assert sum(1 for h in held if h > 50.0) == 3  # one of each burst waited for the other


def test_scheduled_holds_nothing_past_max_wait():
    # the second transfer would wait 100 ms: more than max_wait, so it goes at once
    text = ONE_PATH.replace("max_wait: 1s", "max_wait: 50ms")
    doc = simulate(
        Simulation(parse_scenario(text, "one.yaml", Tool.SIMULATE), ("kv-aware", "scheduled"))
    )
    assert _fcts(doc, "scheduled") == pytest.approx(_fcts(doc, "kv-aware"), abs=1.0)
    assert all(t["held_ms"] <= 50.0 for t in doc["modes"]["scheduled"]["transfers"])


def test_a_bursts_requests_go_as_one_batch_and_may_wait_up_to_batch_max_wait():
    # the same bursts, max_wait 50 ms: alone the second of each pair would go at once;
    # as one batch (batch_window) it may wait batch_max_wait (1 s), so it is held behind
    # the first, and every request of a burst waits the 5 ms window for the others
    text = ONE_PATH.replace("max_wait: 1s", "max_wait: 50ms, batch_max_wait: 1s")
    text += "simulation: {batch_window: 5ms}\n"
    doc = simulate(
        Simulation(parse_scenario(text, "one.yaml", Tool.SIMULATE), ("kv-aware", "scheduled"))
    )
    ms = pytest.approx
    fcts = _fcts(doc, "scheduled")
    assert fcts[:2] == [ms(100.0, abs=2)] * 2  # the sequential phase is no batch
    assert sorted(fcts[2:]) == [ms(105.0, abs=2)] * 3 + [ms(205.0, abs=2)] * 3
    held = [t["held_ms"] for t in doc["modes"]["scheduled"]["transfers"]]
    assert sum(1 for h in held if h > 50.0) == 3
    # kv-aware (no policy) batches too, but holds nothing: both share, 5 ms late
    assert _fcts(doc, "kv-aware")[2:] == [ms(205.0, abs=2)] * 6
