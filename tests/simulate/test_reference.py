"""The physical references, spray and bound, on small fabrics worked out by hand."""

from __future__ import annotations

import math

import pytest

from controller.config.generate import leaf_spine
from experiment.errors import ScenarioError
from experiment.scenario import Tool, parse_scenario
from simulator.engine import DoneCallback, RatePolicy
from simulator.flow import FlowEngine
from simulator.network import Network
from simulator.run import Simulation, simulate

GBPS = 1_000_000_000

# 2 leaves, 2 spines of 100 Gb/s cables, 400 Gb/s hosts: a leaf's pools are 200 Gb/s
LONE = """\
name: lone
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 2, link_rate: 100Gbps, host_rate: HOST,
         prefill_leaves: 1}
transfer: {bytes: 125MB}
arrivals:
  - {kind: burst, size: 1, bursts: 1, window: 0s, every: 1s}
run: {warmup: 10ms}
"""


def run_modes(text: str, modes: tuple[str, ...]) -> dict[str, object]:
    return simulate(Simulation(parse_scenario(text, "s.yaml", Tool.SIMULATE), modes))


@pytest.fixture(scope="module")
def net() -> Network:
    return Network(leaf_spine(2, 2, 2, link_bps=100 * GBPS, host_bps=400 * GBPS))


def test_a_lone_sprayed_transfer_runs_at_twice_the_single_path_rate() -> None:
    # 1 Gb: 10 ms on one 100 Gb/s path; sprayed over both spines with a 200 Gb/s NIC,
    # 5 ms: twice the rate, which is the NIC's
    doc = run_modes(LONE.replace("HOST", "200Gbps"), ("ecmp", "spray"))
    modes = doc["modes"]
    assert isinstance(modes, dict)
    assert modes["ecmp"]["fct_ms"]["p50"] == pytest.approx(10.0)
    assert modes["spray"]["fct_ms"]["p50"] == pytest.approx(5.0)
    assert modes["spray"]["paths"] == {"spray": 1}


def test_the_nic_limits_a_sprayed_flow(net: Network) -> None:
    # the pools allow 200 Gb/s; a 150 Gb/s NIC takes less
    slow = Network(leaf_spine(2, 2, 2, link_bps=100 * GBPS, host_bps=150 * GBPS))
    engine = FlowEngine(slow)
    flow = engine.start_flow(slow.spray_path("h11", "h21"), 1e9)
    assert engine.rate_of(flow) == pytest.approx(150 * GBPS)
    engine = FlowEngine(net)
    flow = engine.start_flow(net.spray_path("h11", "h21"), 1e9)
    assert engine.rate_of(flow) == pytest.approx(200 * GBPS)


def test_a_sprayed_path_crosses_the_pools(net: Network) -> None:
    path = net.spray_path("h11", "h21")
    assert [net.links[x].name for x in path] == [
        "h11:nic", "leaf1:up-pool", "leaf2:down-pool", str(net.links[path[-1]].port),
    ]  # fmt: skip
    assert net.pool_members[path[1]] == tuple(sorted(net.up["leaf1", s] for s in net.spines))
    assert net.spray_path("h11", "h12") == (net.nic["h11"], net.host_port["h12"])
    assert "pool" not in net.tiers


def test_a_cable_failure_cuts_a_sprayed_transfer_at_once(net: Network) -> None:
    engine = FlowEngine(net)
    flow = engine.start_flow(net.spray_path("h11", "h21"), 1e9)
    up, down = net.cable_links("leaf1", "spine1")
    engine.set_capacity(up, 0.0)
    engine.set_capacity(down, 0.0)
    assert engine.rate_of(flow) == pytest.approx(100 * GBPS)
    engine.set_capacity(up, 400 * GBPS)  # re-provisioned: leaf2's down-pool limits
    assert engine.rate_of(flow) == pytest.approx(200 * GBPS)
    engine.set_capacity(net.down["spine1", "leaf2"], 400 * GBPS)  # 500 pooled: the NIC
    assert engine.rate_of(flow) == pytest.approx(400 * GBPS)


FAILING = (
    LONE.replace("HOST", "400Gbps")
    + "events:\n  - {at: 2ms, link: {leaf: leaf1, spine: spine1}, state: down}\n"
)


def test_a_failure_during_a_sprayed_transfer_slows_it_without_a_stall() -> None:
    # 1 Gb at 200 Gb/s: 0.4 Gb in 2 ms, then 0.6 Gb at 100 Gb/s: 6 ms more. No audit to
    # wait for: the NIC sprays over the cable that is left at once.
    doc = run_modes(FAILING, ("spray",))
    assert doc["modes"]["spray"]["fct_ms"]["p50"] == pytest.approx(8.0)  # type: ignore[index]


