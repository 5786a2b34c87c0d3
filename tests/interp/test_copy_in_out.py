"""Copy-in/copy-out of arguments, compound assignments and ``_`` arguments.

P4_16 passes ``out``/``inout`` arguments by copy: the callee works on its own
copies and they are written back, left to right, when it returns.  BMv2 (as
p4c compiles for it) shows it wherever the callee can reach the same storage
under another name:

* an action that writes a control's header directly, while the header is also
  its ``inout`` argument (given at the call, or bound in a table's action
  list): the copy-out overwrites that write;
* a slice as an ``inout`` argument: it is written back into the field as the
  field is *after* the call, so a write the action made to the other bits of
  that field stays;
* two arguments living in the same variable.

``lhs op= rhs`` evaluates ``lhs`` once, so a call in one of its indices runs
once.  ``_`` may stand for any ``out`` argument, of an extern too
(``extract<H>(_)`` skips a header).  And whatever the generator fails to
write is an error located at the statement, not a Python traceback.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from softswitch.errors import Loc, P4SourceError
from softswitch.frontend import ir
from softswitch.frontend.types import BOOL
from softswitch.interp.codegen import Codegen
from softswitch.interp.pipeline import Pipeline

DECLS = """
header h_t { bit<8> a; bit<8> b; bit<8> r; }
header w_t { bit<8> x; }
struct pair_t { h_t h; bit<8> n; }
struct headers { h_t h; w_t[4] w; }
struct meta { }
bit<8> postincr(inout bit<8> x) { bit<8> old = x; x = x + 1; return old; }
"""

WORDS = """state start {
    pk.extract(hdr.h);
    pk.extract(hdr.w.next);
    pk.extract(hdr.w.next);
    pk.extract(hdr.w.next);
    pk.extract(hdr.w.next);
    transition accept;
}"""


def out(pl: Pipeline, data: bytes) -> bytes | None:
    sent = pl.process(0, data)
    return sent[0][1] if sent else None


def test_an_inout_header_is_copied_back_over_the_actions_direct_write(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action touch(inout h_t v) { hdr.h.b = 2; v.r = 7; }
        apply { touch(hdr.h); sm.egress_spec = 1; }""",
    )
    # the write to hdr.h.b is lost when v (b still 0) is copied back; v.r stays
    assert out(pl, bytes([1, 0, 0])) == bytes([1, 0, 7])


def test_a_copied_header_is_also_written_back_when_the_action_exits(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action touch(inout h_t v) { v.r = 9; hdr.h.b = 2; exit; }
        apply { sm.egress_spec = 1; touch(hdr.h); hdr.h.a = 5; }""",
    )
    assert out(pl, bytes([1, 0, 0])) == bytes([1, 0, 9])


def test_a_table_action_bound_to_a_header_it_also_writes_directly(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action touch(inout h_t v, bit<8> x) { hdr.h.b = 2; v.r = x; }
        action touch_exit(inout h_t v) { hdr.h.b = 3; v.r = 8; exit; }
        table t {
            key = { hdr.h.a: exact; }
            actions = { touch(hdr.h); touch_exit(hdr.h); }
            const entries = { 2 : touch_exit(); }
            default_action = touch(hdr.h, 7);
        }
        apply { sm.egress_spec = 1; t.apply(); hdr.h.a = 9; }""",
    )
    assert out(pl, bytes([1, 0, 0])) == bytes([9, 0, 7])
    assert out(pl, bytes([2, 0, 0])) == bytes([2, 0, 8])


def test_an_action_that_does_not_reach_its_argument_writes_it_in_place(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action touch(inout w_t v) { v.x = v.x + 1; hdr.h.b = 2; }
        apply { touch(hdr.w[1]); sm.egress_spec = 1; }""",
        parser=WORDS,
    )
    assert out(pl, bytes([1, 0, 0, 10, 20, 30, 40])) == bytes([1, 2, 0, 10, 21, 30, 40])


def test_arguments_in_one_variable_are_copied_back_left_to_right(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS
        + """
        void both(inout pair_t p, inout h_t h, inout bit<8> n) {
            h.a = 3; p.h.b = 4; p.n = 1; n = 2;
        }""",
        ingress="""
        apply {
            pair_t s;
            s.h = hdr.h;
            s.n = 0;
            both(s, s.h, s.n);
            hdr.h = s.h;
            hdr.h.r = s.n;
            sm.egress_spec = 1;
        }""",
    )
    # p goes back first (a unchanged, b = 4), then h (a = 3, b back to 0), then n = 2
    assert out(pl, bytes([1, 0, 0])) == bytes([3, 0, 2])


def test_a_slice_argument_is_written_into_the_field_as_the_call_left_it(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action low_bit(inout bit<1> v) { hdr.h.a = 2; v = 1; }
        apply { low_bit(hdr.h.a[0:0]); sm.egress_spec = 1; }""",
    )
    assert out(pl, bytes([0, 0, 0])) == bytes([3, 0, 0])


def test_a_compound_assignment_evaluates_a_call_in_its_index_once(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.w[postincr(hdr.h.a) & 3].x |= hdr.h.b;
            hdr.w[postincr(hdr.h.a) & 3].x += hdr.h.r;
            sm.egress_spec = 1;
        }""",
        parser=WORDS,
    )
    data = bytes([1, 0x0F, 5, 0x10, 0x20, 0x30, 0x40])
    # a goes 1 -> 3; w[1] |= 0x0F, w[2] += 5
    assert out(pl, data) == bytes([3, 0x0F, 5, 0x10, 0x2F, 0x35, 0x40])


def test_a_compound_assignment_to_a_slice_with_a_call_in_the_index(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.w[postincr(hdr.h.a) & 3].x[7:4] += 1;
            sm.egress_spec = 1;
        }""",
        parser=WORDS,
    )
    assert out(pl, bytes([0, 0, 0, 0x11, 0x22, 0x33, 0x44])) == bytes(
        [1, 0, 0, 0x21, 0x22, 0x33, 0x44]
    )


def test_dont_care_out_arguments_of_externs(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS + "header skip_t { bit<16> s; }",
        parser="""state start {
            pk.extract<skip_t>(_);
            pk.extract(hdr.h);
            transition accept;
        }""",
        ingress="""
        register<bit<8>>(4) regs;
        apply {
            regs.read(_, 1);
            hash(_, HashAlgorithm.crc16, 16w0, { hdr.h.a }, 16w100);
            random(_, 8w0, 8w3);
            hdr.h.r = 7;
            sm.egress_spec = 1;
        }""",
    )
    # the first two bytes are skipped, and not emitted
    assert out(pl, bytes([0xAA, 0xBB, 1, 2, 3, 4])) == bytes([1, 2, 7, 4])


def test_a_statement_the_generator_cannot_write_is_a_located_error(
    compile_p4: Callable[..., ir.Program],
) -> None:
    # IR that the checker never produces (the complement of a bool) stands for
    # any construct that slips past the generator's own checks
    program = compile_p4(decls=DECLS)
    where = Loc("prog.p4", 12, 5)
    flag = ir.Var(BOOL, where, "flag")
    odd = ir.Assign(where, flag, ir.UnOp(BOOL, where, "~", flag))
    with pytest.raises(P4SourceError, match=r"^prog\.p4:12:5: error: internal error: .*statement"):
        Codegen(program).stmt(odd)
