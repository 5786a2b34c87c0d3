"""Scenarios for the simulator: the lab's parser, the simulator's keys, located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiment.errors import ScenarioError
from experiment.scenario import Tool, parse_scenario
from simulator.workload import build_workload
from tests.support.cli import kvfabric

ROOT = Path(__file__).resolve().parents[2]

BASE = """\
name: scale
fabric: {spines: 4, leaves: 6, hosts_per_leaf: 8, link_rate: 100Gbps, host_rate: 400Gbps,
         prefill_leaves: 2}
transfer: {bytes: 1GB}
arrivals:
  - {kind: burst, size: 8, bursts: 2, window: 10ms, every: 1s}
"""


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("fabric: {uplinks_per_leaf: 8}", "fabric.uplinks_per_leaf"),
        ("simulation: {ecmp_k: 2}", "simulation"),
        ("background: [{link: {leaf: leaf1, spine: spine1}, load: 50%}]", "background[0].link"),
        ("events: [{at: 1s, link: {leaf: leaf1, spine: spine1}, capacity: 400Gbps}]",
         "events[0].capacity"),
    ],
)  # fmt: skip
def test_a_simulator_key_in_the_lab_names_the_tool(extra, where):
    text = BASE + extra + "\n"
    if extra.startswith("fabric:"):
        text = BASE.replace("prefill_leaves: 2}", "prefill_leaves: 2, uplinks_per_leaf: 8}")
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "s.yaml", Tool.LAB)
    message = str(info.value)
    assert where in message
    assert "honoured only by `kvfabric simulate`" in message
    assert "s.yaml:" in message  # located: file, line and column
    parse_scenario(text, "s.yaml", Tool.SIMULATE)  # the simulator takes it


def test_ecmp_k_is_a_simulator_mode():
    text = BASE + "modes: [ecmp, ecmp-k]\n"
    with pytest.raises(ScenarioError, match="run only by `kvfabric simulate`"):
        parse_scenario(text, "s.yaml", Tool.LAB)
    assert [str(m) for m in parse_scenario(text, "s.yaml", Tool.SIMULATE).modes] == [
        "ecmp",
        "ecmp-k",
    ]


def test_uplinks_must_be_a_multiple_of_the_spines():
    text = BASE.replace("prefill_leaves: 2}", "prefill_leaves: 2, uplinks_per_leaf: 6}")
    with pytest.raises(ScenarioError, match="multiple of the 4 spines"):
        parse_scenario(text, "s.yaml", Tool.SIMULATE)


def test_the_simulator_keys_shape_the_fabric():
    text = BASE.replace(
        "prefill_leaves: 2}",
        "prefill_leaves: 2, uplinks_per_leaf: 8, prefill_hosts_per_leaf: 4,\n"
        "         spine_rates: {spine4: 400Gbps}}",
    )
    work = build_workload(parse_scenario(text, "s.yaml", Tool.SIMULATE))
    caps = {(link.a.switch, link.b.switch): link.capacity_bps for link in work.fabric.links}
    assert caps[("leaf1", "spine1")] == 200_000_000_000  # two 100 Gb/s cables
    assert caps[("leaf1", "spine4")] == 800_000_000_000  # two 400 Gb/s cables
    assert len(work.roles.senders) == 2 * 4
    assert work.nbytes == 1_000_000_000  # no lab_bytes: the real size


def test_a_bad_scenario_is_one_located_line_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE + "simulation: {ecmp_k: 0}\n", encoding="utf-8")
    proc = kvfabric("simulate", "--scenario", str(bad))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert f"{bad}:" in proc.stderr and "simulation.ecmp_k" in proc.stderr
