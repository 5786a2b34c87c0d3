"""How a table finds the winning entry for a key: one matcher per kind of table.

Each matcher indexes the installed entries (``add``/``remove``) and has a
``find(key)`` attribute, a plain function from a key tuple to the winning
entry or None, which the table calls on every lookup.

    exact keys only           a dict from the key tuple
    one lpm key (+ exact)     one dict per prefix length, longest first
    ternary/optional (+ lpm)  tuple space search: one dict per distinct mask
    any range key             a scan of the entries, best first

Ranks order entries of priority tables: the highest (or, when the program
asks for it, lowest) priority wins, and between equal priorities the entry
inserted first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.matches import (
    Exact,
    KeySpec,
    Lpm,
    Optional,
    Range,
    Ternary,
    mask_of,
    prefix_mask,
)

if TYPE_CHECKING:
    from softswitch.runtime.tables import TableEntry


class _ExactMatcher:
    def __init__(self) -> None:
        self._index: dict[tuple[int, ...], TableEntry] = {}
        self.find: Callable[[tuple[int, ...]], TableEntry | None] = self._index.get

    @staticmethod
    def _key(entry: TableEntry) -> tuple[int, ...]:
        return tuple(m.value for m in entry.matches if isinstance(m, Exact))

    def add(self, entry: TableEntry) -> None:
        self._index[self._key(entry)] = entry

    def remove(self, entry: TableEntry) -> None:
        del self._index[self._key(entry)]


class _KeylessMatcher:
    """A table without match keys always misses (its default action runs)."""

    @staticmethod
    def find(key: tuple[int, ...]) -> TableEntry | None:
        return None

    def add(self, entry: TableEntry) -> None:  # pragma: no cover - rejected before
        raise AssertionError("keyless tables take no entries")

    def remove(self, entry: TableEntry) -> None:  # pragma: no cover - rejected before
        raise AssertionError("keyless tables take no entries")


class _LpmMatcher:
    """Longest prefix match: one dict per prefix length, longest first."""

    def __init__(self, keys: Sequence[KeySpec]) -> None:
        self._pos = next(i for i, k in enumerate(keys) if k.kind == "lpm")
        self._width = keys[self._pos].width
        self._single = len(keys) == 1
        self._by_len: dict[int, dict[object, TableEntry]] = {}
        # (mask, dict) for each prefix length in use, longest prefix first.
        self._levels: list[tuple[int, dict[object, TableEntry]]] = []
        self.find: Callable[[tuple[int, ...]], TableEntry | None] = (
            self._find_single if self._single else self._find_multi
        )

    def _split(self, entry: TableEntry) -> tuple[int, object]:
        lpm = entry.matches[self._pos]
        plen, value = (lpm.prefix_len, lpm.value) if isinstance(lpm, Lpm) else (0, 0)
        if self._single:
            return plen, value
        rest = tuple(m.value for m in entry.matches if isinstance(m, Exact))
        return plen, (rest, value)

    def _relevel(self) -> None:
        self._levels = [
            (prefix_mask(self._width, plen), self._by_len[plen])
            for plen in sorted(self._by_len, reverse=True)
        ]

    def add(self, entry: TableEntry) -> None:
        plen, k = self._split(entry)
        level = self._by_len.get(plen)
        if level is None:
            level = self._by_len[plen] = {}
            self._relevel()
        level[k] = entry

    def remove(self, entry: TableEntry) -> None:
        plen, k = self._split(entry)
        level = self._by_len[plen]
        del level[k]
        if not level:
            del self._by_len[plen]
            self._relevel()

    def _find_single(self, key: tuple[int, ...]) -> TableEntry | None:
        value = key[0]
        for mask, level in self._levels:
            entry = level.get(value & mask)
            if entry is not None:
                return entry
        return None

    def _find_multi(self, key: tuple[int, ...]) -> TableEntry | None:
        pos = self._pos
        value = key[pos]
        rest = key[:pos] + key[pos + 1 :]
        for mask, level in self._levels:
            entry = level.get((rest, value & mask))
            if entry is not None:
                return entry
        return None


def _rank(entry: TableEntry, largest_wins: bool) -> int:
    """A single int that orders entries: higher wins, then earlier insertion."""
    priority = entry.priority if largest_wins else -entry.priority
    return (priority << 48) - entry.seq


class _MaskGroup:
    __slots__ = ("buckets", "mask", "top")

    def __init__(self, mask: int) -> None:
        self.mask = mask
        self.buckets: dict[int, list[tuple[int, TableEntry]]] = {}
        self.top = 0  # best rank in the group


class _TernaryMatcher:
    """Priority match by tuple space search.

    Every entry becomes a (value, mask) pair over the concatenation of the key
    fields, first field most significant.  Entries with the same mask share a
    dict from masked value to the entries with that value, best rank first.
    Groups are visited by descending best rank; the search stops at the first
    group that cannot beat the best entry found so far.
    """

    def __init__(self, keys: Sequence[KeySpec], largest_wins: bool) -> None:
        self._widths = tuple(k.width for k in keys)
        self._largest_wins = largest_wins
        self._groups: dict[int, _MaskGroup] = {}
        self._order: list[_MaskGroup] = []
        self._dirty = False
        self.find: Callable[[tuple[int, ...]], TableEntry | None] = (
            self._find_one if len(keys) == 1 else self._find_many
        )

    def _pack(self, entry: TableEntry) -> tuple[int, int]:
        value = mask = 0
        for m, width in zip(entry.matches, self._widths, strict=True):
            value <<= width
            mask <<= width
            if m is None:
                continue
            if isinstance(m, Exact | Optional):
                value |= m.value
                mask |= mask_of(width)
            elif isinstance(m, Ternary):
                value |= m.value
                mask |= m.mask
            elif isinstance(m, Lpm):
                value |= m.value
                mask |= prefix_mask(width, m.prefix_len)
        return value, mask

    def add(self, entry: TableEntry) -> None:
        value, mask = self._pack(entry)
        group = self._groups.get(mask)
        if group is None:
            group = self._groups[mask] = _MaskGroup(mask)
        rank = _rank(entry, self._largest_wins)
        bucket = group.buckets.setdefault(value, [])
        bucket.append((rank, entry))
        bucket.sort(key=lambda pair: -pair[0])
        if len(group.buckets) == 1 and len(bucket) == 1:
            group.top = rank
        else:
            group.top = max(group.top, rank)
        self._dirty = True

    def remove(self, entry: TableEntry) -> None:
        value, mask = self._pack(entry)
        group = self._groups[mask]
        bucket = group.buckets[value]
        bucket[:] = [pair for pair in bucket if pair[1] is not entry]
        if not bucket:
            del group.buckets[value]
        if not group.buckets:
            del self._groups[mask]
        else:
            group.top = max(b[0][0] for b in group.buckets.values())
        self._dirty = True

    def _reorder(self) -> None:
        self._order = sorted(self._groups.values(), key=lambda g: -g.top)
        self._dirty = False

    def _search(self, packed: int) -> TableEntry | None:
        if self._dirty:
            self._reorder()
        best: TableEntry | None = None
        best_rank = 0
        for group in self._order:
            if best is not None and group.top < best_rank:
                break
            bucket = group.buckets.get(packed & group.mask)
            if bucket is not None:
                rank, entry = bucket[0]
                if best is None or rank > best_rank:
                    best, best_rank = entry, rank
        return best

    def _find_one(self, key: tuple[int, ...]) -> TableEntry | None:
        return self._search(key[0])

    def _find_many(self, key: tuple[int, ...]) -> TableEntry | None:
        packed = 0
        for value, width in zip(key, self._widths, strict=True):
            packed = (packed << width) | value
        return self._search(packed)


class _RangeMatcher(_TernaryMatcher):
    """Priority match with range fields: a scan of the entries, best rank first."""

    def __init__(self, keys: Sequence[KeySpec], largest_wins: bool) -> None:
        super().__init__(keys, largest_wins)
        self._entries: dict[int, tuple[int, int, int, tuple[tuple[int, int, int], ...], TableEntry]]
        self._entries = {}
        self._sorted: list[tuple[int, int, tuple[tuple[int, int, int], ...], TableEntry]] = []
        self.find = self._scan

    def add(self, entry: TableEntry) -> None:
        value, mask = self._pack(entry)
        ranges = tuple(
            (i, m.low, m.high) for i, m in enumerate(entry.matches) if isinstance(m, Range)
        )
        self._entries[id(entry)] = (_rank(entry, self._largest_wins), value, mask, ranges, entry)
        self._dirty = True

    def remove(self, entry: TableEntry) -> None:
        del self._entries[id(entry)]
        self._dirty = True

    def _scan(self, key: tuple[int, ...]) -> TableEntry | None:
        if self._dirty:
            ordered = sorted(self._entries.values(), key=lambda t: -t[0])
            self._sorted = [(v, m, r, e) for _, v, m, r, e in ordered]
            self._dirty = False
        packed = 0
        for v, width in zip(key, self._widths, strict=True):
            packed = (packed << width) | v
        for value, mask, ranges, entry in self._sorted:
            if packed & mask != value:
                continue
            for i, low, high in ranges:
                if not low <= key[i] <= high:
                    break
            else:
                return entry
        return None


Matcher = _ExactMatcher | _KeylessMatcher | _LpmMatcher | _TernaryMatcher


def make_matcher(table: str, keys: tuple[KeySpec, ...], largest_wins: bool = True) -> Matcher:
    """The matcher for a table with these match keys (selector keys left out)."""
    kinds = [k.kind for k in keys]
    if not keys:
        return _KeylessMatcher()
    if "range" in kinds:
        return _RangeMatcher(keys, largest_wins)
    if "ternary" in kinds or "optional" in kinds:
        return _TernaryMatcher(keys, largest_wins)
    if kinds.count("lpm") > 1:
        raise RuntimeConfigError(
            "UNIMPLEMENTED", f"table '{table}' has more than one lpm key and no ternary key"
        )
    if "lpm" in kinds:
        return _LpmMatcher(keys)
    return _ExactMatcher()