def test_srpt_serves_the_smaller_transfer_first_at_full_rate(net: Network) -> None:
    # both leave leaf1 for leaf2 over its 200 Gb/s pools; the 2 Gb one starts first.
    # SRPT: the 1 Gb one takes 200 Gb/s (5 ms), then the other its 2 Gb (10 ms more).
    engine = FlowEngine(net, RatePolicy.SRPT)
    done: dict[str, float] = {}

    def ended(name: str) -> DoneCallback:
        def record(flow: int, now: float) -> None:
            done[name] = now

        return record

    big = engine.start_flow(net.spray_path("h11", "h21"), 2e9 / 8, ended("big"))
    small = engine.start_flow(net.spray_path("h12", "h22"), 1e9 / 8, ended("small"))
    assert engine.rate_of(small) == pytest.approx(200 * GBPS)
    assert engine.rate_of(big) == 0.0
    engine.run()
    assert done == {"small": pytest.approx(0.005), "big": pytest.approx(0.015)}


def test_max_min_shares_the_same_pool(net: Network) -> None:
    engine = FlowEngine(net)
    big = engine.start_flow(net.spray_path("h11", "h21"), 2e9 / 8)
    small = engine.start_flow(net.spray_path("h12", "h22"), 1e9 / 8)
    assert engine.rate_of(big) == engine.rate_of(small) == pytest.approx(100 * GBPS)


def test_a_pools_load_is_spread_over_its_cables_by_their_room(net: Network) -> None:
    # 40 Gb/s of UDP on leaf1's spine-1 uplink leaves 60 + 100 Gb/s; an 80 Gb/s flow puts
    # 30 and 50 of it on the two uplinks, 40 and 40 on the downlinks into leaf2
    engine = FlowEngine(net)
    up1, up2 = net.up["leaf1", "spine1"], net.up["leaf1", "spine2"]
    down1, down2 = net.down["spine1", "leaf2"], net.down["spine2", "leaf2"]
    engine.start_background([up1], 40 * GBPS, elastic=False)
    engine.start_flow(net.spray_path("h11", "h21"), 1e9, cap_bps=80 * GBPS)
    u = engine.utilisation()
    assert u[up1] == pytest.approx(0.7) and u[up2] == pytest.approx(0.5)
    assert u[down1] == pytest.approx(0.4) and u[down2] == pytest.approx(0.4)
    engine.run()
    assert engine.kv_bytes[up1] + engine.kv_bytes[up2] == pytest.approx(1e9)
    assert engine.kv_bytes[up2] / engine.kv_bytes[up1] == pytest.approx(5 / 3)
    pool = net.pool["leaf1:up-pool"]
    assert engine.sent_bytes[pool] == 0.0


def test_tcp_background_shares_its_cable_and_pool(net: Network) -> None:
    # TCP capped at 80 Gb/s on spine 1's uplink against a sprayed flow: max-min over the
    # 200 Gb/s pool gives each 100, so the background takes its 80 and the flow 120; the
    # background is counted on its cable once, the flow's 120 spread by room (20 and 100)
    engine = FlowEngine(net)
    up1, up2 = net.up["leaf1", "spine1"], net.up["leaf1", "spine2"]
    pool = int(net.pool_of[up1])
    engine.start_flow([up1, pool], math.inf, kv=False, cap_bps=80 * GBPS)
    flow = engine.start_flow(net.spray_path("h11", "h21"), 1e9)
    assert engine.rate_of(flow) == pytest.approx(120 * GBPS)
    u = engine.utilisation()
    assert u[up1] == pytest.approx(1.0) and u[up2] == pytest.approx(1.0)
    assert engine.kv_load_bps[up1] == pytest.approx(20 * GBPS)


# Two prefill racks, two decode racks, uneven background (UDP and TCP), a cable
# re-provisioned and another failing, a burst and Poisson arrivals
MIXED = """\
name: mixed
fabric: {spines: 3, leaves: 4, hosts_per_leaf: 4, link_rate: 100Gbps, host_rate: 400Gbps,
         prefill_leaves: 2}
transfer: {bytes: 250MB}
arrivals:
  - {kind: poisson, count: 24, mean_gap: 2ms}
  - {kind: burst, size: 8, bursts: 2, window: 2ms, every: 60ms}
  - {kind: poisson, count: 16, mean_gap: 3ms}
background:
  - {spine: spine1, load: 40%, protocol: udp}
  - {spine: spine2, load: 20%, protocol: tcp}
events:
  - {at: 20ms, link: {leaf: leaf1, spine: spine3}, capacity: 400Gbps}
  - {at: 60ms, link: {leaf: leaf2, spine: spine2}, state: down}
scheduling: {policy: srpt, max_wait: 20ms}
run: {warmup: 10ms, transfer_timeout: 5s}
modes: [ecmp, ecmp-k, flowlet, kv-aware, isolated, scheduled, spray, bound]
"""
ALL = ("ecmp", "ecmp-k", "flowlet", "kv-aware", "isolated", "scheduled", "spray", "bound")


