"""Action profiles and selectors, alone and behind an indirect table."""

from __future__ import annotations

from typing import Any

from softswitch.runtime.actions import ActionCall, ActionSpec
from softswitch.runtime.hashing import hash_fields
from softswitch.runtime.profiles import ActionProfile, ActionSelector, Group, Member
from softswitch.runtime.tables import Exact, KeySpec, Table, TableEntry, TableSpec
from tests.support.runtime_errors import code_of

NHOP = ActionSpec("set_nhop", (("port", 9),))


def nhop(port: int) -> ActionCall:
    return ActionCall("set_nhop", (port,))


def selector(**kw: Any) -> ActionSelector:
    return ActionSelector("ecmp", 4, selector_widths=(32, 16), actions=(NHOP,), **kw)


class TestMembers:
    def test_crud_and_errors(self) -> None:
        p = ActionProfile("ap", 2, actions=(NHOP,))
        p.insert_member(1, nhop(1))
        assert code_of(p.insert_member, 1, nhop(2)) == "ALREADY_EXISTS"
        assert code_of(p.insert_member, 2, ActionCall("other")) == "INVALID_ARGUMENT"
        assert code_of(p.insert_member, 2, nhop(1024)) == "OUT_OF_RANGE"
        p.insert_member(2, nhop(2))
        assert code_of(p.insert_member, 3, nhop(3)) == "RESOURCE_EXHAUSTED"
        p.modify_member(2, nhop(5))
        assert p.member(2) == nhop(5)
        assert p.members() == [Member(1, nhop(1)), Member(2, nhop(5))]
        assert code_of(p.modify_member, 9, nhop(1)) == "NOT_FOUND"
        p.delete_member(1)
        assert code_of(p.delete_member, 1) == "NOT_FOUND"
        assert code_of(p.group, 1) == "INVALID_ARGUMENT"


class TestGroups:
    def test_crud_and_errors(self) -> None:
        s = selector(max_group_size=2)
        s.insert_member(1, nhop(1))
        s.insert_member(2, nhop(2))
        s.insert_member(3, nhop(3))
        s.insert_group(10, {1: 1, 2: 1}, max_size=2)
        assert s.group(10) == Group(10, ((1, 1), (2, 1)), 2)
        assert code_of(s.insert_group, 10, {}, 2) == "ALREADY_EXISTS"
        assert code_of(s.insert_group, 11, {9: 1}, 2) == "NOT_FOUND"
        assert code_of(s.insert_group, 11, {1: 0}, 2) == "INVALID_ARGUMENT"
        assert code_of(s.insert_group, 11, {}, 3) == "INVALID_ARGUMENT"  # above max_group_size
        assert code_of(s.insert_group, 11, {}, 0) == "INVALID_ARGUMENT"
        assert code_of(s.modify_group, 10, {1: 1, 2: 1, 3: 1}) == "RESOURCE_EXHAUSTED"
        assert code_of(s.modify_group, 10, {1: 1}, 1) == "INVALID_ARGUMENT"
        assert code_of(s.modify_group, 12, {1: 1}) == "NOT_FOUND"
        assert code_of(s.delete_member, 1) == "FAILED_PRECONDITION"  # in a group
        s.modify_group(10, {3: 1})
        s.delete_member(1)
        s.delete_group(10)
        assert code_of(s.delete_group, 10) == "NOT_FOUND"
        s.delete_member(3)

    def test_choice_is_hash_mod_n_over_members_by_bmv2_handle(self) -> None:
        s = selector()
        for m in (10, 20, 30):
            s.insert_member(m, nhop(m))  # handles 0, 1, 2
        s.delete_member(10)
        s.insert_member(5, nhop(5))  # reuses handle 0
        s.insert_group(1, {30: 1, 5: 1, 20: 1})
        assert [s.choose_by_hash(1, h) for h in range(4)] == [nhop(5), nhop(20), nhop(30), nhop(5)]

    def test_choose_hashes_the_selector_fields(self) -> None:
        s = selector(algorithm="crc32")
        for m in (1, 2, 3):
            s.insert_member(m, nhop(m))
        s.insert_group(1, {1: 1, 2: 1, 3: 1})
        for src, port in [(0x0A000001, 80), (0x0A000002, 443), (0xC0A80001, 53)]:
            h = hash_fields("crc32", [(src, 32), (port, 16)])
            assert s.hash((src, port)) == h
            assert s.choose(1, (src, port)) == nhop(1 + h % 3)

    def test_weights_repeat_a_member(self) -> None:
        s = selector()
        s.insert_member(1, nhop(1))
        s.insert_member(2, nhop(2))
        s.insert_group(1, {2: 1, 1: 2})
        assert [s.choose_by_hash(1, h) for h in range(3)] == [nhop(1), nhop(1), nhop(2)]

    def test_empty_group_chooses_nothing(self) -> None:
        s = selector()
        s.insert_group(1)
        assert s.choose(1, (1, 2)) is None


