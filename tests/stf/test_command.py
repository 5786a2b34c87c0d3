"""``kvfabric stf`` exit statuses for errors that need no compiler: bad STF lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvfabric.cli import main


def test_a_bad_stf_line_exits_2_with_the_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stf = tmp_path / "bad.stf"
    stf.write_text("packet 0 00\n\nexpect 1 zz\n")
    status = main(["stf", str(tmp_path / "prog.p4"), str(stf)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip() == f"{stf}:3: error: expected packet data is not hex: 'Z'"


def test_a_missing_stf_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["stf", str(tmp_path / "prog.p4"), str(tmp_path / "none.stf")])
    assert status == 2
    assert "cannot read STF file" in capsys.readouterr().err


def test_no_traceback_from_the_console_script(tmp_path: Path) -> None:
    stf = tmp_path / "bad.stf"
    stf.write_text("frobnicate 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "stf", "x.p4", str(stf)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert f"{stf}:1: error: unknown STF command 'frobnicate'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_defines_take_a_default_value() -> None:
    from kvfabric.commands.options import define

    assert define("A") == ("A", "1")
    assert define("A=") == ("A", "")
    assert define("V1MODEL_VERSION=20200408") == ("V1MODEL_VERSION", "20200408")
