"""Tables: validation with P4Runtime status codes, CRUD, default action, lookup rules."""

from __future__ import annotations

from typing import Any

import pytest

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import ActionCall, ActionScope, ActionSpec
from softswitch.runtime.externs import (
    CounterData,
    CounterUnit,
    DirectCounter,
    DirectMeter,
    MeterConfig,
    MeterType,
)
from softswitch.runtime.tables import (
    Exact,
    KeySpec,
    Lpm,
    Optional,
    Range,
    Table,
    TableEntry,
    TableSpec,
    Ternary,
    initial_entry_priorities,
)
from tests.support.runtime_errors import code_of

FWD = ActionSpec("MyIngress.fwd", (("port", 9),))
DROP = ActionSpec("MyIngress.drop")
NOACTION = ActionSpec("NoAction", scope=ActionScope.DEFAULT_ONLY)
TABLE_ONLY = ActionSpec("MyIngress.only_in_entries", scope=ActionScope.TABLE_ONLY)


def fwd(port: int) -> ActionCall:
    return ActionCall("MyIngress.fwd", (port,))


def make(keys: tuple[KeySpec, ...], **kw: Any) -> Table:
    spec = TableSpec(
        "MyIngress.t",
        keys,
        (FWD, DROP, NOACTION, TABLE_ONLY),
        ActionCall("NoAction"),
        **kw,
    )
    return Table(spec)


EXACT = (KeySpec("hdr.ethernet.dstAddr", 48, "exact"), KeySpec("meta.vrf", 4, "exact"))
LPM = (KeySpec("hdr.ipv4.dstAddr", 32, "lpm"),)
TERN = (KeySpec("hdr.ipv4.srcAddr", 32, "ternary"), KeySpec("hdr.ipv4.protocol", 8, "exact"))


