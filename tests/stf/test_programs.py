"""The language feature programs of tests/stf/programs, each run with its STF file
through ``kvfabric stf``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvfabric.cli import main

PROGRAMS = Path(__file__).parent / "programs"
STF_FILES = sorted(PROGRAMS.glob("*.stf"))


def test_every_stf_file_has_its_program() -> None:
    assert len(STF_FILES) >= 18
    for stf in STF_FILES:
        assert stf.with_suffix(".p4").is_file(), stf


@pytest.mark.parametrize("stf", STF_FILES, ids=[p.stem for p in STF_FILES])
def test_program_passes_its_stf(stf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["stf", str(stf.with_suffix(".p4")), str(stf), "-v"])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    assert "PASS" in captured.out
