"""Fixtures of the lab tests: root skipping, and small lab fabrics on free ports.

Every interface a lab test creates carries this process's prefix (``kvl`` and
base-36 digits of the pid, see lab.topo) and every process is stopped by pid, so the
tests never touch another user's namespaces, links or processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import FabricConfig
from controller.config.generate import leaf_spine
from experiment.fabric import lab_fabric

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fabric_2x2() -> FabricConfig:
    """Two leaves, two spines, two hosts per leaf at 20 Mb/s, on free gRPC/API ports."""
    return lab_fabric(leaf_spine(2, 2, 2, link_bps=20_000_000))
