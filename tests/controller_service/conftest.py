"""Fixtures: the compiled pipeline, a P4Runtime-only fabric of four switch processes.

The fabric is shared by the module's tests (starting four switches costs seconds);
each test starts its own controller processes. A controller adopts the transfers an
earlier test's controller left in the switches' ledgers: a test whose assertions need
no transfer in flight at its start takes ``fresh_fabric``, its own four switches.
Everything is stopped by pid.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller_service.harness import Reader, RunningSwitches
from tests.support.controllers import controllers, pipeline

__all__ = ["controllers", "fabric", "fresh_fabric", "pipeline", "reader"]


@pytest.fixture(scope="session")
def reader(pipeline: tuple[Path, Path]) -> Reader:
    return Reader(pipeline[0])


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSwitches]:
    f = RunningSwitches(tmp_path_factory.mktemp("fabric"))
    try:
        yield f.start()
    finally:
        f.close()


@pytest.fixture
def fresh_fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSwitches]:
    f = RunningSwitches(tmp_path_factory.mktemp("fresh-fabric"))
    try:
        yield f.start()
    finally:
        f.close()