class TestExact:
    def test_hit_and_miss(self) -> None:
        t = make(EXACT)
        e = t.insert(TableEntry((Exact(0xAABBCCDDEEFF), Exact(3)), action=fwd(7)))
        hit = t.lookup((0xAABBCCDDEEFF, 3))
        assert hit.hit and hit.action_call == fwd(7) and hit.entry is e
        miss = t.lookup((0xAABBCCDDEEFF, 4))
        assert not miss.hit and miss.action_call == ActionCall("NoAction") and miss.entry is None

    def test_duplicate_is_already_exists_and_keeps_first(self) -> None:
        t = make(EXACT)
        t.insert(TableEntry((Exact(1), Exact(1)), action=fwd(1)))
        assert (
            code_of(t.insert, TableEntry((Exact(1), Exact(1)), action=fwd(2))) == "ALREADY_EXISTS"
        )
        assert t.lookup((1, 1)).action_call == fwd(1)
        assert len(t) == 1

    def test_exact_wildcard_is_invalid(self) -> None:
        t = make(EXACT)
        assert code_of(t.insert, TableEntry((None, Exact(1)), action=fwd(1))) == "INVALID_ARGUMENT"

    def test_value_too_wide_is_out_of_range(self) -> None:
        t = make(EXACT)
        assert (
            code_of(t.insert, TableEntry((Exact(1 << 48), Exact(0)), action=fwd(1)))
            == "OUT_OF_RANGE"
        )
        assert code_of(t.insert, TableEntry((Exact(0), Exact(16)), action=fwd(1))) == "OUT_OF_RANGE"
        assert len(t) == 0

    def test_wrong_match_count_or_kind(self) -> None:
        t = make(EXACT)
        assert code_of(t.insert, TableEntry((Exact(1),), action=fwd(1))) == "INVALID_ARGUMENT"
        assert (
            code_of(t.insert, TableEntry((Ternary(1, 1), Exact(1)), action=fwd(1)))
            == "INVALID_ARGUMENT"
        )

    def test_priority_must_be_zero(self) -> None:
        t = make(EXACT)
        assert (
            code_of(t.insert, TableEntry((Exact(1), Exact(1)), 5, action=fwd(1)))
            == "INVALID_ARGUMENT"
        )

    def test_full_table_is_resource_exhausted(self) -> None:
        t = make(EXACT, size=2)
        t.insert(TableEntry((Exact(1), Exact(0)), action=fwd(1)))
        t.insert(TableEntry((Exact(2), Exact(0)), action=fwd(1)))
        assert (
            code_of(t.insert, TableEntry((Exact(3), Exact(0)), action=fwd(1)))
            == "RESOURCE_EXHAUSTED"
        )
        t.delete(TableEntry((Exact(1), Exact(0))))
        t.insert(TableEntry((Exact(3), Exact(0)), action=fwd(1)))
        assert t.lookup((3, 0)).hit and not t.lookup((1, 0)).hit

    def test_actions_checked(self) -> None:
        t = make(EXACT)
        k = (Exact(1), Exact(1))
        assert (
            code_of(t.insert, TableEntry(k, action=ActionCall("MyIngress.nope")))
            == "INVALID_ARGUMENT"
        )
        assert (
            code_of(t.insert, TableEntry(k, action=ActionCall("MyIngress.fwd")))
            == "INVALID_ARGUMENT"
        )
        assert code_of(t.insert, TableEntry(k, action=fwd(512))) == "OUT_OF_RANGE"
        assert (
            code_of(t.insert, TableEntry(k, action=ActionCall("NoAction"))) == "PERMISSION_DENIED"
        )
        assert code_of(t.insert, TableEntry(k)) == "INVALID_ARGUMENT"
        assert code_of(t.insert, TableEntry(k, member_id=1)) == "INVALID_ARGUMENT"
        t.insert(TableEntry(k, action=ActionCall("MyIngress.only_in_entries")))
        assert len(t) == 1

    def test_modify_and_delete(self) -> None:
        t = make(EXACT)
        t.insert(TableEntry((Exact(1), Exact(1)), action=fwd(1), metadata=b"a"))
        live = t.modify(TableEntry((Exact(1), Exact(1)), action=fwd(9), metadata=b"b"))
        assert t.lookup((1, 1)).action_call == fwd(9) and live.metadata == b"b"
        # a modify without action keeps the action
        t.modify(TableEntry((Exact(1), Exact(1)), metadata=b"c"))
        assert t.lookup((1, 1)).action_call == fwd(9)
        assert code_of(t.modify, TableEntry((Exact(2), Exact(1)), action=fwd(1))) == "NOT_FOUND"
        assert (
            code_of(t.modify, TableEntry((Exact(1), Exact(1)), action=fwd(999))) == "OUT_OF_RANGE"
        )
        assert t.lookup((1, 1)).action_call == fwd(9)
        t.delete(TableEntry((Exact(1), Exact(1))))
        assert not t.lookup((1, 1)).hit
        assert code_of(t.delete, TableEntry((Exact(1), Exact(1)))) == "NOT_FOUND"

    def test_insert_copies_the_entry(self) -> None:
        t = make(EXACT)
        mine = TableEntry((Exact(1), Exact(1)), action=fwd(1))
        live = t.insert(mine)
        assert live is not mine and t.get((Exact(1), Exact(1))) is live

    def test_read_filters(self) -> None:
        t = make(EXACT)
        t.insert(TableEntry((Exact(1), Exact(1)), action=fwd(1), metadata=b"x"))
        t.insert(TableEntry((Exact(2), Exact(1)), action=ActionCall("MyIngress.drop")))
        assert len(t.read()) == 2
        assert [e.matches[0] for e in t.read(action="MyIngress.drop")] == [Exact(2)]
        assert [e.matches[0] for e in t.read(metadata=b"x")] == [Exact(1)]
        assert t.read((Exact(2), Exact(1)))[0].action == ActionCall("MyIngress.drop")
        assert code_of(t.read, (Exact(3), Exact(1))) == "NOT_FOUND"


