"""Fixtures of the client's tests: those of the controller service's (real switches)."""

from tests.controller_service.conftest import (
    controllers,
    fabric,
    fresh_fabric,
    pipeline,
    reader,
)

__all__ = ["controllers", "fabric", "fresh_fabric", "pipeline", "reader"]
