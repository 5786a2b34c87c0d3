"""``kvfabric simulate --jobs``: the runs in worker processes give the serial document."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from experiment.errors import ScenarioError
from experiment.scenario import Tool, load_scenario
from simulator.run import Simulation, simulate

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "topologies" / "scenarios" / "design-example.yaml"
MODES = ("ecmp", "flowlet", "kv-aware", "scheduled")


def _transfers(doc: dict[str, Any]) -> dict[str, list[tuple[object, ...]]]:
    return {
        mode: [(t["index"], t["src"], t["dst"], t["spine"], t["fct_ms"]) for t in m["transfers"]]
        for mode, m in doc["modes"].items()
    }


def test_worker_processes_give_the_serial_runs_transfer_for_transfer():
    scenario = load_scenario(DESIGN, Tool.SIMULATE)
    counted: list[int] = []
    stages: list[str] = []
    serial = simulate(Simulation(scenario, MODES, repeat=2))
    parallel = simulate(
        Simulation(scenario, MODES, repeat=2, jobs=2),
        on_transfer=lambda: counted.append(1),
        on_stage=stages.append,
    )
    assert _transfers(parallel) == _transfers(serial)
    assert [m for m in parallel["modes"]] == [m for m in serial["modes"]]
    assert parallel["modes"]["kv-aware"]["fct_ms"] == serial["modes"]["kv-aware"]["fct_ms"]
    # every transfer of every run was counted, and every run's end reported
    assert len(counted) == scenario.transfers * len(MODES) * 2
    assert stages[-1].startswith(f"{len(MODES) * 2}/{len(MODES) * 2} runs done on 2 processes")


def test_a_run_that_fails_in_its_worker_fails_the_whole_with_its_own_error():
    # the packet engine checks a scenario's size when the run builds it: in the worker
    cluster = load_scenario(ROOT / "topologies" / "scenarios" / "design-cluster.yaml",
                            Tool.SIMULATE)  # fmt: skip
    before = _children()
    with pytest.raises(ScenarioError) as caught:
        simulate(Simulation(cluster, ("ecmp", "flowlet"), engine="packet", jobs=2))
    assert "the packet engine is a small-scale reference and takes at most 256" in str(caught.value)
    assert caught.value.path == "fabric"
    assert _children() == before


def test_the_command_refuses_zero_jobs():
    proc = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "simulate", "--scenario", str(DESIGN), "-j", "0"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--jobs must be 1 or more, got 0" in proc.stderr
    assert "Traceback" not in proc.stderr


def _children() -> set[int]:
    me = os.getpid()
    out: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                out.add(int(entry.name))
    return out