class TestIndirectTable:
    def make(self, profile: ActionProfile) -> Table:
        spec = TableSpec(
            "MyIngress.ecmp",
            (
                KeySpec("hdr.ipv4.dstAddr", 32, "exact"),
                KeySpec("hdr.ipv4.srcAddr", 32, "selector"),
                KeySpec("hdr.tcp.srcPort", 16, "selector"),
            ),
            (NHOP, ActionSpec("NoAction")),
            implementation="ecmp",
        )
        return Table(spec, profile)

    def test_members_and_groups_resolve(self) -> None:
        s = selector()
        s.insert_member(1, nhop(1))
        s.insert_member(2, nhop(2))
        s.insert_group(7, {1: 1, 2: 1})
        t = self.make(s)
        assert [k.name for k in t.match_keys] == ["hdr.ipv4.dstAddr"]
        t.insert(TableEntry((Exact(1),), member_id=2))
        t.insert(TableEntry((Exact(2),), group_id=7))
        assert t.lookup((1,)).action_call == nhop(2)
        h = s.hash((5, 6))
        assert h == s.hash((5, 6), (32, 16))
        r = t.lookup((2,), (5, 6))
        assert r.hit and r.action_call == nhop(1 + h % 2)
        s.modify_member(2, nhop(9))  # entries see the new action
        assert t.lookup((1,)).action_call == nhop(9)

    def test_references_are_checked_and_counted(self) -> None:
        s = selector()
        s.insert_member(1, nhop(1))
        s.insert_group(7, {1: 1})
        t = self.make(s)
        assert code_of(t.insert, TableEntry((Exact(1),), member_id=5)) == "NOT_FOUND"
        assert code_of(t.insert, TableEntry((Exact(1),), group_id=5)) == "NOT_FOUND"
        assert code_of(t.insert, TableEntry((Exact(1),), action=nhop(1))) == "INVALID_ARGUMENT"
        t.insert(TableEntry((Exact(1),), group_id=7))
        assert code_of(s.delete_group, 7) == "FAILED_PRECONDITION"
        t.modify(TableEntry((Exact(1),), member_id=1))
        s.delete_group(7)
        assert code_of(s.delete_member, 1) == "FAILED_PRECONDITION"  # used by the entry
        t.delete(TableEntry((Exact(1),)))
        s.delete_member(1)

    def test_profile_without_selector_has_no_groups(self) -> None:
        p = ActionProfile("ap", actions=(NHOP,))
        t = self.make(p)
        assert code_of(t.insert, TableEntry((Exact(1),), group_id=1)) == "INVALID_ARGUMENT"

    def test_empty_group_runs_the_default_action(self) -> None:
        s = selector()
        s.insert_group(7)
        t = self.make(s)
        e = t.insert(TableEntry((Exact(1),), group_id=7))
        r = t.lookup((1,), (0, 0))
        assert not r.hit and r.action_call == ActionCall("NoAction") and r.entry is e

    def test_the_table_gives_the_selector_widths(self) -> None:
        s = ActionSelector("bare", actions=(NHOP,))  # widths unknown to the selector
        s.insert_member(1, nhop(1))
        s.insert_member(2, nhop(2))
        s.insert_group(7, {1: 1, 2: 1})
        t = self.make(s)
        t.insert(TableEntry((Exact(2),), group_id=7))
        h = hash_fields("crc16", [(0x0A000001, 32), (80, 16)])
        assert t.lookup((2,), (0x0A000001, 80)).action_call == nhop(1 + h % 2)

    def test_unbound_table(self) -> None:
        t = self.make(selector())
        t.profile = None
        assert code_of(t.insert, TableEntry((Exact(1),), member_id=1)) == "FAILED_PRECONDITION"