class TestDefault:
    def test_set_and_reset(self) -> None:
        t = make(EXACT)
        t.set_default(ActionCall("MyIngress.drop"))
        assert t.lookup((0, 0)).action_call == ActionCall("MyIngress.drop")
        assert t.default_entry.action == ActionCall("MyIngress.drop")
        t.reset_default()
        assert t.lookup((0, 0)).action_call == ActionCall("NoAction")

    def test_scope_and_const(self) -> None:
        t = make(EXACT)
        assert (
            code_of(t.set_default, ActionCall("MyIngress.only_in_entries")) == "PERMISSION_DENIED"
        )
        assert code_of(t.set_default, ActionCall("MyIngress.fwd", (1, 2))) == "INVALID_ARGUMENT"
        const = make(EXACT, default_is_const=True)
        assert code_of(const.set_default, ActionCall("MyIngress.drop")) == "PERMISSION_DENIED"
        assert code_of(const.reset_default) == "PERMISSION_DENIED"
        assert const.default_action == ActionCall("NoAction")

    def test_keyless_table_takes_no_entries(self) -> None:
        t = make(())
        assert code_of(t.insert, TableEntry((), action=fwd(1))) == "INVALID_ARGUMENT"
        t.set_default(fwd(3))
        assert t.lookup(()).action_call == fwd(3) and not t.lookup(()).hit

    def test_bad_program_default_is_rejected(self) -> None:
        spec = TableSpec("t", EXACT, (FWD,), ActionCall("MyIngress.drop"))
        assert code_of(Table, spec) == "INVALID_ARGUMENT"


class TestLpm:
    def test_longest_prefix_wins(self) -> None:
        t = make(LPM)
        t.insert(TableEntry((Lpm(0x0A000000, 8),), action=fwd(1)))
        t.insert(TableEntry((Lpm(0x0A010000, 16),), action=fwd(2)))
        t.insert(TableEntry((Lpm(0x0A010203, 32),), action=fwd(3)))
        t.insert(TableEntry((None,), action=fwd(4)))  # 0.0.0.0/0
        assert t.lookup((0x0A010203,)).action_call == fwd(3)
        assert t.lookup((0x0A010204,)).action_call == fwd(2)
        assert t.lookup((0x0A020000,)).action_call == fwd(1)
        assert t.lookup((0x0B000000,)).action_call == fwd(4)
        t.delete(TableEntry((Lpm(0x0A010000, 16),)))
        assert t.lookup((0x0A010204,)).action_call == fwd(1)

    def test_prefix_zero_is_the_wildcard(self) -> None:
        t = make(LPM)
        e = t.insert(TableEntry((Lpm(0, 0),), action=fwd(4)))
        assert e.matches == (None,)
        assert code_of(t.insert, TableEntry((None,), action=fwd(4))) == "ALREADY_EXISTS"

    def test_bits_past_prefix_are_invalid(self) -> None:
        t = make(LPM)
        assert (
            code_of(t.insert, TableEntry((Lpm(0x0A000001, 8),), action=fwd(1)))
            == "INVALID_ARGUMENT"
        )
        assert code_of(t.insert, TableEntry((Lpm(0, 33),), action=fwd(1))) == "INVALID_ARGUMENT"
        assert code_of(t.insert, TableEntry((Lpm(1 << 32, 32),), action=fwd(1))) == "OUT_OF_RANGE"

    def test_lpm_with_exact_keys(self) -> None:
        t = make((KeySpec("meta.vrf", 8, "exact"), *LPM))
        t.insert(TableEntry((Exact(1), Lpm(0x0A000000, 8)), action=fwd(1)))
        t.insert(TableEntry((Exact(2), Lpm(0x0A000000, 16)), action=fwd(2)))
        assert t.lookup((1, 0x0A000001)).action_call == fwd(1)
        assert t.lookup((2, 0x0A000001)).action_call == fwd(2)
        assert not t.lookup((2, 0x0A010001)).hit

    def test_two_lpm_keys_without_ternary_are_unimplemented(self) -> None:
        assert code_of(make, (*LPM, KeySpec("x", 8, "lpm"))) == "UNIMPLEMENTED"


