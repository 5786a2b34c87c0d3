"""Fixtures: a cabled fabric of real switch processes and controllers driving it.

The operator's tools (Prometheus and the Grafana dashboard's queries, the live page
in a browser, the report) are tested against a controller on four real
``kvfabric switch`` processes joined by veth pairs (root), so that the topology audit
runs and a cable can really be taken down; traces need no cable (``plain``). Alert
windows are 2 s so efficiency and latency windows close during a test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller_service.harness import RunningSwitches
from tests.support.controllers import controllers, pipeline

__all__ = ["artefacts", "cabled", "controllers", "pipeline", "plain"]

CONTROLLER = "  mode: kv-aware\n  alerts: {window: 2s}"


@pytest.fixture(scope="module")
def cabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSwitches]:
    f = RunningSwitches(tmp_path_factory.mktemp("cabled"), veths=True, controller=CONTROLLER)
    try:
        yield f.start()
    finally:
        f.close()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSwitches]:
    """The same four switches without cables (no root): for controllers run with
    ``--no-audit``, whose cables stay up."""
    f = RunningSwitches(tmp_path_factory.mktemp("plain"), controller=CONTROLLER)
    try:
        yield f.start()
    finally:
        f.close()


@pytest.fixture
def artefacts(request: pytest.FixtureRequest) -> Path:
    """Where a test keeps what it produced (screenshots, reports): results/test-artefacts/."""
    root = Path(__file__).resolve().parents[2] / "results" / "test-artefacts"
    out = root / str(request.node.name)
    out.mkdir(parents=True, exist_ok=True)
    return out
