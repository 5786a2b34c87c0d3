"""Language features checked end to end: sizes of types, ``...`` in struct
expressions, a ``value_set`` of a struct matching a whole select key list,
and ``@optional`` extern parameters (spec 8.26, 13.6, 12.11, 7.2.10.1)."""

from __future__ import annotations

from collections.abc import Callable

from softswitch.frontend import ir
from softswitch.interp.pipeline import Pipeline

DECLS = """
header h_t { bit<8> a; bit<8> b; bit<8> r; }
header v_t { bit<4> x; bit<12> y; varbit<16> z; }
struct pair_t { bit<8> first; bit<8> second; }
struct headers { h_t h; v_t v; }
struct meta { }
"""


def test_size_methods_of_types_and_values(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.h.a = (bit<8>)v_t.minSizeInBits();
            hdr.h.b = (bit<8>)hdr.v.maxSizeInBits();
            const int bytes = headers.minSizeInBytes() + h_t.maxSizeInBytes();
            hdr.h.r = (bit<8>)bytes;
            sm.egress_spec = 1;
        }""",
        deparser="pk.emit(hdr.h);",
    )
    # v_t: 16 fixed bits + up to 16 varbit bits; headers: 24 + 16 bits = 5 bytes, h_t 3
    assert pl.process(0, bytes(3)) == [(1, bytes([16, 32, 8]))]


def test_dots_in_a_struct_expression_give_default_values(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            pair_t p = { second = hdr.h.a, ... };
            h_t copy = { r = 7, ... };
            hdr.h.a = p.first;
            hdr.h.b = p.second;
            hdr.h.r = copy.isValid() ? 8w1 : 8w0;
            sm.egress_spec = 1;
        }""",
        deparser="pk.emit(hdr.h);",
    )
    assert pl.process(0, bytes([9, 9, 9])) == [(1, bytes([0, 9, 1]))]


def test_struct_value_set_matches_the_whole_key_list(pipeline: Callable[..., Pipeline]) -> None:
    parser = """
        value_set<pair_t>(4) pvs;
        state start {
            pk.extract(hdr.h);
            transition select(hdr.h.a, hdr.h.b) {
                pvs: hit;
                default: accept;
            }
        }
        state hit { hdr.h.r = 0xEE; transition accept; }"""
    pl = pipeline(
        decls=DECLS,
        parser=parser,
        ingress="apply { sm.egress_spec = 1; }",
        deparser="pk.emit(hdr.h);",
    )
    (vs,) = pl.value_sets.values()
    vs.add((1, 2))
    assert pl.process(0, bytes([1, 2, 0])) == [(1, bytes([1, 2, 0xEE]))]
    assert pl.process(0, bytes([1, 3, 0])) == [(1, bytes([1, 3, 0]))]


def test_optional_extern_parameter_may_be_left_out(
    compile_p4: Callable[..., ir.Program],
) -> None:
    program = compile_p4(
        decls=DECLS + "extern void notify(in bit<8> a, @optional in bit<8> b);",
        ingress="apply { notify(hdr.h.a); notify(hdr.h.a, hdr.h.b); }",
    )
    ig = program.pipeline["ig"]
    calls = [s.call for s in ig.body if isinstance(s, ir.CallStmt)]
    assert [len(c.args) for c in calls] == [2, 2]
    assert calls[0].args[1].expr is None
    assert calls[1].args[1].expr is not None


def test_assignment_widens_implicitly_with_sign_extension(
    pipeline: Callable[..., Pipeline],
) -> None:
    decls = """
    header h_t { int<8> a; bit<8> b; int<16> s; bit<16> u; }
    struct headers { h_t h; }
    struct meta { }
    """
    pl = pipeline(
        decls=decls,
        ingress="apply { hdr.h.s = hdr.h.a >> 1; hdr.h.u = hdr.h.b; sm.egress_spec = 1; }",
    )
    assert pl.process(0, bytes([0xF0, 0xF0, 0, 0, 0, 0])) == [
        (1, bytes([0xF0, 0xF0, 0xFF, 0xF8, 0x00, 0xF0]))
    ]


def test_generic_control_instantiated_with_type_arguments(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS + "control Inc<T>(inout T v) { apply { v = v + 1; } }",
        ingress="""
        Inc<bit<8>>() inc;
        apply { inc.apply(hdr.h.a); inc.apply(hdr.h.a); sm.egress_spec = 1; }""",
        deparser="pk.emit(hdr.h);",
    )
    assert pl.process(0, bytes([5, 0, 0])) == [(1, bytes([7, 0, 0]))]


