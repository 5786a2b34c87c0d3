"""``kvfabric bench scheduler``'s module: runs small, ends with one JSON line."""

from __future__ import annotations

import json

import pytest

from benchmarks.scheduler import main


def test_bench_scheduler_prints_its_figures_as_json_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--spines", "4", "--leaves", "3", "--inflight", "30", "--decisions", "200"]
    assert main(args) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    figures = json.loads(last)
    assert figures["spines"] == 4 and figures["leaves"] == 3
    assert figures["inflight"] == 30  # one completes for each new decision
    assert figures["pinned"] == 230
    assert 0 < figures["p50_us"] <= figures["p99_us"] <= figures["max_us"]


def test_bench_scheduler_refuses_a_fabric_without_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--leaves", "1"]) == 2
    assert "need at least" in capsys.readouterr().err
