"""The experiment runner end to end on a small fabric (root), and Ctrl-C in the middle.

The controller service is replaced by ``static_fabric.StaticControl`` (see its
docstring): what is tested is the lab's machinery (schedules, background steering and
its check, transfers in every mode, the monitor, validity, results, teardown), not the
controller's choices.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from experiment.fabric import fabric_from_params
from experiment.scenario import parse_scenario
from lab.net import Footprint, leftovers
from lab.run import Experiment, run_experiment

from .static_fabric import PROGRAM, StaticControl, compile_program

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(not PROGRAM.exists(), reason="needs p4/kv_fabric.p4"),
]

SMALL = """\
name: small
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 3, link_rate: 20Mbps, prefill_leaves: 1}
hosts: {senders: [h11, h12], receivers: [h21, h22], background: [h13, h23]}
transfer: {model: llama-3-8b, tokens: 1024, real_link_rate: 100Gbps, lab_bytes: 300kB}
arrivals:
  - {kind: sequential, count: 2, gap: 200ms}
  - {kind: burst, size: 2, bursts: 2, window: 20ms, every: 1s}
background:
  - {spine: spine1, load: 50%}
run: {warmup: 1s, transfer_timeout: 30s, settle: 500ms}
"""


def footprint_of(out: Path) -> Footprint:
    doc = json.loads((out / "lab.json").read_text())
    return Footprint(frozenset(doc["pids"]), frozenset(doc["netns"]), frozenset(doc["interfaces"]))


def test_every_mode_runs_and_the_machine_is_clean_afterwards(tmp_path: Path):
    scenario = parse_scenario(SMALL, "small.yaml")
    options = compile_program(tmp_path)
    exp = Experiment(
        scenario,
        fabric_from_params(scenario.fabric, scenario.name),
        tmp_path / "out",
        control_factory=lambda f: StaticControl(f, options),
        start_controller=False,
    )
    doc = run_experiment(exp)
    out = exp.out
    assert {p.name for p in out.iterdir()} >= {
        "results.json",
        "results.md",
        "cdf.png",
        "fabric.yaml",
        "lab.json",
        "logs",
    }
    assert json.loads((out / "results.json").read_text())["scenario"] == "small"
    for mode in ("ecmp", "flowlet", "kv-aware", "isolated"):
        m = doc["modes"][mode]
        assert m["n"] == 6 and m["failed"] == 0, (mode, m)
    # Background placement was checked in every mode and held (the documented ECMP hash).
    placement = [r for r in doc["invalid_reasons"] if "background on" in r]
    assert placement == [], placement
    # isolated pins each transfer, alone, to the spine the background leaves free.
    assert doc["modes"]["isolated"]["paths"] == {"spine2": 6}
    assert set(doc["tier_utilisation"]["ecmp"]) == {"intra-rack", "inter-rack", "spine"}
    print(json.dumps({m: d["fct_ms"] for m, d in doc["modes"].items()}, indent=1))
    print("valid:", doc["valid"], doc["invalid_reasons"])
    assert leftovers(footprint_of(out), wait_s=0) == []


SCRIPT = """
import sys
from pathlib import Path
from experiment.fabric import fabric_from_params
from lab.run import Experiment, run_experiment
from experiment.scenario import parse_scenario
from tests.lab.static_fabric import StaticControl, compile_program
from tests.lab.test_experiment_root import SMALL

out = Path(sys.argv[1])
scenario = parse_scenario(SMALL.replace("bursts: 2,", "bursts: 30,"), "small.yaml")
options = compile_program(out.parent)
exp = Experiment(scenario, fabric_from_params(scenario.fabric, scenario.name), out,
                 modes=("ecmp", "kv-aware"), control_factory=lambda f: StaticControl(f, options),
                 start_controller=False)
try:
    run_experiment(exp)
except KeyboardInterrupt:
    sys.exit(130)
"""


def _wait_for(ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while not ready() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert ready(), log.read_text()


@pytest.mark.parametrize("moment", ["first mode", "second mode"])
def test_ctrl_c_leaves_a_clean_machine_and_partial_results(tmp_path: Path, moment: str):
    """SIGINT by pid, in the first mode (2 s into its transfers) or the second: exit
    130, no traceback, partial results, nothing of the lab left."""
    out, log = tmp_path / "out", tmp_path / "run.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(out)],
            cwd=ROOT,
            start_new_session=True,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        if moment == "first mode":  # the progress line of the first mode, then its warm-up
            _wait_for(lambda: "ecmp, repeat 1/1" in log.read_text(), proc, log)
            time.sleep(4.0)
        else:  # the first mode's results are written once it is over
            _wait_for((out / "results.json").exists, proc, log)
            time.sleep(2.0)
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text()
    assert code == 130, text
    assert "Traceback" not in text, text
    doc = json.loads((out / "results.json").read_text())
    assert doc["partial"] is True and doc["valid"] is False
    if moment == "second mode":
        assert doc["modes"]["ecmp"]["n"] > 0
    assert any("interrupted" in r for r in doc["invalid_reasons"])
    assert leftovers(footprint_of(out), wait_s=0) == []
