"""``kvfabric experiment``: its command line and its errors (no fabric is built here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvfabric.cli import main

from .conftest import ROOT

DESIGN = str(ROOT / "topologies" / "scenarios" / "design-example.yaml")


def test_unknown_mode_is_a_usage_error(capsys: pytest.CaptureFixture[str]):
    assert main(["experiment", "--scenario", DESIGN, "--modes", "ecmp,kvaware"]) == 2
    err = capsys.readouterr().err
    assert "unknown mode 'kvaware'; did you mean 'kv-aware'?" in err


def test_repeat_must_be_positive(capsys: pytest.CaptureFixture[str]):
    assert main(["experiment", "--scenario", DESIGN, "--repeat", "0"]) == 2
    assert "--repeat must be at least 1" in capsys.readouterr().err


def test_scenario_or_sweep_is_required():
    with pytest.raises(SystemExit) as info:
        main(["experiment"])
    assert info.value.code == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="the command checks for root first")
def test_a_bad_scenario_is_one_located_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bad = tmp_path / "bad.yaml"
    bad.write_text("transfer: {bytes: 1MB}\narrivals: [{kind: sequential, count: 0}]\n")
    assert main(["experiment", "--scenario", str(bad), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvfabric experiment: error: ")
    assert "bad.yaml:2:" in err and "arrivals[0].count: expected an integer 1..100000" in err
    assert len(err.splitlines()) == 1
