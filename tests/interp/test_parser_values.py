"""What a parser reads: lookahead of any fixed-width type, and stacks of unions.

* ``lookahead<T>()`` takes ``T``'s width of bits without consuming them, for a
  bit string, a bool, a serializable enum, a struct of those (fields in
  declaration order, first field in the first bits) or a header (valid);
  too few bits left is PacketTooShort, as for ``extract``;
* ``extract(hs.next.m)`` on a stack of header unions fills member ``m`` of
  the next union (its other members become invalid) and moves ``nextIndex``
  on, as BMv2's union-stack extract does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from softswitch.errors import UnsupportedError
from softswitch.interp.pipeline import Pipeline

LOOKAHEAD_DECLS = """
enum bit<4> kind_t { A = 1, B = 2 }
struct inner_t { bit<4> hi; bool flag; bit<3> lo; }
struct peek_t { bit<8> first; inner_t rest; kind_t kind; bit<4> pad; }
header h_t { bit<8> a; bit<8> b; bit<8> c; }
header out_t { bit<8> first; bit<8> rest; bit<8> kind; bit<8> word; }
struct headers { h_t h; out_t o; }
struct meta { }
"""


def test_lookahead_of_a_struct_a_bit_string_and_a_bool(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=LOOKAHEAD_DECLS,
        parser="""state start {
            peek_t p = pk.lookahead<peek_t>();
            bit<16> w = pk.lookahead<bit<16>>();
            bool top = pk.lookahead<bool>();
            hdr.o.setValid();
            hdr.o.first = p.first;
            hdr.o.rest = p.rest.hi ++ (bit<1>)p.rest.flag ++ p.rest.lo;
            hdr.o.kind = (p.kind == kind_t.B ? 8w0xB0 : 8w0) | (top ? 8w1 : 8w0);
            hdr.o.word = w[7:0];
            pk.extract(hdr.h);
            transition accept;
        }""",
        ingress="apply { sm.egress_spec = 1; }",
        deparser="pk.emit(hdr.h); pk.emit(hdr.o);",
    )
    # the bits: first = 0x81, rest = 1010 1 011, kind = 2, pad = 0xF
    sent = pl.process(0, bytes([0x81, 0xAB, 0x2F]))
    assert sent == [(1, bytes([0x81, 0xAB, 0x2F, 0x81, 0xAB, 0xB1, 0xAB]))]


def test_lookahead_past_the_end_is_packet_too_short(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=LOOKAHEAD_DECLS,
        parser="""state start {
            peek_t p = pk.lookahead<peek_t>();
            pk.extract(hdr.h);
            transition accept;
        }""",
        ingress="""apply {
            if (sm.parser_error == error.PacketTooShort) { hdr.h.setValid(); hdr.h.a = 0xEE; }
            sm.egress_spec = 1;
        }""",
        deparser="pk.emit(hdr.h);",
    )
    # nothing extracted: the two bytes follow the header ingress made valid
    assert pl.process(0, bytes([1, 2])) == [(1, bytes([0xEE, 0, 0, 1, 2]))]


def test_lookahead_of_a_type_without_a_fixed_width_is_a_located_error(
    pipeline: Callable[..., Pipeline],
) -> None:
    with pytest.raises(UnsupportedError, match=r"prog\.p4:\d+:\d+: error: unsupported: lookahead"):
        pipeline(
            decls=LOOKAHEAD_DECLS + "header v_t { varbit<16> v; } struct vs_t { v_t v; }",
            parser="""state start {
                vs_t x = pk.lookahead<vs_t>();
                transition accept;
            }""",
        )


UNION_DECLS = """
header base_t { bit<8> t; }
header one_t { bit<8> v; }
header two_t { bit<16> v; }
header_union u_t { one_t one; two_t two; }
struct headers { base_t base; u_t[2] u; }
struct meta { }
"""


def test_extract_into_the_next_union_of_a_stack_moves_next_on(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=UNION_DECLS,
        parser="""
        state start {
            pk.extract(hdr.base);
            transition select(hdr.base.t) { 0: short_first; default: long_first; }
        }
        state short_first {
            pk.extract(hdr.u.next.one);
            pk.extract(hdr.u.next.two);
            transition accept;
        }
        state long_first {
            pk.extract(hdr.u.next.two);
            pk.extract(hdr.u.next.one);
            transition accept;
        }""",
        ingress="""apply {
            if (hdr.u[0].one.isValid()) { hdr.u[0].one.v = 0xA0; }
            if (hdr.u[1].two.isValid()) { hdr.u[1].two.v = 0xB1B1; }
            if (hdr.u[0].two.isValid()) { hdr.u[0].two.v = 0xC0C0; }
            if (hdr.u[1].one.isValid()) { hdr.u[1].one.v = 0xD1; }
            sm.egress_spec = 1;
        }""",
    )
    assert pl.process(0, bytes([0, 1, 2, 3, 9])) == [(1, bytes([0, 0xA0, 0xB1, 0xB1, 9]))]
    assert pl.process(0, bytes([1, 1, 2, 3, 9])) == [(1, bytes([1, 0xC0, 0xC0, 0xD1, 9]))]


def test_a_third_union_extract_into_a_full_stack_is_an_error(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=UNION_DECLS,
        parser="""state start {
            pk.extract(hdr.base);
            pk.extract(hdr.u.next.one);
            pk.extract(hdr.u.next.one);
            pk.extract(hdr.u.next.one);
            transition accept;
        }""",
        ingress="""apply {
            if (sm.parser_error == error.StackOutOfBounds) { hdr.base.t = 0xFF; }
            sm.egress_spec = 1;
        }""",
    )
    assert pl.process(0, bytes([0, 1, 2, 3])) == [(1, bytes([0xFF, 1, 2, 3]))]
