"""The simulator stands on the experiment, not on the lab.

``kvfabric simulate`` needs no root, no Mininet and no controller process: importing
what it runs must not load the lab (its HTTP control client, process table, namespace
sockets) nor the KV sender's client. Checked in a fresh interpreter, so that what
other tests imported cannot hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(module: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "module",
    ["simulator.run", "simulator.sweep", "simulator.crossval", "kvfabric.commands.simulate"],
)
def test_the_simulator_loads_no_lab_module(module: str) -> None:
    loaded = _loaded(module)
    assert module in loaded  # the probe imported what it names
    lab = [m for m in loaded if m == "lab" or m.startswith("lab.")]
    assert lab == [], f"importing {module} loads {lab}"
    assert not [m for m in loaded if m.startswith("mininet")]
    assert "kvfabric.client" not in loaded


def test_the_experiment_loads_neither_engine() -> None:
    loaded = _loaded("experiment.results, experiment.sweep, experiment.arrivals")
    engines = [m for m in loaded if m.split(".")[0] in ("lab", "simulator", "mininet")]
    assert engines == []
