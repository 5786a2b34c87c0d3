"""Helpers: compile small v1model programs written inline in the tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from softswitch.frontend import ir, load_program
from softswitch.interp.pipeline import Pipeline
from tests.support.v1model import v1model_program


@pytest.fixture
def compile_p4(tmp_path: Path) -> Callable[..., ir.Program]:
    """Compile a v1model program built from pieces (or full text)."""

    def build(text: str | None = None, **pieces: str) -> ir.Program:
        """``text``, or :func:`v1model_program` of ``pieces`` (decls=, ingress=...)."""
        source = text if text is not None else v1model_program(**pieces)
        path = tmp_path / "prog.p4"
        path.write_text(source)
        return load_program(str(path))

    return build


@pytest.fixture
def pipeline(compile_p4: Callable[..., ir.Program]) -> Callable[..., Pipeline]:
    """Compile and load a program."""

    def build(**kwargs: str) -> Pipeline:
        return Pipeline.load(compile_p4(**kwargs))

    return build
