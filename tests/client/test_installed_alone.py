"""The client installs alone: a wheel of kvfabric in an empty venv, with no index.

A prefill host needs only ``kvfabric.client`` (the standard library): ``pip install
kvfabric`` must not bring ns-3, numba, Dask, finsy or gRPC. The wheel is built from
this checkout and installed with ``--no-index``, so any dependency of the base
install would fail the install. The venv's Python then makes a real transfer through
a controller on real switch processes, from a directory outside the checkout and in
isolated mode, so nothing of the checkout or of the project's venv is importable
there. The ``kvfabric`` command of that venv names the extra a subcommand needs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller_service.harness import RunningSwitches
from tests.support.controllers import Controllers

ROOT = Path(__file__).resolve().parents[2]

TRANSFER = """
import json, socket, sys
import kvfabric.client
from kvfabric.client import Client

ear = socket.create_server(("127.0.0.1", 0))
with Client([sys.argv[1]], deadline_s=5) as client:
    with client.transfer("h11", "h21", 4000, connect=("127.0.0.1", ear.getsockname()[1])) as t:
        t.socket.sendall(b"kv")
loaded = sorted({m.partition(".")[0] for m in sys.modules})
print(json.dumps({
    "file": kvfabric.client.__file__,
    "placement": t.result.placement.placement,
    "spine": t.result.placement.spine,
    "reported": t.result.reported,
    "loaded": loaded,
}))
"""


LEFT_OUT = (".git", ".venv*", "build", "results", "*.egg-info", "__pycache__", ".*_cache",
            ".hypothesis")  # fmt: skip
"""What the copy of the checkout leaves out: a wheel is built in the source tree's
``build/``, which must not land in the checkout."""


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty venv with only the kvfabric wheel of this checkout installed."""
    work = tmp_path_factory.mktemp("alone")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*LEFT_OUT), symlinks=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(work / "dist"), str(source)],
        check=True, capture_output=True, cwd=work,
    )  # fmt: skip
    [wheel] = (work / "dist").glob("kvfabric-*.whl")
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--no-index", "-q",
         "--disable-pip-version-check", str(wheel)],
        check=True, capture_output=True, cwd=work,
    )  # fmt: skip
    yield env_dir


def _clean_env() -> dict[str, str]:
    """The environment without anything that would reach the checkout or its venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def test_the_base_install_brings_no_dependency(client_venv: Path) -> None:
    out = subprocess.run(
        [str(client_venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        check=True, capture_output=True, text=True, env=_clean_env(),
    )  # fmt: skip
    names = {p["name"].lower() for p in json.loads(out.stdout)}
    assert "kvfabric" in names
    assert names - {"kvfabric", "pip", "setuptools", "wheel"} == set()


def test_the_client_alone_makes_a_transfer_through_a_controller(
    client_venv: Path, fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    c = controllers.start(fabric.path, "--no-audit")
    c.api().wait_ready()
    out = subprocess.run(
        [str(client_venv / "bin" / "python"), "-I", "-c", TRANSFER, f"{c.host}:{c.port}"],
        check=True, capture_output=True, text=True, cwd=tmp_path, env=_clean_env(), timeout=60,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["file"].startswith(str(client_venv))
    assert result["placement"] == "pinned" and result["spine"]
    assert result["reported"] is True
    heavy = {"finsy", "grpc", "google", "numpy", "numba", "distributed", "ns", "yaml", "aiohttp"}
    assert heavy & set(result["loaded"]) == set()


def test_a_subcommand_without_its_extra_names_the_extra(client_venv: Path) -> None:
    kvfabric = str(client_venv / "bin" / "kvfabric")
    out = subprocess.run(
        [kvfabric, "controller", "fabric.yaml"], capture_output=True, text=True,
        env=_clean_env(), timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 1
    assert "pip install 'kvfabric[controller]'" in out.stderr
    assert "Traceback" not in out.stderr
    listing = subprocess.run(
        [kvfabric, "--help"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        timeout=60,
        check=True,
    )
    assert "simulate" in listing.stdout and "kvfabric[simulator]" in listing.stdout
