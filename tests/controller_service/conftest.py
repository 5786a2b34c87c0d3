"""Fixtures: the compiled pipeline, a P4Runtime-only fabric of four switch processes.

The fabric is shared by the module's tests (starting four switches costs seconds);
each test starts its own controller processes. Everything is stopped by pid.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller_service.harness import (
    ControllerProc,
    Reader,
    RunningSwitches,
    compile_pipeline,
)


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return compile_pipeline(tmp_path_factory.mktemp("pipeline"))


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


class Controllers:
    """Controller processes a test starts; all are stopped at its end."""

    def __init__(self, pipeline: tuple[Path, Path]) -> None:
        self.pipeline = pipeline
        self.started: list[ControllerProc] = []

    def start(self, fabric: Path, *extra: str) -> ControllerProc:
        proc = ControllerProc(fabric, self.pipeline, *extra)
        self.started.append(proc)
        return proc.start()

    def close(self) -> None:
        for proc in self.started:
            proc.close()


@pytest.fixture
def controllers(pipeline: tuple[Path, Path]) -> Iterator[Controllers]:
    c = Controllers(pipeline)
    try:
        yield c
    finally:
        c.close()
