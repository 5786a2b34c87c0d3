"""The packet-level engine (ns-3) on a 2 x 2 fabric, and against the flow-level engine.

Expected completion times are the flow model's (bytes over the bottleneck) times what
a packet engine adds: every 1,448-byte segment crosses the wire as 1,502 bytes (TCP
with timestamps, IPv4, PPP: 3.7%), plus the handshake and slow start, which at 100
Mb/s and a few microseconds of round trip are well under 1% of a 0.8 s transfer. The
tolerances below are those: 5% over the payload time for one transfer, and for two
sharing a cable 5% for the last to end and 12% early for the first (TCP's shares are
fair over a transfer, not at every instant).
"""

from __future__ import annotations

import pytest

from controller.config.generate import leaf_spine
from experiment.scenario import Tool, parse_scenario
from experiment.scenario_sim import PacketSettings, Tcp
from simulator.network import Network
from simulator.packet import PacketEngine
from simulator.run import Simulation, simulate

MBPS = 1_000_000
WIRE = 1502 / 1448  # bytes on the wire per byte of payload


@pytest.fixture(scope="module")
def net():
    # 2 spines, 2 leaves, 2 hosts each; cables 100 Mb/s, host links 1 Gb/s
    return Network(leaf_spine(2, 2, 2, link_bps=100 * MBPS, host_bps=1000 * MBPS))


def run_flows(net, flows, settings=None) -> dict[str, float]:
    engine = PacketEngine(net, settings)
    done: dict[str, float] = {}
    for name, src, dst, spine, nbytes in flows:

        def finished(flow: int, now: float, name: str = name) -> None:
            done[name] = now

        engine.start_flow(net.path(src, dst, spine), nbytes, finished)
    engine.run()
    return done


def test_one_transfer_runs_at_the_cable_rate(net):
    # 10 MB over a 100 Mb/s cable: 0.8 s of payload, 0.83 s on the wire
    done = run_flows(net, [("a", "h11", "h21", "spine1", 10e6)])
    assert 0.8 * WIRE <= done["a"] <= 0.8 * WIRE * 1.05


@pytest.mark.parametrize(
    "settings",
    [
        PacketSettings(),
        PacketSettings(tcp=Tcp.DCTCP, ecn_packets=20),
        PacketSettings(tcp=Tcp.NEWRENO),
    ],
    ids=["cubic", "dctcp", "newreno"],
)
def test_two_transfers_on_one_cable_share_it(net, settings):
    # a and b, 10 MB each on spine1: 50 Mb/s each, both done at about 1.6 s (x WIRE).
    # The cable stays full (the last ends within 5% of 20 MB at 100 Mb/s); shares are
    # fair within 12% (NewReno's are the least even early on).
    done = run_flows(
        net,
        [("a", "h11", "h21", "spine1", 10e6), ("b", "h12", "h22", "spine1", 10e6)],
        settings,
    )
    first, last = sorted(done.values())
    assert 1.6 * WIRE <= last <= 1.6 * WIRE * 1.05, done
    assert first >= 1.6 * WIRE * 0.88, done


def test_transfers_on_different_spines_do_not_interact(net):
    done = run_flows(
        net, [("a", "h11", "h21", "spine1", 10e6), ("b", "h12", "h22", "spine2", 10e6)]
    )
    for name in "ab":
        assert 0.8 * WIRE <= done[name] <= 0.8 * WIRE * 1.05


def test_a_moved_flow_follows_its_new_path(net):
    engine = PacketEngine(net)
    done: dict[int, float] = {}
    a = engine.start_flow(net.path("h11", "h21", "spine1"), 10e6, lambda f, t: done.update({f: t}))
    b = engine.start_flow(net.path("h12", "h22", "spine1"), 10e6, lambda f, t: done.update({f: t}))
    # at 0.2 s b moves to spine2: from then on both run alone at 100 Mb/s
    engine.at(0.2, lambda: engine.reroute(b, net.path("h12", "h22", "spine2")))
    engine.run()
    up1, up2 = net.up["leaf1", "spine1"], net.up["leaf1", "spine2"]
    assert engine.sent_bytes[up2] > 5e6  # b's last bytes crossed spine2
    assert engine.sent_bytes[up1] > 10e6
    # 0.2 s shared (1.25 MB each) then alone: 8.75 MB at 100 Mb/s = 0.7 s more
    for flow in (a, b):
        assert 0.9 * WIRE * 0.95 <= done[flow] <= 0.9 * WIRE * 1.08, done


TINY = """
name: tiny
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 3, link_rate: 20Mbps, prefill_leaves: 1}
shaping: {queue: 20}
hosts: {senders: [h11, h12], receivers: [h21, h22]}
transfer: {bytes: 1342177280, real_link_rate: 400Gbps, lab_bytes: 1MB}
arrivals:
  - {kind: burst, size: 2, bursts: 4, window: 10ms, every: 3s}
run: {warmup: 500ms, transfer_timeout: 30s, settle: 0s}
modes: [ecmp, kv-aware, isolated]
"""


def test_both_engines_agree_on_a_tiny_scenario():
    # Bursts of two transfers from the prefill leaf to the decode leaf: ECMP puts some
    # bursts on one spine, kv-aware and isolated never do. ECMP is the slowest in both
    # engines, and every mode's mean is within 15% (TCP's headers, slow start and a
    # 20-packet queue). (With unresponsive UDP on a spine, TCP in a 20-packet queue
    # times out and the two engines part: docs/simulation.md.)
    scenario = parse_scenario(TINY, "tiny.yaml", Tool.SIMULATE)
    means = {}
    for engine in ("flow", "packet"):
        sim = Simulation(scenario, ("ecmp", "kv-aware", "isolated"), seed=3, engine=engine)
        doc = simulate(sim)
        assert doc["simulation"]["engine"] == engine
        means[engine] = {m: doc["modes"][m]["fct_ms"]["mean"] for m in sim.modes}
        assert all(doc["modes"][m]["n"] == 8 for m in sim.modes)
    for m in means.values():
        assert max(m, key=m.__getitem__) == "ecmp", means
    for mode, flow_ms in means["flow"].items():
        assert means["packet"][mode] == pytest.approx(flow_ms, rel=0.15), means
