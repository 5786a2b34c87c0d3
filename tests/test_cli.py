"""The console script's dispatch: subcommands, usage errors and exit statuses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvfabric.cli import main


def test_help_lists_installed_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "bench" in out


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
