"""A third tier: two pods joined by superspines, routed and hashed as worked out by hand."""

from __future__ import annotations

import binascii
import zlib
from typing import Any

import pytest

from controller.config import parse_config
from controller.config.generate import to_yaml
from controller.errors import ConfigError
from controller.topology import PortRef, Tier, Topology
from experiment.ecmp import crc16_arc, pack
from experiment.errors import ScenarioError
from experiment.flows import RECEIVER_PORT
from experiment.scenario import Tool, parse_scenario
from simulator.run import Simulation, simulate
from simulator.workload import Workload, build_workload
from tests.controller.ctl_harness import FakeClockEngine

# leaf1-2 (prefill) and spine1-2 are pod 1, leaf3-4 (decode) and spine3-4 pod 2: every
# transfer crosses the superspines. Each spine reaches each superspine over one 200 Gb/s
# cable: a transfer alone runs at 200 Gb/s, the narrowest link of its six.
PODS = """\
name: pods
fabric: {pods: 2, superspines: 2, spines: 2, leaves: 2, hosts_per_leaf: 2,
         link_rate: 400Gbps, prefill_leaves: 2, spine_uplinks: 2, superspine_rate: 200Gbps}
transfer: {bytes: 1GB}
arrivals:
  - {kind: sequential, count: 8, gap: 10ms}
"""


@pytest.fixture(scope="module")
def work() -> Workload:
    return build_workload(parse_scenario(PODS, "pods.yaml", Tool.SIMULATE))


def test_the_pods_are_wired_as_planned(work: Workload) -> None:
    cables = {
        (link.a.switch, link.a.port, link.b.switch, link.b.port): link.capacity_bps
        for link in work.fabric.links
    }
    assert ("leaf1", 3, "spine1", 1) in cables and ("leaf3", 5, "spine3", 3) in cables
    assert not any(a == "leaf1" and b in ("spine3", "spine4") for a, _, b, _ in cables)
    # a spine's uplink to superspine k is its port 4 + k; superspine k's port s is spine s
    assert cables["spine1", 5, "superspine1", 1] == 200_000_000_000
    assert cables["spine4", 6, "superspine2", 4] == 200_000_000_000
    assert len(cables) == 8 + 8  # 2 spines x 2 leaves per pod, 4 spines x 2 superspines
    topo = work.network.topology
    assert topo.egress[PortRef("spine1", 5)].tier is Tier.SPINE_UPLINK
    assert topo.egress[PortRef("superspine1", 3)].tier is Tier.SUPERSPINE


def test_paths_between_pods_go_through_a_spine_and_a_superspine(work: Workload) -> None:
    topo = work.network.topology
    assert [str(p) for p in topo.spine_paths("leaf1", "leaf2")] == [
        "leaf1>spine1>leaf2",
        "leaf1>spine2>leaf2",
    ]
    paths = topo.spine_paths("leaf1", "leaf3")
    assert [(str(p), str(p.up), str(p.down)) for p in paths] == [
        ("leaf1>spine1>superspine1>leaf3", "leaf1:3", "spine1:5"),
        ("leaf1>spine1>superspine2>leaf3", "leaf1:3", "spine1:6"),
        ("leaf1>spine2>superspine1>leaf3", "leaf1:4", "spine2:5"),
        ("leaf1>spine2>superspine2>leaf3", "leaf1:4", "spine2:6"),
    ]
    net = work.network
    port = net.port_link
    assert net.path("h11", "h31", "spine1>superspine2>spine4") == (
        net.nic["h11"],
        port[PortRef("leaf1", 3)],
        port[PortRef("spine1", 6)],
        port[PortRef("superspine2", 4)],
        port[PortRef("spine4", 3)],
        port[PortRef("leaf3", 1)],
    )
    assert len(net.routes("leaf1", "leaf3")) == 2 * 2 * 2
    assert net.routes("leaf1", "leaf2") == ("spine1", "spine2")


@pytest.fixture(scope="module")
def runs(work: Workload) -> tuple[Simulation, dict[str, Any]]:
    sim = Simulation(work.scenario, ("ecmp", "kv-aware", "isolated"), workload=work)
    return sim, simulate(sim)


def hand_route(work: Workload, src: str, dst: str, sport: int) -> str:
    """The leaf's CRC-16/ARC, the spine's CRC-32 and the superspine's CRC-16/CCITT of the
    flow's 15 bytes, each modulo its two members in port order."""
    ip = {h.name: int(h.ipv4) for h in work.fabric.hosts}
    data = pack([(ip[src], 32), (ip[dst], 32), (6, 8), (sport, 16), (RECEIVER_PORT, 16)])
    data += b"\0\0"  # salt 0
    spine = ["spine1", "spine2"][crc16_arc(data) % 2]
    superspine = ["superspine1", "superspine2"][zlib.crc32(data) % 2]
    far = ["spine3", "spine4"][binascii.crc_hqx(data, 0) % 2]
    return f"{spine}>{superspine}>{far}"


