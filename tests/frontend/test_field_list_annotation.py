"""``@field_list`` arguments are compile-time integers; anything else is a located error."""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch.errors import P4SourceError
from softswitch.frontend import load_program

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
const bit<8> FL = 1;
header h_t {{ bit<8> a; }}
struct headers {{ h_t h; }}
struct meta {{
    {field}
}}
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {{
    state start {{ pk.extract(hdr.h); transition accept; }}
}}
control VC(inout headers hdr, inout meta m) {{ apply {{ }} }}
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {{ apply {{ }} }}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {{ apply {{ }} }}
control CK(inout headers hdr, inout meta m) {{ apply {{ }} }}
control DP(packet_out pk, in headers hdr) {{ apply {{ pk.emit(hdr); }} }}
V1Switch(P(), VC(), IG(), EG(), CK(), DP()) main;
"""
FIELD_LINE = 7


def field_lists(tmp_path: Path, field: str) -> list[tuple[int, ...]]:
    path = tmp_path / "fl.p4"
    path.write_text(TEMPLATE.format(field=field))
    program = load_program(str(path))
    meta_t = program.pipeline["ig"].params[1].type
    anns = meta_t.field_annotations["x"]  # type: ignore[attr-defined]
    return [a.args for a in anns if a.name == "field_list"]


@pytest.mark.parametrize(
    ("field", "indices"),
    [
        ("@field_list(1) bit<8> x;", (1,)),
        ("@field_list(FL) bit<8> x;", (1,)),
        ("@field_list(FL, FL + 2, 0x10) bit<8> x;", (1, 3, 16)),
        ("@field_list((bit<8>)(FL << 2)) bit<8> x;", (4,)),
    ],
)
def test_indices_are_evaluated(tmp_path: Path, field: str, indices: tuple[int, ...]) -> None:
    assert field_lists(tmp_path, field) == [indices]


@pytest.mark.parametrize(
    ("field", "message", "at"),
    [
        ("@field_list(FL_MISSING) bit<8> x;", "FL_MISSING", "FL_MISSING"),
        ("@field_list(FL, true) bit<8> x;", "compile-time integer constant", "true"),
        ('@field_list("one") bit<8> x;', "compile-time integer constant", '"one"'),
        ("@field_list(key = 1) bit<8> x;", "expected field list indices", "@field_list"),
    ],
)
def test_an_index_that_cannot_be_evaluated_is_located(
    tmp_path: Path, field: str, message: str, at: str
) -> None:
    path = tmp_path / "fl.p4"
    path.write_text(TEMPLATE.format(field=field))
    with pytest.raises(P4SourceError) as info:
        load_program(str(path))
    err = info.value
    col = 5 + field.index(at)
    assert message in err.message
    assert (err.loc.line, err.loc.col) == (FIELD_LINE, col)
    assert str(err).startswith(f"{path}:{FIELD_LINE}:{col}: error: ")
