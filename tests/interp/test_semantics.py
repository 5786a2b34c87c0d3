"""Evaluation order, exit and run-time errors, checked against P4_16 / BMv2 semantics.

* ``&&``, ``||`` and ``?:`` evaluate their right operand (or the branch not
  chosen) only when needed, also when it calls something with side effects;
* operands are evaluated left to right: a call with ``inout`` arguments in a
  later operand does not change the value an earlier operand already read;
* ``exit`` still copies scalar ``out``/``inout`` arguments back (spec 12.5 and
  p4-spec PR 823), from actions, tables and nested controls;
* a run-time header stack index out of range in a control behaves as
  p4c-bm2-ss compiles it (the statement runs for in-range indices only); in a
  parser it drops that packet (BMv2 would abort) and the next one is fine.
"""

from __future__ import annotations

from collections.abc import Callable

from softswitch.interp.pipeline import Pipeline

DECLS = """
header h_t { bit<8> a; bit<8> b; bit<8> r; }
header s_t { bit<8> v; }
struct headers { h_t h; s_t[2] hs; }
struct meta { }
bool bump(inout bit<8> c) { c = c + 1; return true; }
bit<8> add10(inout bit<8> c) { c = c + 10; return 1; }
"""


def run(pl: Pipeline, a: int, b: int, r: int = 0) -> tuple[int, int, int] | None:
    out = pl.process(0, bytes([a, b, r]))
    if not out:
        return None
    data = out[0][1]
    return data[0], data[1], data[2]


def test_and_skips_a_call_with_side_effects(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            if (hdr.h.a == 0 && bump(hdr.h.b)) { hdr.h.r = 1; }
            sm.egress_spec = 1;
        }""",
    )
    assert run(pl, 1, 5) == (1, 5, 0)  # bump not called
    assert run(pl, 0, 5) == (0, 6, 1)


def test_or_skips_a_call_with_side_effects(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            bool t = hdr.h.a == 0 || bump(hdr.h.b);
            if (t) { hdr.h.r = 1; }
            sm.egress_spec = 1;
        }""",
    )
    assert run(pl, 0, 5) == (0, 5, 1)  # bump not called
    assert run(pl, 1, 5) == (1, 6, 1)


def test_conditional_evaluates_only_the_chosen_branch(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.h.r = hdr.h.a == 0 ? add10(hdr.h.b) : 8w7;
            sm.egress_spec = 1;
        }""",
    )
    assert run(pl, 0, 5) == (0, 15, 1)
    assert run(pl, 1, 5) == (1, 5, 7)


def test_operands_are_evaluated_left_to_right(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.h.r = hdr.h.b + add10(hdr.h.b);
            sm.egress_spec = 1;
        }""",
    )
    # the left operand is read before add10 changes b: 5 + 1, b becomes 15
    assert run(pl, 0, 5) == (0, 15, 6)


def test_exit_in_an_action_copies_inout_back(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action set_and_exit(inout bit<8> v, out bit<8> w) { v = 42; w = 9; exit; }
        apply {
            sm.egress_spec = 1;
            set_and_exit(hdr.h.b, hdr.h.r);
            hdr.h.b = 1;
        }""",
    )
    assert run(pl, 0, 5) == (0, 42, 9)


def test_exit_in_a_table_action_copies_bound_arguments_back(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""
        action set_and_exit(inout bit<8> v, bit<8> x) { v = x; exit; }
        table t {
            key = { hdr.h.a: exact; }
            actions = { set_and_exit(hdr.h.b); }
            default_action = set_and_exit(hdr.h.b, 33);
        }
        apply {
            sm.egress_spec = 1;
            t.apply();
            hdr.h.b = 1;
        }""",
    )
    assert run(pl, 0, 5) == (0, 33, 0)


def test_exit_in_a_nested_control_copies_its_parameters_back(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS
        + """
        control Sub(inout bit<8> v) {
            action a(inout bit<8> x) { x = x + 1; exit; }
            apply { v = 9; a(v); v = 100; }
        }""",
        ingress="""
        Sub() sub;
        apply {
            sm.egress_spec = 1;
            sub.apply(hdr.h.b);
            hdr.h.b = 3;
        }""",
    )
    assert run(pl, 0, 5) == (0, 10, 0)


def test_stack_write_out_of_range_does_nothing(pipeline: Callable[..., Pipeline]) -> None:
    # p4c-bm2-ss runs one copy of the statement per in-range index (HSIndexSimplifier)
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.hs[hdr.h.a].setValid();
            hdr.hs[hdr.h.a].v = 0xAB;
            sm.egress_spec = 1;
        }""",
    )
    assert pl.process(0, bytes([5, 0, 0])) == [(1, bytes([5, 0, 0]))]
    assert pl.process(0, bytes([1, 0, 0])) == [(1, bytes([1, 0, 0, 0xAB]))]


def test_stack_read_out_of_range_gives_the_whole_right_side_an_undefined_zero(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.hs[0].setValid();
            hdr.hs[0].v = 7;
            hdr.h.r = hdr.hs[hdr.h.a].v + 1;
            if (hdr.hs[hdr.h.a].v == 7) { hdr.h.b = 1; } else { hdr.h.b = 2; }
            hdr.hs[0].setInvalid();
            sm.egress_spec = 1;
        }""",
    )
    assert run(pl, 0, 0) == (0, 1, 8)
    assert run(pl, 9, 0) == (9, 2, 0)


def test_a_target_index_is_evaluated_before_the_value(pipeline: Callable[..., Pipeline]) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            hdr.hs[0].setValid();
            hdr.hs[1].setValid();
            hdr.hs[hdr.h.a].v = add10(hdr.h.a);
            sm.egress_spec = 1;
        }""",
    )
    # the target is hs[1]; add10 then changes a to 11 and returns 1
    assert pl.process(0, bytes([1, 0, 0])) == [(1, bytes([11, 0, 0, 0, 1]))]


def test_stack_index_out_of_range_in_a_parser_drops_only_that_packet(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        parser="""state start {
            pk.extract(hdr.h);
            hdr.hs[hdr.h.a].setValid();
            transition accept;
        }""",
        ingress="apply { sm.egress_spec = 1; }",
    )
    assert run(pl, 5, 0) is None
    assert pl.process(0, bytes([1, 0, 0])) == [(1, bytes([1, 0, 0, 0]))]


def test_stack_last_of_an_empty_stack_in_a_control_drops_the_packet(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        ingress="""apply {
            sm.egress_spec = 1;
            hdr.h.r = hdr.hs.last.v;
        }""",
    )
    assert run(pl, 0, 0) is None


def test_advance_by_a_part_of_a_byte_is_parser_invalid_argument(
    pipeline: Callable[..., Pipeline],
) -> None:
    pl = pipeline(
        decls=DECLS,
        parser="""state start {
            pk.extract(hdr.h); pk.advance((bit<32>)hdr.h.a); transition accept;
        }""",
        ingress="""apply {
            if (sm.parser_error == error.ParserInvalidArgument) { hdr.h.r = 6; }
            if (sm.parser_error == error.PacketTooShort) { hdr.h.r = 1; }
            sm.egress_spec = 1;
        }""",
        deparser="pk.emit(hdr.h);",
    )
    assert pl.process(0, bytes([4, 0, 0, 0xFF])) == [(1, bytes([4, 0, 6, 0xFF]))]
    assert pl.process(0, bytes([16, 0, 0, 0xFF])) == [(1, bytes([16, 0, 1, 0xFF]))]
    assert pl.process(0, bytes([8, 0, 0, 0xFF])) == [(1, bytes([8, 0, 0]))]
