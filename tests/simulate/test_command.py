"""``kvfabric simulate`` end to end: the experiment's outputs, and its refusals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import kvfabric

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "topologies" / "scenarios" / "design-example-400g.yaml"


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return kvfabric("simulate", *args)


def test_a_run_writes_the_experiments_outputs(tmp_path):
    out = tmp_path / "out"
    proc = simulate(
        "--scenario", str(SCENARIO), "--modes", "ecmp,ecmp-k,kv-aware", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert "| kv-aware | 16 |" in proc.stdout
    assert "48/48 transfers" in proc.stderr  # the progress bar, as plain lines off a terminal
    for name in ("results.json", "results.md", "cdf.png", "utilisation.png"):
        assert (out / name).stat().st_size > 0
    doc = json.loads((out / "results.json").read_text())
    assert list(doc["modes"]) == ["ecmp", "ecmp-k", "kv-aware"]
    assert set(doc["modes"]["kv-aware"]["fct_ms"]) == {"p50", "p95", "p99", "mean"}
    assert doc["modes"]["kv-aware"]["n"] == 16
    assert len(doc["modes"]["ecmp"]["transfers"]) == 16
    assert doc["reduction_vs_ecmp"]["kv-aware"]["p99"] > 0
    assert doc["simulation"]["engine"] == "flow"
    assert doc["simulation"]["transfer_bytes"] == 1_342_177_280


def test_the_help_describes_both_engines():
    proc = simulate("--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # argparse wraps lines
    assert "--engine {flow,packet}" in text
    assert "--engine flow (flow-level, any scale) or packet (ns-3," in text  # the description
    assert "flow (default): flow-level, max-min fair" in text
    assert "packet: ns-3, TCP packets through real queues" in text
    assert "(flow-level engine)" not in text


def test_an_unknown_mode_is_a_usage_error(tmp_path):
    proc = simulate("--scenario", str(SCENARIO), "--modes", "ecmp,kv_aware", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "unknown mode 'kv_aware'" in proc.stderr and "kv-aware" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_packet_engine_refuses_the_design_cluster(tmp_path):
    cluster = ROOT / "topologies" / "scenarios" / "design-cluster.yaml"
    # its placement modes (the references are refused before the size: see test_reference)
    proc = simulate(
        "--scenario", str(cluster), "--engine", "packet", "--modes", "ecmp,kv-aware",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 1
    assert "design-cluster.yaml: fabric:" in proc.stderr
    assert "takes at most 256" in proc.stderr and "--engine flow" in proc.stderr
    assert "Traceback" not in proc.stderr


NO_SIMULATION = ROOT / "topologies" / "scenarios" / "collisions-400g.yaml"


def test_a_packet_engine_key_is_refused_by_the_flow_engine(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(NO_SIMULATION.read_text() + "simulation:\n  packet: {tcp: cubic}\n")
    proc = simulate("--scenario", str(scenario), "--engine", "flow", "--out", str(tmp_path))
    assert proc.returncode == 1
    assert (
        "s.yaml:" in proc.stderr
        and ": simulation.packet: honoured only by the packet engine" in (proc.stderr)
    )
    assert "--engine packet" in proc.stderr and "Traceback" not in proc.stderr


def test_dctcp_without_ecn_is_a_located_error(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(NO_SIMULATION.read_text() + "simulation:\n  packet: {tcp: dctcp}\n")
    proc = simulate("--scenario", str(scenario), "--engine", "packet", "--out", str(tmp_path))
    assert proc.returncode == 1
    assert "simulation.packet.tcp: dctcp needs ECN marking" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_packet_engine_refuses_a_third_tier(tmp_path):
    three_tier = ROOT / "topologies" / "scenarios" / "design-cluster-3tier.yaml"
    proc = simulate(
        "--scenario", str(three_tier), "--engine", "packet", "--modes", "ecmp",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 1
    assert "design-cluster-3tier.yaml: fabric.pods: honoured only by the flow engine" in (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr
