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


@pytest.mark.parametrize("euid", [0, 1000])
def test_a_bad_scenario_is_one_located_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, euid: int
):
    """The file is validated before the root check: a user hears about the file first."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    bad = tmp_path / "bad.yaml"
    bad.write_text("transfer: {bytes: 1MB}\narrivals: [{kind: sequential, count: 0}]\n")
    assert main(["experiment", "--scenario", str(bad), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvfabric experiment: error: ")
    assert "bad.yaml:2:" in err and "arrivals[0].count: expected an integer 1..100000" in err
    assert len(err.splitlines()) == 1


def test_bmv2_needs_p4c_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """simple_switch_grpc loads only p4c-bm2-ss's JSON: the controller must be given it."""
    assert main(["experiment", "--scenario", DESIGN, "--switch", "bmv2"]) == 2
    assert "--switch bmv2 needs p4c-bm2-ss's output" in capsys.readouterr().err
    info = tmp_path / "p.txtpb"
    info.write_text("")
    assert main(["experiment", "--scenario", DESIGN, "--p4info", str(info)]) == 2
    assert "--p4info and --p4blob go together" in capsys.readouterr().err
    missing = str(tmp_path / "k.json")
    argv = ["experiment", "--scenario", DESIGN, "--p4info", str(info), "--p4blob", missing]
    assert main(argv) == 2
    assert f"--p4blob: no file {missing!r}" in capsys.readouterr().err


def test_prebuilt_pipeline_files_reach_the_controller(tmp_path: Path):
    from lab.control import ControllerProcess
    from lab.procs import ProcessTable
    from lab.run import _pipeline_options

    info, blob = tmp_path / "p.txtpb", tmp_path / "k.json"
    options = _pipeline_options((info, blob))
    assert options == ["--p4info", str(info), "--p4blob", str(blob)]
    assert _pipeline_options(None) == []
    c = ControllerProcess(tmp_path / "f.yaml", tmp_path / "c.log", ProcessTable(), options=options)
    assert c.argv[-6:] == ["controller", str(tmp_path / "f.yaml"), *options]