@pytest.fixture(scope="module")
def mixed() -> dict[str, object]:
    return run_modes(MIXED, ALL)


def test_no_transfer_of_any_mode_beats_its_floor(mixed: dict[str, object]) -> None:
    modes = mixed["modes"]
    assert isinstance(modes, dict)
    floors = {t["index"]: t["floor_ms"] for t in modes["bound"]["transfers"]}
    assert len(floors) == 56 and all(f is not None and f > 0 for f in floors.values())
    for mode in ALL:
        assert modes[mode]["failed"] == 0 and modes[mode]["timed_out"] == 0, mode
        for t in modes[mode]["transfers"]:
            assert t["fct_ms"] >= floors[t["index"]] * (1 - 1e-9), (mode, t["index"])
    assert mixed["floor"]["beaten"] == dict.fromkeys(ALL, 0)  # type: ignore[index]


def test_the_floor_is_the_best_pooled_rate_over_the_run(mixed: dict[str, object]) -> None:
    # from a prefill rack of leaf1, at best (after the re-provisioning) its uplinks leave
    # 60 + 100 + 400 Gb/s; a decode rack's downlinks 60 + 100 + 100: 260 Gb/s, less than
    # the 400 Gb/s NIC. 2 Gb at 260 Gb/s, plus the burst's hold
    modes = mixed["modes"]
    assert isinstance(modes, dict)
    for t in modes["bound"]["transfers"]:
        hold = t["held_ms"] or 0.0
        assert t["floor_ms"] == pytest.approx(hold + 2e9 / 260e9 * 1000)


def test_bound_is_at_most_spray_at_the_mean(mixed: dict[str, object]) -> None:
    modes = mixed["modes"]
    assert isinstance(modes, dict)
    assert modes["bound"]["fct_ms"]["mean"] <= modes["spray"]["fct_ms"]["mean"]


def test_the_results_carry_ratios_to_both_references_per_phase(
    mixed: dict[str, object],
) -> None:
    modes, vs = mixed["modes"], mixed["vs_reference"]
    assert isinstance(modes, dict) and isinstance(vs, dict)
    assert set(vs) == set(ALL)
    assert set(vs["ecmp"]) == {"spray", "bound"} and set(vs["spray"]) == {"bound"}
    for ref in ("spray", "bound"):
        assert set(vs["ecmp"][ref]) == {"all", "bursts", "steady"}
        for group in ("all", "bursts", "steady"):
            mode_doc = modes["ecmp"] if group == "all" else modes["ecmp"]["phases"][group]
            ref_doc = modes[ref] if group == "all" else modes[ref]["phases"][group]
            for k in ("p50", "p99", "mean"):
                want = mode_doc["fct_ms"][k] / ref_doc["fct_ms"][k]
                assert vs["ecmp"][ref][group][k] == pytest.approx(want)
    phases = modes["ecmp"]["phases"]
    assert phases["bursts"]["n"] == 16 and phases["steady"]["n"] == 40
    kinds = {t["phase"]: t["phase_kind"] for t in modes["ecmp"]["transfers"]}
    assert kinds == {0: "poisson", 1: "burst", 2: "poisson"}


def test_the_references_run_on_three_tiers() -> None:
    # every transfer crosses the superspines: a pod's rise-pool (2 spines x 2 superspines
    # of 200 Gb/s) is 800 Gb/s, the NIC 400 Gb/s: 1 GB at 400 Gb/s is 20 ms
    pods = """\
name: pods
fabric: {pods: 2, superspines: 2, spines: 2, leaves: 2, hosts_per_leaf: 2,
         link_rate: 400Gbps, prefill_leaves: 2, spine_uplinks: 2, superspine_rate: 200Gbps}
transfer: {bytes: 1GB}
arrivals:
  - {kind: sequential, count: 4, gap: 10ms}
"""
    doc = run_modes(pods, ("spray", "bound"))
    modes = doc["modes"]
    assert isinstance(modes, dict)
    assert modes["spray"]["fct_ms"]["p99"] == pytest.approx(1e9 * 8 / 400e9 * 1000)
    assert doc["floor"]["beaten"] == {"spray": 0, "bound": 0}  # type: ignore[index]


def test_the_packet_engine_refuses_the_references() -> None:
    scenario = parse_scenario(LONE.replace("HOST", "400Gbps"), "s.yaml", Tool.SIMULATE)
    with pytest.raises(ScenarioError) as info:
        simulate(Simulation(scenario, ("ecmp", "bound"), engine="packet"))
    assert "s.yaml: modes: 'bound': spray and bound are flow-engine references" in str(info.value)
    assert "--engine flow" in str(info.value)
