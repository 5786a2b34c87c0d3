"""The flow-level engine against hand-computed completion times."""

from __future__ import annotations

import math

import pytest

from controller.config.generate import leaf_spine
from simulator.flow import FlowEngine
from simulator.network import Network

MBPS = 1_000_000


@pytest.fixture(scope="module")
def net():
    # 2 spines, 2 leaves, 2 hosts each; cables 10 Mb/s, host links 100 Mb/s
    return Network(leaf_spine(2, 2, 2, link_bps=10 * MBPS, host_bps=100 * MBPS))


def run_flows(net, flows, *, setup=None) -> dict[str, float]:
    engine = FlowEngine(net)
    done = {}
    for name, at, src, dst, spine, nbytes in flows:

        def start(name=name, src=src, dst=dst, spine=spine, nbytes=nbytes):
            def finished(flow: int, now: float, name: str = name) -> None:
                done[name] = now

            engine.start_flow(net.path(src, dst, spine), nbytes, finished)

        engine.at(at, start)
    if setup is not None:
        setup(engine)
    engine.run()
    return done


def test_one_flow_runs_at_its_bottleneck(net):
    # 10 MB over a 10 Mb/s cable: 8 s
    done = run_flows(net, [("a", 0.0, "h11", "h21", "spine1", 10e6)])
    assert done["a"] == pytest.approx(8.0)


def test_two_flows_share_then_the_survivor_speeds_up(net):
    # a: 10 MB, b: 5 MB on the same spine. Shared 5 Mb/s each until b ends at 8 s
    # (5 MB at 5 Mb/s); a then has 5 MB left at 10 Mb/s: 4 s more.
    done = run_flows(
        net,
        [("a", 0.0, "h11", "h21", "spine1", 10e6), ("b", 0.0, "h12", "h22", "spine1", 5e6)],
    )
    assert done["b"] == pytest.approx(8.0)
    assert done["a"] == pytest.approx(12.0)


def test_different_spines_do_not_interact(net):
    done = run_flows(
        net,
        [("a", 0.0, "h11", "h21", "spine1", 10e6), ("b", 0.0, "h12", "h22", "spine2", 10e6)],
    )
    assert done == {"a": pytest.approx(8.0), "b": pytest.approx(8.0)}


def test_a_late_arrival_shares_from_then_on(net):
    # a alone for 4 s (5 MB done), then a and b share: a's 5 MB at 5 Mb/s ends at 12 s;
    # b has sent 5 MB by then and finishes its other 5 MB alone in 4 s.
    done = run_flows(
        net,
        [("a", 0.0, "h11", "h21", "spine1", 10e6), ("b", 4.0, "h12", "h22", "spine1", 10e6)],
    )
    assert done["a"] == pytest.approx(12.0)
    assert done["b"] == pytest.approx(16.0)


def test_fixed_background_and_a_capacity_change(net):
    # 50% UDP background on the uplink: 5 Mb/s left. At 4 s (2.5 MB sent) the cable is
    # re-provisioned at 20 Mb/s, and so is spine1's downlink to leaf2: 15 Mb/s left for
    # the other 7.5 MB.
    def setup(engine):
        up, down = net.up["leaf1", "spine1"], net.down["spine1", "leaf2"]
        engine.start_background([up], 5 * MBPS, elastic=False)
        engine.at(4.0, lambda: engine.set_capacity(up, 20 * MBPS))
        engine.at(4.0, lambda: engine.set_capacity(down, 20 * MBPS))

    done = run_flows(net, [("a", 0.0, "h11", "h21", "spine1", 10e6)], setup=setup)
    assert done["a"] == pytest.approx(8.0)


def test_a_failed_cable_stalls_a_flow_until_it_is_rerouted(net):
    # down at 2 s (2.5 MB sent), moved to spine2 at 5 s: 7.5 MB at 10 Mb/s = 6 s more
    def setup(engine):
        up = net.up["leaf1", "spine1"]
        engine.at(2.0, lambda: engine.set_capacity(up, 0.0))
        engine.at(5.0, lambda: engine.reroute(0, net.path("h11", "h21", "spine2")))

    done = run_flows(net, [("a", 0.0, "h11", "h21", "spine1", 10e6)], setup=setup)
    assert done["a"] == pytest.approx(11.0)


def test_counters_count_every_byte(net):
    engine = FlowEngine(net)
    engine.start_flow(net.path("h11", "h21", "spine1"), 10e6)
    engine.run()
    up = net.up["leaf1", "spine1"]
    assert engine.sent_bytes[up] == pytest.approx(10e6)
    assert engine.kv_bytes[up] == pytest.approx(10e6)
    assert engine.now == pytest.approx(8.0)


def test_a_capped_background_flow_gives_way(net):
    # an elastic background flow capped at 8 Mb/s shares the uplink max-min: 5 and 5
    engine = FlowEngine(net)
    up = net.up["leaf1", "spine1"]
    engine.start_flow([up], math.inf, kv=False, cap_bps=8 * MBPS)
    f = engine.start_flow(net.path("h11", "h21", "spine1"), 10e6)
    assert engine.rate_of(f) == pytest.approx(5 * MBPS)


def test_daemon_timers_do_not_keep_the_run_alive(net):
    engine = FlowEngine(net)
    ticks = []

    def tick():
        ticks.append(engine.now)
        engine.at(engine.now + 1.0, tick, daemon=True)

    engine.at(0.0, tick, daemon=True)
    engine.start_flow(net.path("h11", "h21", "spine1"), 10e6)
    engine.run()
    assert engine.now == pytest.approx(8.0)
    assert len(ticks) == 8