def test_ecmp_hashes_at_every_tier(work: Workload, runs: tuple[Simulation, dict[str, Any]]) -> None:
    sim, doc = runs
    schedule = work.schedule(sim.seed)
    expected = {a.index: hand_route(work, a.src, a.dst, a.ecmp_port) for a in schedule.arrivals}
    ecmp = doc["modes"]["ecmp"]
    assert {t["index"]: t["spine"] for t in ecmp["transfers"]} == expected
    assert len(set(expected.values())) > 2  # the tiers' choices are not one index
    # one at a time: every transfer alone at the 200 Gb/s of its spine's uplink
    assert ecmp["fct_ms"]["p50"] == pytest.approx(8e9 / 200e9 * 1e3, rel=1e-6)
    assert ecmp["fct_ms"]["p99"] == pytest.approx(8e9 / 200e9 * 1e3, rel=1e-6)


def test_kv_aware_and_isolated_route_between_pods(runs: tuple[Simulation, dict[str, Any]]) -> None:
    _, doc = runs
    # alone at 200 Gb/s: 40 ms; kv-aware's pin is its tag port's range, in force at once
    for mode, fct_ms in (("kv-aware", 40.0), ("isolated", 40.0)):
        m = doc["modes"][mode]
        assert m["failed"] == 0
        assert all(t["spine"].count(">") == 2 for t in m["transfers"])
        assert m["fct_ms"]["p99"] == pytest.approx(fct_ms, rel=1e-6)


def test_the_engine_counts_a_spines_uplink_between_pods(work: Workload) -> None:
    f = FakeClockEngine(config=work.fabric)
    f.set_load("spine1:5", 0.9)
    f.set_load("spine2:5", 0.9)
    f.warm()
    d = f.decide("h11", "h31", size=10**9)
    assert d.path is not None and str(d.path) == "leaf1>spine1>superspine2>leaf3"
    assert f.inflight("leaf1:3") == 10**9 and f.inflight("spine1:6") == 10**9
    # the next one of a burst sees the first in flight and takes the other spine
    d2 = f.decide("h12", "h41", size=10**9)
    assert d2.path is not None and str(d2.path) == "leaf1>spine2>superspine2>leaf4"


THIRD_TIER = "fabric: {pods: 2, superspines: 2, leaves: 2, spines: 2}\n"
REST = "transfer: {bytes: 1GB}\narrivals: [{kind: sequential, count: 1}]\n"


def test_the_third_tier_is_the_simulators_and_the_lab_says_so() -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(THIRD_TIER + REST, "s.yaml", Tool.LAB)
    assert str(exc.value) == (
        "s.yaml:1:16: fabric.pods: 'fabric.pods' is honoured only by `kvfabric simulate`, "
        "not by `kvfabric experiment`: remove it, or run the scenario with "
        "`kvfabric simulate`"
    )


@pytest.mark.parametrize(
    ("fabric", "message"),
    [
        ("{pods: 2, leaves: 2}", "s.yaml:1:16: fabric.pods: a third tier needs both 'pods' "
         "and 'superspines'"),
        ("{pods: 1, superspines: 2}", "s.yaml:1:16: fabric.pods: expected an integer 2..64, "
         "got 1"),
        ("{pods: 2, superspines: 2, spine_uplinks: 3}", "s.yaml:1:50: fabric.spine_uplinks: "
         "expected a multiple of the 2 superspines (each spine reaches every superspine over "
         "the same number of cables), got 3"),
        ("{pods: 30, superspines: 2, leaves: 10}", "s.yaml:1:16: fabric.pods: 30 pods of 10 "
         "leaves make 300; the addressing plan has room for 254 leaves"),
        ("{superspine_rate: 400Gbps}", "s.yaml:1:27: fabric.superspine_rate: 'superspine_rate' "
         "goes with 'pods' and 'superspines' (a third tier)"),
    ],
)  # fmt: skip
def test_bad_third_tier_keys_are_located(fabric: str, message: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(f"fabric: {fabric}\n" + REST, "s.yaml", Tool.SIMULATE)
    assert str(exc.value) == message


def test_a_fabric_file_refuses_superspines(work: Workload) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(to_yaml(work.fabric), "pods.yaml")
    assert "honoured only by `kvfabric simulate`" in str(exc.value)
    assert str(exc.value).startswith("pods.yaml:")
    assert Topology(work.fabric).superspines == ("superspine1", "superspine2")
