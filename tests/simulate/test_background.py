"""Background as flows: planned as the lab plans it, hashed and re-hashed as the data plane
does, in both engines; UDP that overloads a link is clipped to it.

Runs real engines (the flow engine, and ns-3 for the packet engine) on small fabrics:
a driver runs the scenario, and timers placed around the failure read where each
background flow runs and what the links carry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from experiment.background import RING_FLOWS, Pairing
from experiment.ecmp import FLOWLET_STEP, EcmpOracle
from experiment.flows import FlowKey
from experiment.scenario import Tool, load_scenario, parse_scenario
from simulator.engine import FabricEngine
from simulator.flow import FlowEngine
from simulator.modes import Driver, Flowlet
from simulator.network import Network
from simulator.workload import Workload, build_workload

MBPS = 1_000_000
ROOT = Path(__file__).resolve().parents[2]

# Three spines, UDP background on each, TCP on spine2; the leaf1-spine3 cable fails 1 s
# after the warm-up, and the groups are rewritten 0.2 s later (2 audits of 100 ms).
REHASH = """\
name: rehash
fabric: {spines: 3, leaves: 2, hosts_per_leaf: 3, link_rate: 100Mbps, host_rate: 1Gbps,
         prefill_leaves: 1}
hosts: {senders: [h11, h12], receivers: [h21, h22], background: [h13, h23]}
transfer: {bytes: 1MB}
arrivals:
  - {kind: sequential, count: 1}
background:
  - {spine: all, load: 25%, protocol: udp}
  - {spine: spine3, load: 15%, protocol: udp}
  - {spine: spine2, load: 10%, protocol: tcp}
events:
  - {at: 1s, link: {leaf: leaf1, spine: spine3}, state: down}
