"""Helpers: compile small v1model programs written inline in the tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from softswitch.frontend import ir, load_program
from softswitch.interp.pipeline import Pipeline

SKELETON = """
#include <core.p4>
#include <v1model.p4>
{decls}
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {{
{parser}
}}
control VC(inout headers hdr, inout meta m) {{ apply {{ }} }}
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {{
{ingress}
}}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {{
{egress}
}}
control CK(inout headers hdr, inout meta m) {{ apply {{ }} }}
control DP(packet_out pk, in headers hdr) {{ apply {{ {deparser} }} }}
V1Switch(P(), VC(), IG(), EG(), CK(), DP()) main;
"""

DEFAULT_PARSER = "state start { pk.extract(hdr.h); transition accept; }"


@pytest.fixture
def compile_p4(tmp_path: Path) -> Callable[..., ir.Program]:
    """Compile a v1model program built from pieces (or full text)."""

    def build(
        decls: str = "",
        ingress: str = "apply { }",
        parser: str = DEFAULT_PARSER,
        egress: str = "apply { }",
        deparser: str = "pk.emit(hdr);",
        text: str | None = None,
    ) -> ir.Program:
        source = (
            text
            if text is not None
            else SKELETON.format(
                decls=decls, parser=parser, ingress=ingress, egress=egress, deparser=deparser
            )
        )
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