def test_control_instance_passed_as_a_control_type_constructor_argument(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS
        + """
        control Step(inout bit<8> v);
        control AddOne(inout bit<8> v) { apply { v = v + 1; } }
        control Twice(inout bit<8> v)(Step s) { apply { s.apply(v); s.apply(v); } }""",
        ingress="""
        AddOne() add;
        Twice(add) twice;
        apply { twice.apply(hdr.h.a); sm.egress_spec = 1; }""",
        deparser="pk.emit(hdr.h);",
    )
    assert pl.process(0, bytes([5, 0, 0])) == [(1, bytes([7, 0, 0]))]


def test_serializable_enum_key_takes_entries_of_its_underlying_type(
    pipeline: Callable[..., Pipeline],
) -> None:
    decls = """
    enum bit<8> Kind { A = 0x12, B = 0x34 }
    header h_t { Kind k; bit<8> r; }
    struct headers { h_t h; }
    struct meta { }
    """
    ingress = """
    action set(bit<8> v) { hdr.h.r = v; }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { set; }
        default_action = set(0);
        const entries = {
            Kind.A : set(1);
            ((bit<8>)Kind.B) &&& 0xF0 : set(2);
        }
    }
    apply { t.apply(); sm.egress_spec = 1; }"""
    pl = pipeline(decls=decls, ingress=ingress)
    assert pl.process(0, bytes([0x12, 0])) == [(1, bytes([0x12, 1]))]
    assert pl.process(0, bytes([0x3F, 0])) == [(1, bytes([0x3F, 2]))]
    assert pl.process(0, bytes([0x40, 0])) == [(1, bytes([0x40, 0]))]


def test_control_may_share_its_name_with_an_extern_function(
    pipeline: Callable[..., Pipeline],
) -> None:
    text = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct headers { h_t h; }
struct meta { }
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control verify_checksum(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CK(inout headers hdr, inout meta m) {
    apply {
        update_checksum(true, { hdr.h.a, hdr.h.b }, hdr.h.c, HashAlgorithm.csum16);
    }
}
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), verify_checksum(), IG(), EG(), CK(), DP()) main;
"""
    pl = pipeline(text=text)
    # ones' complement of 0x1234 is 0xEDCB
    assert pl.process(0, bytes([0x12, 0x34, 0, 0])) == [(1, bytes([0x12, 0x34, 0xED, 0xCB]))]


# The start of a program whose header is one byte ``a``, up to its parser ``P``.
ONE_BYTE_HEADER_AND_PARSER = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta { }
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}"""


def test_package_arguments_given_by_name_in_any_order(pipeline: Callable[..., Pipeline]) -> None:
    text = (
        ONE_BYTE_HEADER_AND_PARSER
        + """
control VC(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { hdr.h.a = hdr.h.a + 1; sm.egress_spec = 2; }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { hdr.h.a = hdr.h.a * 2; }
}
control CK(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(dep = DP(), eg = EG(), p = P(), ck = CK(), ig = IG(), vr = VC()) main;
"""
    )
    pl = pipeline(text=text)
    assert pl.process(0, bytes([3])) == [(2, bytes([8]))]


def test_header_with_a_struct_field_extracts_and_emits_its_fields(
    pipeline: Callable[..., Pipeline],
) -> None:
    decls = """
    struct pair_t { bit<4> hi; bit<12> lo; }
    header h_t { bit<8> a; pair_t p; bit<8> b; }
    struct headers { h_t h; }
    struct meta { }
    """
    ingress = """apply {
        hdr.h.b = (bit<8>)hdr.h.p.hi;
        hdr.h.p.lo = hdr.h.p.lo + 1;
        sm.egress_spec = 1;
    }"""
    pl = pipeline(decls=decls, ingress=ingress)
    assert pl.process(0, bytes([9, 0xA1, 0x23, 0])) == [(1, bytes([9, 0xA1, 0x24, 0x0A]))]


def test_generic_blocks_given_to_the_package_get_their_type_arguments_inferred(
    pipeline: Callable[..., Pipeline],
) -> None:
    text = (
        ONE_BYTE_HEADER_AND_PARSER
        + """
control NoChecks<H, M>(inout H hdr, inout M m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { hdr.h.a = hdr.h.a + 1; sm.egress_spec = 1; }
}
control EG<H, M>(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), NoChecks(), IG(), EG(), NoChecks(), DP()) main;
"""
    )
    pl = pipeline(text=text)
    assert pl.process(0, bytes([3])) == [(1, bytes([4]))]
