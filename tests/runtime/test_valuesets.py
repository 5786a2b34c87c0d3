"""Parser value sets: membership, P4Runtime's replace-all rules."""

from __future__ import annotations

from softswitch.runtime.matches import Exact, KeySpec, Lpm, Range, Ternary
from softswitch.runtime.valuesets import ValueSet
from tests.support.runtime_errors import code_of


def test_exact_members() -> None:
    vs = ValueSet("MyParser.trill_types", (KeySpec("", 16, "exact"),), 4)
    assert not vs.contains((0x22F3,))
    vs.set_members([(Exact(0x22F3),), (Exact(0x893B),)])
    assert vs.contains((0x22F3,)) and vs.contains((0x893B,)) and not vs.contains((0x0800,))
    vs.set_members([])
    assert not vs.contains((0x22F3,))


def test_ternary_range_and_lpm_members() -> None:
    keys = (KeySpec("a", 8, "ternary"), KeySpec("b", 16, "range"), KeySpec("c", 8, "lpm"))
    vs = ValueSet("vs", keys, 4)
    vs.set_members([(Ternary(0x10, 0xF0), Range(100, 200), None), (None, None, Lpm(0x80, 1))])
    assert vs.contains((0x1F, 150, 0))
    assert not vs.contains((0x2F, 150, 0))
    assert not vs.contains((0x1F, 201, 0))
    assert vs.contains((0x00, 0, 0xFF))
    assert vs.members[1] == (None, None, Lpm(0x80, 1))


def test_errors_leave_the_set_unchanged() -> None:
    vs = ValueSet("vs", (KeySpec("", 8, "exact"),), 2)
    vs.set_members([(Exact(1),)])
    assert code_of(vs.set_members, [(Exact(1),), (Exact(2),), (Exact(3),)]) == "RESOURCE_EXHAUSTED"
    assert code_of(vs.set_members, [(Exact(2),), (Exact(2),)]) == "ALREADY_EXISTS"
    assert code_of(vs.set_members, [(Exact(256),)]) == "OUT_OF_RANGE"
    assert code_of(vs.set_members, [(Exact(1), Exact(2))]) == "INVALID_ARGUMENT"
    assert vs.contains((1,)) and vs.members == ((Exact(1),),)
