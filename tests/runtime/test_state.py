"""RuntimeState: names resolved exactly or by unique suffix, with helpful errors."""

from __future__ import annotations

import pytest

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import ActionCall, ActionSpec
from softswitch.runtime.externs import Counter, CounterData, CounterUnit, Register
from softswitch.runtime.profiles import ActionSelector
from softswitch.runtime.state import RuntimeState
from softswitch.runtime.tables import Exact, KeySpec, Table, TableEntry, TableSpec
from softswitch.runtime.valuesets import ValueSet


def table(name: str, idle: bool = False) -> Table:
    spec = TableSpec(
        name,
        (KeySpec("k", 8, "exact"),),
        (ActionSpec("a"), ActionSpec("NoAction")),
        supports_idle_timeout=idle,
    )
    return Table(spec)


@pytest.fixture
def state() -> RuntimeState:
    s = RuntimeState()
    s.add_table(table("MyIngress.ipv4_lpm"))
    s.add_table(table("MyIngress.acl"))
    s.add_table(table("MyEgress.acl"))
    s.add_counter(Counter("MyIngress.hits", 4, CounterUnit.PACKETS))
    s.add_register(Register("MyIngress.r", 4, 8))
    return s


def test_exact_and_suffix(state: RuntimeState) -> None:
    assert state.table("MyIngress.ipv4_lpm").name == "MyIngress.ipv4_lpm"
    assert state.table("ipv4_lpm").name == "MyIngress.ipv4_lpm"
    assert state.lookup("counter", "hits") is state.counter("MyIngress.hits")
    assert state.register("r").size == 4


def test_not_found_suggests(state: RuntimeState) -> None:
    with pytest.raises(RuntimeConfigError) as info:
        state.table("ipv4")
    assert info.value.code == "NOT_FOUND"
    assert str(info.value) == "no table named 'ipv4'; did you mean 'MyIngress.ipv4_lpm'?"
    with pytest.raises(RuntimeConfigError) as info:
        state.meter("zzz")
    assert str(info.value) == "no meter named 'zzz'"


def test_ambiguous_suffix_lists_candidates(state: RuntimeState) -> None:
    with pytest.raises(RuntimeConfigError) as info:
        state.table("acl")
    assert info.value.code == "INVALID_ARGUMENT"
    assert "'MyEgress.acl', 'MyIngress.acl'" in str(info.value)


def test_duplicates_and_unknown_kinds(state: RuntimeState) -> None:
    with pytest.raises(RuntimeConfigError) as info:
        state.add_table(table("MyIngress.acl"))
    assert info.value.code == "ALREADY_EXISTS"
    with pytest.raises(RuntimeConfigError):
        state.lookup("gizmo", "x")


def test_clock_reaches_idle_tables_and_reset_clears() -> None:
    s = RuntimeState()
    t = s.add_table(table("t", idle=True))
    s.set_time(100)
    t.insert(TableEntry((Exact(1),), action=ActionCall("a"), idle_timeout_ns=50))
    s.set_time(120)
    assert t.lookup((1,)).entry is not None
    assert s.expired_entries(160) == []
    [(tbl, [e])] = s.expired_entries(170)
    assert tbl is t and e.last_hit_ns == 120
    c = s.add_counter(Counter("c", 1, CounterUnit.PACKETS))
    c.count(0, 10)
    sel = s.add_action_profile(ActionSelector("sel", actions=(ActionSpec("a"),)))
    assert isinstance(sel, ActionSelector)
    sel.insert_member(1, ActionCall("a"))
    sel.insert_group(1, {1: 1})
    vs = s.add_value_set(ValueSet("vs", (KeySpec("", 8, "exact"),), 1))
    vs.set_members([(Exact(1),)])
    assert s.value_set("vs") is vs
    s.reset()
    assert len(t) == 0 and c.read(0) == CounterData()
    assert sel.members() == [] and sel.groups() == [] and vs.members == ()
