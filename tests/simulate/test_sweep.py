"""``kvfabric simulate --sweep``: a grid of Dask tasks, on the in-process cluster and on a
real ``dask scheduler`` with two ``dask worker`` processes; and a bad sweep file."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from distributed import Client

from experiment.scenario import Tool
from experiment.sweep import load_sweep
from simulator.run import Simulation, simulate
from tests.support import processes
from tests.support.cli import kvfabric

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "topologies" / "scenarios"
DASK = Path(sys.executable).with_name("dask")
MODES = ("ecmp", "kv-aware")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return kvfabric("simulate", *args, timeout=240)


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    """A small sweep: collisions-400g cut to two bursts, over two background loads."""
    base = yaml.safe_load((SCENARIOS / "collisions-400g.yaml").read_text())
    base["arrivals"][0]["bursts"] = 2
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "name: small\n"
        "scenario: small.yaml\n"
        "axes:\n"
        '  - {name: background_load, key: "background[0].load", values: [0%, 50%]}\n'
        "modes: [ecmp, kv-aware]\n"
    )
    return path


def local_run(sweep_path: Path, point: dict[str, Any], seed: int, repeat: int) -> dict[str, Any]:
    """The point's results simulated here, without Dask (``--scenario``'s path)."""
    sweep = load_sweep(sweep_path, Tool.SIMULATE)
    return simulate(Simulation(sweep.scenario_at(point), MODES, repeat=repeat, seed=seed))


def fcts(doc: dict[str, Any]) -> dict[str, list[tuple[int, float | None, str | None]]]:
    return {
        mode: [(t["index"], t["fct_ms"], t["spine"]) for t in m["transfers"]]
        for mode, m in doc["modes"].items()
    }


def check_points(out: Path, sweep_path: Path, *, seed: int, repeat: int) -> list[dict[str, Any]]:
    """Every point arrived, with its outputs, and matches a local run of the same seeds."""
    points: list[dict[str, Any]] = json.loads((out / "sweep.json").read_text())
    assert [p["background_load"] for p in points] == ["0%", "50%"]
    for p in points:
        assert p["valid"] and p["n"] == 8 * repeat
        assert p["reduction"]["p99"] > 0
        for name in ("results.json", "results.md", "cdf.png", "utilisation.png"):
            assert (out / p["scenario"] / name).stat().st_size > 0
        doc = json.loads((out / p["scenario"] / "results.json").read_text())
        local = local_run(sweep_path, {"background_load": p["background_load"]}, seed, repeat)
        local = json.loads(json.dumps(local))  # as written: floats survive JSON exactly
        assert fcts(doc) == fcts(local)
        assert doc["reduction_vs_ecmp"] == local["reduction_vs_ecmp"]
    assert (out / "sweep.png").stat().st_size > 0
    return points


def test_the_in_process_cluster_runs_the_grid(sweep_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("--sweep", str(sweep_file), "--seed", "5", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "| background_load | n | ecmp p99 ms | kv-aware p99 ms | kv-aware vs ECMP |" in (
        proc.stdout
    )
    assert "4 tasks (2 points) on a local in-process cluster" in proc.stderr
    assert "32/32 transfers" in proc.stderr  # the progress, as plain lines off a terminal
    assert "Traceback" not in proc.stderr
    points = check_points(out, sweep_file, seed=5, repeat=1)
    assert all(len(p["workers"]) == 1 for p in points)  # the client's own process
    assert (out / "sweep.md").read_text().startswith("### small: p99 per point")


class DaskCluster:
    """A ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, stopped by pid."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.scheduler_file = workdir / "scheduler.json"

    def start(self, workers: int) -> str:
        self._spawn(
            "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(self.scheduler_file),
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not self.scheduler_file.exists():
            assert self.procs[0].poll() is None, self.log("scheduler")
            assert time.monotonic() < deadline, "the scheduler never wrote its address"
            time.sleep(0.2)
        for i in range(workers):
            self._spawn(
                "worker", "--scheduler-file", str(self.scheduler_file), "--host", "127.0.0.1",
                "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}",
                "--local-directory", str(self.workdir / f"w{i}"),
            )  # fmt: skip
        address: str = json.loads(self.scheduler_file.read_text())["address"]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        return address

    def worker_pids(self) -> set[int]:
        return {p.pid for p in self.procs[1:]}

    def _spawn(self, what: str, *args: str) -> None:
        command = [str(DASK), what, *args]
        with (self.workdir / f"{what}-{len(self.procs)}.log").open("wb") as log:
            self.procs.append(
                subprocess.Popen(command, cwd=self.workdir, env=self.env, stdout=log, stderr=log)
            )

    def log(self, what: str) -> str:
        return "\n".join(p.read_text() for p in self.workdir.glob(f"{what}-*.log"))

    def stop(self) -> None:
        for proc in reversed(self.procs):  # the workers first, then the scheduler
            processes.stop(proc, grace_s=20)


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    cluster = DaskCluster(tmp_path / "dask")
    cluster.workdir.mkdir()
    try:
        yield cluster
    finally:
        cluster.stop()
    assert all(p.poll() is not None for p in cluster.procs)


def test_a_real_scheduler_and_two_workers_run_the_grid(
    sweep_file: Path, tmp_path: Path, dask_cluster: DaskCluster
) -> None:
    address = dask_cluster.start(workers=2)
    out = tmp_path / "out"
    proc = run_cli(
        "--sweep", str(sweep_file), "--scheduler", address, "--repeat", "2", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr + dask_cluster.log("worker")
    assert f"8 tasks (2 points) on {address}" in proc.stderr
    points = check_points(out, sweep_file, seed=1, repeat=2)
    ran = {int(w.rsplit(":", 1)[1]) for p in points for w in p["workers"]}
    assert ran == dask_cluster.worker_pids()  # both workers, and only they, ran tasks


def test_a_bad_sweep_file_is_a_located_error(sweep_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        sweep_file.read_text().replace("modes: [ecmp, kv-aware]", "modes: [ecmp, kv_aware]")
    )
    proc = run_cli("--sweep", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1
    assert f"{bad}:5:" in proc.stderr and "modes" in proc.stderr and "kv_aware" in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = tmp_path / "missing.yaml"
    missing.write_text(sweep_file.read_text().replace("background[0]", "background[3]"))
    proc = run_cli("--sweep", str(missing), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1
    assert f"{missing}" in proc.stderr and "axes.background_load.key" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_simulator_mode_is_allowed_in_a_simulated_sweep(sweep_file: Path) -> None:
    text = sweep_file.read_text().replace("[ecmp, kv-aware]", "[ecmp, ecmp-k]")
    sweep_file.write_text(text)
    assert load_sweep(sweep_file, Tool.SIMULATE).modes == ("ecmp", "ecmp-k")
    with pytest.raises(Exception, match="run only by `kvfabric simulate`"):
        load_sweep(sweep_file)


def test_an_unreachable_scheduler_is_an_error_not_a_hang(sweep_file: Path, tmp_path: Path) -> None:
    with socket.socket() as s:  # a free port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    proc = run_cli("--sweep", str(sweep_file), "--scheduler", address, "--out", str(tmp_path))
    assert proc.returncode == 1
    assert f"error: cannot reach the Dask scheduler at {address}" in proc.stderr
    assert "Traceback" not in proc.stderr
