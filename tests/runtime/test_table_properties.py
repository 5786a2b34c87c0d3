"""Lookup against a brute-force reference matcher, on random tables and keys."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import ActionCall, ActionSpec
from softswitch.runtime.tables import (
    Exact,
    KeySpec,
    Lpm,
    Match,
    Range,
    Table,
    TableEntry,
    TableSpec,
    Ternary,
)

W = 8  # narrow keys make collisions, overlaps and ties common
ACT = ActionSpec("a", (("n", 16),))


def table(keys: tuple[KeySpec, ...]) -> Table:
    return Table(TableSpec("t", keys, (ACT, ActionSpec("NoAction")), size=10_000))


def matches(m: Match | None, v: int) -> bool:
    if m is None:
        return True
    if isinstance(m, Exact):
        return v == m.value
    if isinstance(m, Lpm):
        shift = W - m.prefix_len
        return v >> shift == m.value >> shift
    if isinstance(m, Ternary):
        return v & m.mask == m.value
    assert isinstance(m, Range)
    return m.low <= v <= m.high


Installed = list[tuple[tuple[Match | None, ...], int, int]]
"""(matches, priority, action argument) of the entries in a table, in insertion order."""


def check_lookups(t: Table, installed: Installed, keys: list[tuple[int, int]]) -> None:
    """Every lookup of ``keys`` hits the entry of highest priority among the
    ``installed`` ones that match (the first inserted of equals), or misses."""
    for key in keys:
        best = None
        for m, prio, n in installed:  # first inserted wins ties: keep the first max
            hit = all(matches(mi, ki) for mi, ki in zip(m, key, strict=True))
            if hit and (best is None or prio > best[0]):
                best = (prio, n)
        got = t.lookup(key)
        assert got.hit == (best is not None)
        if best is not None:
            assert got.action_call.args == (best[1],)


lpm_st = st.builds(
    lambda v, p: Lpm(v & ~((1 << (W - p)) - 1) & 0xFF, p),
    st.integers(0, 255),
    st.integers(0, W),
)
ternary_st = st.builds(lambda v, m: Ternary(v & m, m), st.integers(0, 255), st.integers(0, 255))
range_st = st.builds(
    lambda a, b: Range(min(a, b), max(a, b)), st.integers(0, 255), st.integers(0, 255)
)


@settings(max_examples=150, deadline=None)
@given(
    prefixes=st.lists(st.tuples(st.integers(0, 3), lpm_st), max_size=40),
    keys=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 255)), min_size=1, max_size=30),
)
def test_lpm_matches_reference(
    prefixes: list[tuple[int, Lpm]], keys: list[tuple[int, int]]
) -> None:
    t = table((KeySpec("vrf", 2, "exact"), KeySpec("dst", W, "lpm")))
    installed: dict[tuple[int, int, int], int] = {}
    for n, (vrf, p) in enumerate(prefixes):
        ident = (vrf, p.value, p.prefix_len)
        if ident in installed:
            continue
        t.insert(TableEntry((Exact(vrf), p), action=ActionCall("a", (n,))))
        installed[ident] = n
    for vrf, v in keys:
        candidates = [
            (plen, n)
            for (evrf, value, plen), n in installed.items()
            if evrf == vrf and matches(Lpm(value, plen), v)
        ]
        got = t.lookup((vrf, v))
        if not candidates:
            assert not got.hit
        else:
            assert got.hit and got.action_call.args == (max(candidates)[1],)


entry_st = st.tuples(
    st.one_of(st.none(), ternary_st),
    st.one_of(st.none(), ternary_st),
    st.integers(1, 6),
)


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(entry_st, max_size=40),
    deletions=st.lists(st.integers(0, 39), max_size=10),
    keys=st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=1, max_size=30),
)
def test_ternary_matches_reference(
    entries: list[tuple[Ternary | None, Ternary | None, int]],
    deletions: list[int],
    keys: list[tuple[int, int]],
) -> None:
    t = table((KeySpec("a", W, "ternary"), KeySpec("b", W, "ternary")))
    installed: Installed = []  # insertion order
    for n, (a, b, prio) in enumerate(entries):
        canon = tuple(None if m is not None and m.mask == 0 else m for m in (a, b))
        if any(m == canon and p == prio for m, p, _ in installed):
            with pytest.raises(RuntimeConfigError, match="already has"):
                t.insert(TableEntry((a, b), prio, action=ActionCall("a", (n,))))
            continue
        live = t.insert(TableEntry((a, b), prio, action=ActionCall("a", (n,))))
        assert live.matches == canon
        installed.append((canon, prio, n))
    for d in deletions:
        if d < len(installed):
            m, prio, _ = installed.pop(d)
            t.delete(TableEntry(m, prio))
    check_lookups(t, installed, keys)


@settings(max_examples=100, deadline=None)
@given(
    entries=st.lists(
        st.tuples(
            st.one_of(st.none(), range_st), st.one_of(st.none(), ternary_st), st.integers(1, 4)
        ),
        max_size=30,
    ),
    keys=st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=1, max_size=30),
)
def test_range_matches_reference(
    entries: list[tuple[Range | None, Ternary | None, int]], keys: list[tuple[int, int]]
) -> None:
    t = table((KeySpec("r", W, "range"), KeySpec("b", W, "ternary")))
    installed: Installed = []
    for n, (r, b, prio) in enumerate(entries):
        canon = (None if r == Range(0, 255) else r, None if b is not None and b.mask == 0 else b)
        if any(i[0] == canon and i[1] == prio for i in installed):
            continue
        t.insert(TableEntry((r, b), prio, action=ActionCall("a", (n,))))
        installed.append((canon, prio, n))
    check_lookups(t, installed, keys)
