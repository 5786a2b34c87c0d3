"""Expression semantics: width, signedness, saturation, shifts, casts, slices.

Each case runs a one-line computation through the whole pipeline: the header
``h`` carries the operands in and the result out, so both constant folding
(:mod:`constfold`) and the generated code are checked against the same table.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from softswitch.frontend import constfold
from softswitch.frontend.types import INFINT, Bits
from softswitch.interp.pipeline import Pipeline

DECLS8 = """
header h_t { bit<8> a; bit<8> b; bit<8> r; }
struct headers { h_t h; }
struct meta { }
"""

DECLS_S8 = """
header h_t { int<8> a; int<8> b; int<8> r; }
struct headers { h_t h; }
struct meta { }
"""


def run(pl: Pipeline, a: int, b: int) -> int:
    out = pl.process(0, bytes([a, b, 0]))
    assert len(out) == 1
    return out[0][1][2]


CASES_U8 = [
    ("hdr.h.a + hdr.h.b", 200, 100, 44),
    ("hdr.h.a - hdr.h.b", 1, 2, 255),
    ("hdr.h.a * hdr.h.b", 16, 17, 16),
    ("hdr.h.a |+| hdr.h.b", 200, 100, 255),
    ("hdr.h.a |-| hdr.h.b", 1, 2, 0),
    ("hdr.h.a << hdr.h.b", 0x81, 1, 0x02),
    ("hdr.h.a << hdr.h.b", 0x81, 8, 0),
    ("hdr.h.a >> hdr.h.b", 0x81, 7, 1),
    ("hdr.h.a / hdr.h.b", 200, 7, 28),
    ("hdr.h.a % hdr.h.b", 200, 7, 4),
    ("~hdr.h.a", 0x0F, 0, 0xF0),
    ("-hdr.h.a", 1, 0, 0xFF),
    ("hdr.h.a & hdr.h.b", 0xF0, 0x3C, 0x30),
    ("hdr.h.a ^ hdr.h.b", 0xF0, 0x3C, 0xCC),
    ("hdr.h.a[3:0] ++ hdr.h.b[7:4]", 0xAB, 0xCD, 0xBC),
    ("(bit<8>)(hdr.h.a[7:4])", 0xAB, 0, 0x0A),
    ("hdr.h.a + 255", 3, 0, 2),
    ("(bit<8>)((bit<4>)hdr.h.a)", 0xAB, 0, 0x0B),
    ("(hdr.h.a > hdr.h.b) ? hdr.h.a : hdr.h.b", 3, 9, 9),
    ("(bit<8>)(bit<1>)(hdr.h.a == hdr.h.b)", 5, 5, 1),
]


def result_of(pipeline: Callable[..., Pipeline], decls: str, expr: str, a: int, b: int) -> int:
    """``hdr.h.r = expr`` run on a packet of ``a``, ``b``: the result."""
    pl = pipeline(decls=decls, ingress=f"apply {{ hdr.h.r = {expr}; sm.egress_spec = 1; }}")
    return run(pl, a, b)


@pytest.mark.parametrize(("expr", "a", "b", "want"), CASES_U8)
def test_unsigned_bit8(
    pipeline: Callable[..., Pipeline], expr: str, a: int, b: int, want: int
) -> None:
    assert result_of(pipeline, DECLS8, expr, a, b) == want


CASES_S8 = [
    ("hdr.h.a |+| hdr.h.b", 100, 100, 127),
    ("hdr.h.a |+| hdr.h.b", 0x9C, 0x9C, 0x80),  # -100 |+| -100 = -128
    ("hdr.h.a |-| hdr.h.b", 0x9C, 100, 0x80),
    ("hdr.h.a >> 2", 0xF0, 0, 0xFC),  # arithmetic shift of -16
    ("(int<8>)(bit<8>)(hdr.h.a < hdr.h.b ? 8w1 : 8w0)", 0xFF, 1, 1),  # -1 < 1
    ("(int<8>)((int<4>)hdr.h.a)", 0x0F, 0, 0xFF),  # int<4> -1 sign-extends
    ("-hdr.h.a", 0x80, 0, 0x80),
]


@pytest.mark.parametrize(("expr", "a", "b", "want"), CASES_S8)
def test_signed_int8(
    pipeline: Callable[..., Pipeline], expr: str, a: int, b: int, want: int
) -> None:
    assert result_of(pipeline, DECLS_S8, expr, a, b) == want


def test_signed_concat_and_widening_cast(pipeline: Callable[..., Pipeline]) -> None:
    decls = """
    header h_t { int<8> s; bit<8> u; bit<16> r1; bit<16> r2; }
    struct headers { h_t h; }
    struct meta { }
    """
    ingress = """apply {
        int<16> a = hdr.h.s ++ hdr.h.u;
        hdr.h.r1 = (bit<16>)a;
        hdr.h.r2 = (bit<16>)(int<16>)hdr.h.s;
        sm.egress_spec = 1;
    }"""
    pl = pipeline(decls=decls, ingress=ingress)
    out = pl.process(0, bytes([0xF0, 0x81, 0, 0, 0, 0]))
    assert out == [(1, bytes([0xF0, 0x81, 0xF0, 0x81, 0xFF, 0xF0]))]


def test_slice_assignment(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS8,
        ingress="apply { hdr.h.r = hdr.h.a; hdr.h.r[3:0] = hdr.h.b[3:0]; sm.egress_spec = 1; }",
    )
    assert run(pl, 0xAB, 0xCD) == 0xAD


def test_constant_folding_matches_runtime() -> None:
    t = Bits(8)
    assert constfold.arith("+", 200, 100, t) == 44
    assert constfold.arith("|+|", 200, 100, t) == 255
    assert constfold.arith("<<", 1, 9, t) == 0
    s = Bits(8, signed=True)
    assert constfold.arith(">>", 0xF0, 2, s) == 0xFC
    assert constfold.arith("|-|", 0x9C, 100, s) == 0x80
    assert constfold.compare("<", 0xFF, 1, s) is True
    assert constfold.cast(0x0F, Bits(4, True), Bits(8)) == 0xFF
    assert constfold.cast(-1, INFINT, Bits(8)) == 0xFF
    with pytest.raises(constfold.FoldError):
        constfold.arith("/", 1, 0, INFINT)


def test_int_literal_takes_width_from_context(pipeline: Callable[..., Pipeline]) -> None:
    ingress = """apply {
        const bit<8> K = 3 * 100;
        hdr.h.r = K + (hdr.h.a - 2);
        sm.egress_spec = 1;
    }"""
    pl = pipeline(decls=DECLS8, ingress=ingress)
    assert run(pl, 1, 0) == (300 + 1 - 2) & 0xFF