class TestTernary:
    def test_priority_required_and_positive(self) -> None:
        t = make(TERN)
        k = (Ternary(0x0A000000, 0xFF000000), Exact(6))
        assert code_of(t.insert, TableEntry(k, 0, action=fwd(1))) == "INVALID_ARGUMENT"
        assert code_of(t.insert, TableEntry(k, -1, action=fwd(1))) == "INVALID_ARGUMENT"

    def test_value_outside_mask_is_invalid(self) -> None:
        t = make(TERN)
        bad = (Ternary(0x0A000001, 0xFF000000), Exact(6))
        assert code_of(t.insert, TableEntry(bad, 1, action=fwd(1))) == "INVALID_ARGUMENT"

    def test_highest_priority_wins(self) -> None:
        t = make(TERN)
        t.insert(TableEntry((Ternary(0x0A000000, 0xFF000000), Exact(6)), 10, action=fwd(1)))
        t.insert(TableEntry((Ternary(0x0A010000, 0xFFFF0000), Exact(6)), 5, action=fwd(2)))
        t.insert(TableEntry((None, Exact(6)), 20, action=fwd(3)))
        assert t.lookup((0x0A010101, 6)).action_call == fwd(3)
        t.delete(TableEntry((None, Exact(6)), 20))
        assert t.lookup((0x0A010101, 6)).action_call == fwd(1)
        assert not t.lookup((0x0A010101, 17)).hit

    def test_same_key_different_priorities_are_distinct_entries(self) -> None:
        t = make(TERN)
        k = (Ternary(0x0A000000, 0xFF000000), Exact(6))
        t.insert(TableEntry(k, 1, action=fwd(1)))
        t.insert(TableEntry(k, 2, action=fwd(2)))
        assert t.lookup((0x0A000000, 6)).action_call == fwd(2)
        t.delete(TableEntry(k, 2))
        assert t.lookup((0x0A000000, 6)).action_call == fwd(1)

    def test_ties_go_to_the_first_inserted(self) -> None:
        t = make(TERN)
        t.insert(TableEntry((Ternary(0, 0xF), Exact(1)), 7, action=fwd(1)))
        t.insert(TableEntry((Ternary(0, 0xF0), Exact(1)), 7, action=fwd(2)))
        assert t.lookup((0, 1)).action_call == fwd(1)

    def test_smallest_priority_wins_when_asked(self) -> None:
        t = make(TERN, largest_priority_wins=False)
        t.insert(TableEntry((None, Exact(1)), 1, action=fwd(1)))
        t.insert(TableEntry((None, Exact(1)), 2, action=fwd(2)))
        assert t.lookup((0, 1)).action_call == fwd(1)

    def test_mask_zero_is_the_wildcard(self) -> None:
        t = make(TERN)
        e = t.insert(TableEntry((Ternary(0, 0), Exact(1)), 1, action=fwd(1)))
        assert e.matches[0] is None

    def test_optional(self) -> None:
        t = make((KeySpec("a", 8, "optional"), KeySpec("b", 8, "optional")))
        t.insert(TableEntry((Optional(1), None), 1, action=fwd(1)))
        t.insert(TableEntry((None, Optional(2)), 2, action=fwd(2)))
        assert t.lookup((1, 2)).action_call == fwd(2)
        assert t.lookup((1, 3)).action_call == fwd(1)
        assert not t.lookup((0, 0)).hit

    def test_lpm_key_in_a_ternary_table_is_a_mask(self) -> None:
        t = make((*LPM, KeySpec("p", 8, "ternary")))
        t.insert(TableEntry((Lpm(0x0A000000, 8), None), 1, action=fwd(1)))
        assert t.lookup((0x0AFFFFFF, 9)).hit and not t.lookup((0x0B000000, 9)).hit