run: {warmup: 500ms, transfer_timeout: 10s}
"""
FAILED = ("leaf1", "spine3")
FAILS_AT, REGROUPED_AT = 1.5, 1.7


def workload(text: str = REHASH) -> Workload:
    return build_workload(parse_scenario(text, "rehash.yaml", Tool.SIMULATE))


def engine_for(work: Workload, kind: str) -> FabricEngine:
    if kind == "flow":
        return FlowEngine(work.network)
    from simulator.packet import for_workload

    return for_workload(work)


def run_with_probes(
    driver: Driver, probes: dict[float, Callable[[], None]], until: float = 4.0
) -> None:
    """Run ``driver``, calling each probe at its time (and keeping the run alive until
    ``until``)."""
    for t, probe in probes.items():
        driver.engine.at(t, probe)
    driver.engine.at(until, lambda: None)
    driver.run()


def uplink_of(net: Network, engine: FabricEngine, flow: int) -> int:
    return next(x for x in engine.path_of(flow) if x in set(net.up.values()))


@pytest.mark.parametrize("kind", ["flow", "packet"])
def test_a_failure_moves_the_background_where_the_data_planes_hash_puts_it(kind: str) -> None:
    work = workload()
    net = work.network
    engine = engine_for(work, kind)
    driver = Driver(engine, work, work.schedule(1))
    before: dict[int, int] = {}
    after: dict[int, int] = {}

    def read(into: dict[int, int]) -> Callable[[], None]:
        return lambda: into.update(
            {i: uplink_of(net, engine, bg.flow) for i, bg in enumerate(driver.background)}
        )

    run_with_probes(driver, {FAILS_AT + 0.1: read(before), REGROUPED_AT + 0.1: read(after)})
    plan = work.background
    assert len(plan) == 5  # one flow per spine load (the hosts' 1 Gb/s links carry it)
    groups = EcmpOracle(work.fabric, salts=(0,))
    survivors = EcmpOracle(work.fabric, salts=(0,), down={FAILED})
    for i, f in enumerate(plan):
        # until the controller rewrites the groups, every flow stays on its planned spine,
        # the ones on the dead cable too
        assert before[i] == net.up[f.src_leaf, f.spine] == net.up[f.src_leaf, groups.spine(f.key)]
        # then each one runs where experiment.ecmp's hash over the members left puts it
        want = survivors.spine(f.key)
        assert want == f.after_failure and want != "spine3"
        assert after[i] == net.up[f.src_leaf, want], (i, f.key)
    assert all(after[i] != net.up[FAILED] for i in range(len(plan)))


def test_the_packet_engines_links_carry_the_moved_udp() -> None:
    work = workload()
    net = work.network
    engine = engine_for(work, "packet")
    driver = Driver(engine, work, work.schedule(1))
    marks: dict[str, Any] = {}

    def mark(name: str) -> Callable[[], None]:
        return lambda: marks.__setitem__(name, (engine.now, engine.sent_bytes.copy()))

    window = {REGROUPED_AT + 0.5: mark("a"), REGROUPED_AT + 1.5: mark("b")}
    run_with_probes(driver, window)
    (t0, a), (t1, b) = marks["a"], marks["b"]
    rate = (b - a) * 8 / (t1 - t0)
    want: dict[str, float] = {}
    for f in work.background:  # nothing is congested: TCP runs at its cap
        assert f.after_failure is not None
        want[f.after_failure] = want.get(f.after_failure, 0.0) + f.rate_bps
    assert want == {"spine1": 35 * MBPS, "spine2": 65 * MBPS}  # spine3's 40 moved to spine2
    wire = (1448 + 8 + 20 + 2) / 1448  # a datagram's bytes on the wire (UDP, IPv4, PPP)
    for spine in ("spine1", "spine2"):
        got = rate[net.up["leaf1", spine]]
        assert got == pytest.approx(want[spine] * wire, rel=0.02), spine
    assert rate[net.up[FAILED]] == 0.0


def test_flowlet_modes_background_rehashes_with_the_next_generations_salt() -> None:
    work = workload()
    net = work.network
    engine = FlowEngine(net)
    driver = Flowlet(engine, work, work.schedule(1), repeat=1)
    seen: dict[str, list[tuple[FlowKey, int]]] = {}

    def read(name: str) -> Callable[[], None]:
        return lambda: seen.__setitem__(
            name, [(bg.plan.key, uplink_of(net, engine, bg.flow)) for bg in driver.background]
        )

    run_with_probes(driver, {FAILS_AT - 0.1: read("before"), REGROUPED_AT + 0.1: read("after")})
    first, second = EcmpOracle(work.fabric), EcmpOracle(work.fabric, down={FAILED})
    ecmp_ports = {f.key.src_port for f in work.background}
    for key, uplink in seen["before"]:
        assert key.src_port not in ecmp_ports  # flowlet mode's own ports, as in the lab
        assert uplink == net.up["leaf1", first.spine(key, FLOWLET_STEP)]
    for key, uplink in seen["after"]:
        assert uplink == net.up["leaf1", second.spine(key, 2 * FLOWLET_STEP)]


def test_udp_beyond_a_links_capacity_is_clipped_to_it() -> None:
    # 60 + 60 Mb/s of UDP on one 100 Mb/s uplink: it carries 100, each flow keeps 5/6 of
    # its rate, and the downlinks after it see 50 each; a KV transfer on that uplink gets
    # nothing, one on the other spine its whole 100 Mb/s
    net = Network(workload().fabric)
    engine = FlowEngine(net)
    up = net.up["leaf1", "spine1"]
    a = engine.start_background(net.path("h13", "h21", "spine1"), 60 * MBPS, elastic=False)
    b = engine.start_background(net.path("h12", "h22", "spine1"), 60 * MBPS, elastic=False)
    kv_stuck = engine.start_flow(net.path("h11", "h23", "spine1"), 1e6)
    kv_free = engine.start_flow(net.path("h11", "h23", "spine2"), 1e6)
    carried = engine.carried_bps()
    assert carried[up] == pytest.approx(100 * MBPS)
    assert engine.rate_of(a) == engine.rate_of(b) == pytest.approx(50 * MBPS)
    assert carried[net.down["spine1", "leaf2"]] == pytest.approx(100 * MBPS)
    assert engine.rate_of(kv_stuck) == 0.0
    assert engine.rate_of(kv_free) == pytest.approx(100 * MBPS)
    # moved to spine2, flow b leaves room on spine1 (40 Mb/s) and fills spine2 with the KV
    # transfer there: 60 of UDP, 40 for the transfer
    engine.reroute(b, net.path("h12", "h22", "spine2"))
    assert engine.rate_of(kv_stuck) == pytest.approx(40 * MBPS)
    assert engine.rate_of(kv_free) == pytest.approx(40 * MBPS)
    # a dead cable carries nothing, and what was sent into it reaches nothing downstream
    engine.set_capacity(up, 0.0)
    carried = engine.carried_bps()
    assert carried[up] == 0.0 and carried[net.down["spine1", "leaf2"]] == 0.0
    assert engine.rate_of(a) == 0.0


def test_no_link_carries_more_than_its_capacity_through_a_rehash_overload() -> None:
    # shifting-failure: after the failure the re-hash offers spine2 130% of its capacity
    with pytest.warns(FutureWarning, match="after_failure: deprecated"):
        scenario = load_scenario(ROOT / "topologies/scenarios/shifting-failure.yaml", Tool.SIMULATE)
    work = build_workload(scenario)
    net = work.network
    engine = FlowEngine(net)
    driver = Driver(engine, work, work.schedule(1))
    worst: list[float] = []

    def sample() -> None:
        cap = engine.base_capacity
        ok = math.isfinite  # the pad link
        over = [
            engine.carried_bps()[i] / cap[i]
            for i in range(net.nlinks)
            if ok(cap[i]) and cap[i] > 0 and not net.is_pool[i]
        ]
        worst.append(max(over))
        if engine.now < 60.0:
            engine.at(engine.now + 0.5, sample, daemon=True)

    engine.at(0.0, sample, daemon=True)
    offered: list[float] = []
    t = scenario.run.warmup_s + scenario.events[0].at_s + 0.5
    engine.at(t, lambda: offered.append(engine.fixed_bg[net.up["leaf1", "spine2"]]))
    driver.run()
    assert offered == [pytest.approx(1.3 * 20 * MBPS)]  # spine1's 80% and its own 50%
    assert max(worst) <= 1.0 + 1e-9
    assert max(worst) == pytest.approx(1.0)


DESIGN_LIKE = """\
name: ring
fabric: {spines: 4, leaves: 6, hosts_per_leaf: 4, link_rate: 100Gbps, host_rate: 400Gbps,
         prefill_leaves: 2}
