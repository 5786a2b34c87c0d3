"""STF control-plane commands: key values by match kind, names, priorities, arguments."""

from __future__ import annotations

from typing import cast

import pytest

from softswitch.errors import RuntimeConfigError, StfError
from softswitch.runtime import tables as rt
from softswitch.runtime.state import RuntimeState
from softswitch.stf.control import ControlPlane, key_match
from softswitch.stf.syntax import parse_stf


def kv(text: str):
    """The parsed key value of ``k:TEXT``."""
    command = parse_stf(f"add t k:{text} a()").commands[0]
    return command.keys[0][1]  # type: ignore[union-attr]


def match(text: str, kind: str, width: int) -> rt.Match | None:
    return key_match(kv(text), rt.KeySpec("k", width, kind))  # type: ignore[arg-type]


def test_exact_values() -> None:
    assert match("0x0a", "exact", 8) == rt.Exact(10)
    assert match("10", "exact", 8) == rt.Exact(10)
    assert match("-1", "exact", 8) == rt.Exact(0xFF)
    with pytest.raises(Exception, match="does not fit in 8 bits"):
        match("256", "exact", 8)
    with pytest.raises(Exception, match="cannot be '\\*'"):
        match("*", "exact", 8)
    with pytest.raises(Exception, match="cannot have '\\*' digits"):
        match("0x1*", "exact", 8)


def test_ternary_cares_only_about_the_digits_written() -> None:
    assert match("0x****0101", "ternary", 32) == rt.Ternary(0x0101, 0xFFFF)
    assert match("0x1", "ternary", 16) == rt.Ternary(0x1, 0x0F)
    assert match("0x01", "ternary", 16) == rt.Ternary(0x01, 0xFF)
    assert match("0b1*0", "ternary", 8) == rt.Ternary(0b100, 0b101)
    assert match("5", "ternary", 8) == rt.Ternary(5, 0xFF)
    assert match("0x0a&&&0xf0", "ternary", 8) == rt.Ternary(0x00, 0xF0)
    assert match("0xab/4", "ternary", 8) == rt.Ternary(0xA0, 0xF0)
    assert match("*", "ternary", 8) is None
    assert match("0x**", "ternary", 8) is None


def test_lpm_prefix_from_the_digits_or_the_slash() -> None:
    assert match("0x0A0B****", "lpm", 32) == rt.Lpm(0x0A0B0000, 16)
    assert match("0x0A0B0C0D", "lpm", 32) == rt.Lpm(0x0A0B0C0D, 32)
    assert match("10.1.2.3/8", "lpm", 32) == rt.Lpm(0x0A000000, 8)
    assert match("7", "lpm", 8) == rt.Lpm(7, 8)
    assert match("0x00/0", "lpm", 8) is None
    assert match("*", "lpm", 8) is None
    with pytest.raises(Exception, match="longer than"):
        match("1/9", "lpm", 8)


def test_range_and_optional() -> None:
    assert match("1->5", "range", 8) == rt.Range(1, 5)
    assert match("3", "range", 8) == rt.Range(3, 3)
    assert match("0->255", "range", 8) is None
    with pytest.raises(Exception, match="empty range"):
        match("5->1", "range", 8)
    assert match("4", "optional", 8) == rt.Optional(4)
    assert match("*", "optional", 8) is None


class FakeTable:
    """Stands in for a runtime Table: records inserted entries and the default."""

    def __init__(self, spec: rt.TableSpec, needs_priority: bool) -> None:
        self.spec = spec
        self.match_keys = tuple(k for k in spec.keys if k.kind != "selector")
        self.needs_priority = needs_priority
        self.inserted: list[rt.TableEntry] = []
        self.default: rt.ActionCall | None = None

    def insert(self, entry: rt.TableEntry) -> rt.TableEntry:
        self.inserted.append(entry)
        return entry

    def set_default(self, action: rt.ActionCall) -> None:
        self.default = action


class FakeState(RuntimeState):
    fakes: dict[str, FakeTable]

    def table(self, name: str) -> rt.Table:
        for full, table in self.fakes.items():
            if full == name or full.endswith("." + name):
                return cast(rt.Table, table)
        raise RuntimeConfigError("NOT_FOUND", f"no table named '{name}'")


SPEC = rt.TableSpec(
    name="ingress.t",
    keys=(
        rt.KeySpec("hdr.h.f", 16, "ternary"),
        rt.KeySpec("hdr.h.isValid()", 1, "exact"),
        rt.KeySpec("hdr.s[0].g", 8, "exact"),
        rt.KeySpec("meta.m", 8, "lpm"),
    ),
    actions=(
        rt.ActionSpec("ingress.set", (("port", 9), ("value", 16))),
        rt.ActionSpec("ingress.reset"),
        rt.ActionSpec("NoAction"),
    ),
    default_action=rt.ActionCall("NoAction"),
)


def apply(text: str, needs_priority: bool = True) -> FakeTable:
    table = FakeTable(SPEC, needs_priority)
    state = FakeState()
    state.fakes = {"ingress.t": table}
    control = ControlPlane(state, "t.stf")
    for command in parse_stf(text, "t.stf").commands:
        control.apply(command)
    return table


def test_add_builds_the_entry() -> None:
    table = apply("add t 7 f:0x**01 h.$valid$:1 s$0.g:3 set(port:2, value:0x10)")
    (entry,) = table.inserted
    assert entry.matches == (rt.Ternary(1, 0xFF), rt.Exact(1), rt.Exact(3), None)
    assert entry.priority == 8
    assert entry.action == rt.ActionCall("ingress.set", (2, 16))


def test_validity_key_spellings_and_default_values() -> None:
    for spelling in ("hdr.h.isValid()", "h.valid", "h.$valid$", "hdr.h"):
        table = apply(f"add t {spelling}:1 reset()")
        assert table.inserted[0].matches == (None, rt.Exact(1), rt.Exact(0), None)


def test_priority_larger_wins_and_zero_stays_valid() -> None:
    table = apply("add t 0 f:1 reset()\nadd t f:2 reset()\nadd t 3 f:3 reset()")
    assert [e.priority for e in table.inserted] == [1, 1, 4]
    table = apply("add t 5 h.valid:1 reset()", needs_priority=False)
    assert table.inserted[0].priority == 0


def test_setdefault_resolves_the_action_by_suffix() -> None:
    table = apply("setdefault ingress.t set(port:1, value:2)")
    assert table.default == rt.ActionCall("ingress.set", (1, 2))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("add t nokey:1 reset()", "table 'ingress.t' has no key 'nokey'"),
        ("add t f:1 f:2 reset()", "key 'hdr.h.f' is given twice"),
        ("add t f:1 jump()", "no action in 'ingress.t' named 'jump'"),
        ("add t f:1 set(port:1)", "missing argument 'value' of action 'ingress.set'"),
        ("add t f:1 set(port:1, value:2, x:3)", "has no parameter 'x'"),
        ("add t f:1 set(port:512, value:2)", "argument 'port' value 512 does not fit in 9 bits"),
        ("add t m:0x1&&&0x1 reset()", "is an lpm key"),
        ("add nope f:1 reset()", "no table named 'nope'"),
        ("check_counter c($H) packets == 1", "no entry was added with '= H'"),
    ],
)
def test_errors_are_located(line: str, message: str) -> None:
    with pytest.raises(StfError) as info:
        apply(f"# x\n{line}")
    assert info.value.line == 2
    assert message in info.value.message