class TestRange:
    def test_range_and_priority(self) -> None:
        t = make((KeySpec("port", 16, "range"), KeySpec("proto", 8, "ternary")))
        t.insert(TableEntry((Range(1000, 2000), None), 1, action=fwd(1)))
        t.insert(TableEntry((Range(1500, 1600), Ternary(6, 0xFF)), 2, action=fwd(2)))
        assert t.lookup((1550, 6)).action_call == fwd(2)
        assert t.lookup((1550, 17)).action_call == fwd(1)
        assert t.lookup((2000, 17)).action_call == fwd(1)
        assert not t.lookup((2001, 6)).hit

    def test_range_checks(self) -> None:
        t = make((KeySpec("port", 16, "range"),))
        assert code_of(t.insert, TableEntry((Range(5, 4),), 1, action=fwd(1))) == "INVALID_ARGUMENT"
        assert (
            code_of(t.insert, TableEntry((Range(0, 1 << 16),), 1, action=fwd(1))) == "OUT_OF_RANGE"
        )
        e = t.insert(TableEntry((Range(0, 0xFFFF),), 1, action=fwd(1)))
        assert e.matches == (None,)


class TestConst:
    def spec(self, **kw: Any) -> TableSpec:
        return TableSpec(
            "c", TERN, (FWD, DROP), ActionCall("MyIngress.drop"), direct_counter="dc", **kw
        )

    def test_const_table(self) -> None:
        t = Table(self.spec(is_const=True))
        k = (Ternary(1, 1), Exact(1))
        t.load_initial(
            [TableEntry(k, 2, action=fwd(1)), TableEntry((None, Exact(1)), 1, action=fwd(2))]
        )
        assert all(e.is_const for e in t.entries())
        assert t.lookup((1, 1)).action_call == fwd(1)
        assert (
            code_of(t.insert, TableEntry((None, Exact(2)), 1, action=fwd(1))) == "PERMISSION_DENIED"
        )
        assert code_of(t.delete, TableEntry(k, 2)) == "PERMISSION_DENIED"
        assert code_of(t.modify, TableEntry(k, 2, action=fwd(3))) == "PERMISSION_DENIED"
        # direct resources of a const entry may change
        t.modify(TableEntry(k, 2, counter=CounterData(5, 500)))
        assert t.get(k, 2).counter == CounterData(5, 500)
        assert t.lookup((1, 1)).action_call == fwd(1)
        t.clear()
        assert len(t) == 2

    def test_written_entries_cannot_be_const(self) -> None:
        t = Table(self.spec())
        assert (
            code_of(t.insert, TableEntry((None, Exact(1)), 1, action=fwd(1), is_const=True))
            == "INVALID_ARGUMENT"
        )

    def test_load_initial_is_all_or_nothing(self) -> None:
        t = Table(self.spec())
        good = TableEntry((None, Exact(1)), 1, action=fwd(1))
        bad = TableEntry((None, Exact(2)), 0, action=fwd(1))
        assert code_of(t.load_initial, [good, bad]) == "INVALID_ARGUMENT"
        assert len(t) == 0

    def test_preinitialized_table_mixes_const_and_not(self) -> None:
        t = Table(self.spec())
        t.load_initial(
            [
                TableEntry((None, Exact(1)), 2, action=fwd(1), is_const=True),
                TableEntry((None, Exact(2)), 1, action=fwd(2)),
            ]
        )
        t.delete(TableEntry((None, Exact(2)), 1))
        assert code_of(t.delete, TableEntry((None, Exact(1)), 2)) == "PERMISSION_DENIED"
        t.insert(TableEntry((None, Exact(3)), 1, action=fwd(3)))
        assert len(t) == 2


