"""The console script's dispatch: subcommands, usage errors and exit statuses."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kvfabric import __version__
from kvfabric.cli import main
from kvfabric.commands import SUBCOMMANDS


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    listed = {m.group(1) for m in re.finditer(r"^    (\S+)", out, re.MULTILINE)}
    assert listed == set(SUBCOMMANDS)
    assert "``" not in out and ":class:" not in out


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"kvfabric {__version__}"


def test_a_missing_subcommand_module_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SUBCOMMANDS, "no-such-module", "listed but not installed")
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        main(["--help"])


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_unknown_benchmark_names_the_ones_available() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "bench", "no-such-bench"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "no benchmark named 'no-such-bench'" in proc.stderr
    assert "Traceback" not in proc.stderr
