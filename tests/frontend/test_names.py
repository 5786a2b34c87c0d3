"""Control-plane names that p4c computes in ways that are easy to get wrong."""

from __future__ import annotations

from pathlib import Path

from softswitch.frontend import load_program

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> w; }
struct headers { h_t h; }
struct meta { bit<16> sel; }
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.a = v; }
    table named {
        key = { hdr.h.a: exact; m.sel: selector; }
        actions = { set; }
        @name("ap_ws") @max_group_size(8)
        implementation = action_selector(HashAlgorithm.identity, 32w64, 32w10);
    }
    table unnamed {
        key = { hdr.h.w: exact; }
        actions = { set; }
        implementation = action_profile(32w16);
    }
    apply { named.apply(); unnamed.apply(); }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CK(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), IG(), EG(), CK(), DP()) main;
"""


def test_action_profiles_built_in_a_table_property_are_named_by_the_property(
    tmp_path: Path,
) -> None:
    # p4c: Property::controlPlaneName() -- the property's @name as written
    # (no control prefix), else the property's own name
    path = tmp_path / "profiles.p4"
    path.write_text(PROGRAM)
    program = load_program(str(path))
    tables = {t.local_name: t for t in program.tables}
    named = tables["named"].implementation
    unnamed = tables["unnamed"].implementation
    assert named is not None and unnamed is not None
    assert named.name == "ap_ws"
    assert [a.name for a in named.annotations] == ["name", "max_group_size"]
    assert unnamed.name == "implementation"


KEYS = PROGRAM.replace(
    "key = { hdr.h.w: exact; }",
    "key = { hdr.h.w & 16w0xFF00: ternary; hdr.h.w[7:0]: exact; "
    'hdr.h.a: exact @name("first"); hdr.h.isValid(): exact; }',
)


def test_key_names_are_the_expression_text_or_the_name_annotation(tmp_path: Path) -> None:
    # p4c's TableKeyNames: constants print in the base they were written in,
    # without a width; @name is used as written
    path = tmp_path / "keys.p4"
    path.write_text(KEYS)
    program = load_program(str(path))
    table = next(t for t in program.tables if t.local_name == "unnamed")
    assert [k.name for k in table.keys] == [
        "hdr.h.w & 0xff00",
        "hdr.h.w[7:0]",
        "first",
        "hdr.h.isValid()",
    ]
