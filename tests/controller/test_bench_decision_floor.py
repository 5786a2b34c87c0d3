"""``kvfabric bench decision_floor``'s module: runs small on real server processes and
ends with one JSON line whose figures describe what was served."""

from __future__ import annotations

import json

import pytest

from benchmarks.decision_floor import SERVERS, main


def test_decision_floor_serves_every_request_and_reports_each_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--burst", "24", "--connections", "4", "--rounds", "2", "--window-ms", "5"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(out[-1])
    assert figures["benchmark"] == "decision_floor" and figures["burst"] == 24
    assert set(figures["servers"]) == set(SERVERS)
    for name, ways in figures["servers"].items():
        assert set(ways) == {"paced", "at-once"}
        for way in ways.values():
            assert way["rounds"] == 2 and 0 <= way["rounds_met"] <= 2
            assert 0 < way["slowest_median_ms"] <= way["slowest_worst_ms"]
            # one CPU figure per process: the split server has two
            assert len(way["cpu_us_per_request"]) == (2 if name == "split" else 1)
            # the engine's telemetry is fresh, so every decision pins a spine
            assert way["pinned_share"] == (0.0 if name == "bare" else 1.0)
    assert sum(line.startswith(SERVERS) for line in out) == 2 * len(SERVERS)