transfer: {bytes: 100MB}
arrivals:
  - {kind: poisson, count: 20, mean_gap: 1ms}
background:
  - {spine: spine1, load: 40%, protocol: udp}
  - {spine: spine3, load: 10%, protocol: tcp}
  - {link: {leaf: leaf4, spine: spine4}, load: 60%, protocol: udp}
"""


def test_without_background_hosts_each_leaf_gets_one_and_a_bounded_ring() -> None:
    work = workload(DESIGN_LIKE)
    net = work.network
    assert work.pairing is Pairing.RING
    bg_hosts = [h for h in work.fabric.hosts if h.name.endswith("-bg")]
    assert [h.leaf for h in bg_hosts] == [f"leaf{i}" for i in range(1, 7)]
    assert {h.name for h in bg_hosts} == set(work.roles.background)
    # KV roles keep the GPUs: no background host sends or receives transfers
    assert not set(work.roles.background) & (set(work.roles.senders) | set(work.roles.receivers))
    # RING_FLOWS flows per cable and loaded spine (6 leaves x 2 spines), and the loaded
    # cable's flows to and from each of the 5 other leaves
    assert len([f for f in work.background if f.spine != "spine4"]) == RING_FLOWS * 6 * 2
    assert len([f for f in work.background if f.spine == "spine4"]) == 2 * 5
    load: dict[tuple[str, str, str], int] = {}
    for f in work.background:
        for key in ((f.src_leaf, f.spine, "up"), (f.dst_leaf, f.spine, "down")):
            load[key] = load.get(key, 0) + f.rate_bps
    for leaf in (f"leaf{i}" for i in range(1, 7)):
        for way in ("up", "down"):
            assert load[leaf, "spine1", way] == 40 * 10**9  # every cable, both ways
            assert load[leaf, "spine3", way] == 10 * 10**9
    # one cable at 60% both ways, its share spread over the five other leaves' cables
    assert load["leaf4", "spine4", "up"] == load["leaf4", "spine4", "down"] == 60 * 10**9
    assert load["leaf1", "spine4", "up"] == load["leaf1", "spine4", "down"] == 12 * 10**9
    # and ECMP puts every flow on its spine: the 5-tuples were steered by source port
    oracle = EcmpOracle(work.fabric, salts=(0,))
    assert all(oracle.spine(f.key) == f.spine for f in work.background)
    assert len({f.key.src_port for f in work.background}) == len(work.background)
    # the engine runs it: every cable of spine1 carries 40% both ways
    engine = FlowEngine(net)
    driver = Driver(engine, work, work.schedule(1))
    seen: list[float] = []
    uplinks = [net.up[f"leaf{i}", "spine1"] for i in range(1, 7)]
    engine.at(0.5, lambda: seen.extend(engine.carried_bps()[uplinks]))  # in the warm-up
    driver.run()
    assert seen == [pytest.approx(40e9)] * 6