class TestPriorities:
    def test_no_explicit_priority(self) -> None:
        assert initial_entry_priorities([None] * 4) == [4, 3, 2, 1]
        assert initial_entry_priorities([None] * 3, priority_delta=10) == [21, 11, 1]
        assert initial_entry_priorities([None] * 3, largest_priority_wins=False) == [1, 2, 3]

    def test_explicit_priorities_propagate(self) -> None:
        assert initial_entry_priorities([100, None, None, 50, None]) == [100, 99, 98, 50, 49]
        assert initial_entry_priorities(
            [10, None, 3, None], largest_priority_wins=False, priority_delta=2
        ) == [10, 12, 3, 5]

    def test_errors(self) -> None:
        assert code_of(initial_entry_priorities, [None, 3]) == "INVALID_ARGUMENT"
        with pytest.raises(RuntimeConfigError):
            initial_entry_priorities([12, None, None], priority_delta=10)


class TestDirectResources:
    def make(self) -> Table:
        spec = TableSpec(
            "d",
            EXACT,
            (FWD,),
            ActionCall("MyIngress.fwd", (0,)),
            direct_counter="dc",
            direct_meter="dm",
        )
        return Table(spec)

    def test_counter_counts_hits_on_the_entry(self) -> None:
        t = self.make()
        dc = DirectCounter("dc", "d", CounterUnit.PACKETS_AND_BYTES)
        t.insert(TableEntry((Exact(1), Exact(1)), action=fwd(1), counter=CounterData(1, 10)))
        for _ in range(3):
            r = t.lookup((1, 1))
            assert r.entry is not None
            dc.count(r.entry, 100)
        assert dc.read(t.get((Exact(1), Exact(1)))) == CounterData(4, 310)
        t.modify(TableEntry((Exact(1), Exact(1))))  # no counter: unchanged
        assert t.get((Exact(1), Exact(1))).counter == CounterData(4, 310)

    def test_meter_config_on_insert_and_reset_on_modify(self) -> None:
        t = self.make()
        dm = DirectMeter("dm", "d", MeterType.PACKETS)
        cfg = MeterConfig(0, 1, 0, 1)
        e = t.insert(TableEntry((Exact(1), Exact(1)), action=fwd(1), meter_config=cfg))
        assert [dm.execute(e, 64, 0) for _ in range(3)] == [0, 2, 2]
        t.modify(TableEntry((Exact(1), Exact(1)), action=fwd(1)))  # unset config: GREEN again
        assert e.meter_config is None and dm.execute(e, 64, 0) == 0

    def test_resources_the_table_does_not_have(self) -> None:
        t = make(EXACT)
        k = (Exact(1), Exact(1))
        assert (
            code_of(t.insert, TableEntry(k, action=fwd(1), counter=CounterData()))
            == "INVALID_ARGUMENT"
        )
        assert (
            code_of(t.insert, TableEntry(k, action=fwd(1), meter_config=MeterConfig(1, 1, 1, 1)))
            == "INVALID_ARGUMENT"
        )
        assert (
            code_of(t.insert, TableEntry(k, action=fwd(1), idle_timeout_ns=5)) == "INVALID_ARGUMENT"
        )
        bad = TableEntry(k, action=fwd(1), meter_config=MeterConfig(2, 1, 1, 1))
        assert code_of(self.make().insert, bad) == "INVALID_ARGUMENT"


class TestIdleTimeout:
    def test_expiry_is_reported_once_until_hit(self) -> None:
        t = make(EXACT, supports_idle_timeout=True)
        t.now_ns = 1000
        t.insert(TableEntry((Exact(1), Exact(1)), action=fwd(1), idle_timeout_ns=500))
        t.insert(TableEntry((Exact(2), Exact(1)), action=fwd(1)))  # never expires
        assert t.expired_entries(1400) == []
        t.now_ns = 1300
        t.lookup((1, 1))
        assert t.expired_entries(1700) == []
        [e] = t.expired_entries(1800)
        assert e.matches[0] == Exact(1)
        assert t.expired_entries(5000) == []
        t.now_ns = 6000
        t.lookup((1, 1))
        assert t.time_since_last_hit(e, 6250) == 250
        assert len(t.expired_entries(6500)) == 1
