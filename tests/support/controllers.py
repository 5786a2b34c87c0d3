"""Controller processes for the tests that run real ones, and their pytest fixtures.

:class:`Controllers` starts ``kvfabric controller`` processes on a fabric file and
stops every one it started when the test ends (by pid, through
:class:`~tests.controller_service.harness.ControllerProc`). The fixtures ``pipeline``
(the compiled pipeline, once a session) and ``controllers`` are imported by the
conftests of the suites that use them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller_service.harness import Api, ControllerProc, compile_pipeline, wait_for


class Controllers:
    """Controller processes a test starts; all are stopped at its end."""

    def __init__(self, pipeline: tuple[Path, Path]) -> None:
        self.pipeline = pipeline
        self.started: list[ControllerProc] = []

    def start(self, fabric: Path, *extra: str) -> ControllerProc:
        proc = ControllerProc(fabric, self.pipeline, *extra)
        self.started.append(proc)
        return proc.start()

    def ready(self, fabric: Path, *extra: str) -> tuple[ControllerProc, Api]:
        """A controller started and ready to serve, and its API."""
        proc = self.start(fabric, *extra)
        api = proc.api()
        api.wait_ready()
        return proc, api

    def primary_and_backup(self, fabric: Path) -> tuple[ControllerProc, ControllerProc]:
        """A ready primary (``--no-audit``), then a backup started after it, once it
        says it is the backup."""
        primary, _ = self.ready(fabric, "--no-audit")
        backup = self.start(fabric, "--no-audit", "--backup")
        api = backup.api()
        wait_for(lambda: api.call("GET", "/healthz")[1]["role"] == "backup")
        return primary, backup

    def close(self) -> None:
        for proc in self.started:
            proc.close()


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return compile_pipeline(tmp_path_factory.mktemp("pipeline"))


@pytest.fixture
def controllers(pipeline: tuple[Path, Path]) -> Iterator[Controllers]:
    c = Controllers(pipeline)
    try:
        yield c
    finally:
        c.close()
