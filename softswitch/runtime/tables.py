"""Match-action tables: entries, their validation, and fast lookup.

A :class:`Table` is built from a :class:`TableSpec` (keys, actions, size,
default action, attached resources) and holds :class:`TableEntry` objects.
Its control-plane methods (``insert``, ``modify``, ``delete``,
``set_default``, ...) apply P4Runtime's rules and raise
:class:`RuntimeConfigError` with the status P4Runtime prescribes, leaving the
table unchanged; ``lookup`` is the data-plane path.

Matching.  Values are unsigned ints.  Each key field of an entry holds one of
:class:`Exact`, :class:`Lpm`, :class:`Ternary`, :class:`Range`,
:class:`Optional`, or None for "don't care" (allowed for every kind but
exact).  Don't-care forms are stored canonically as None: ``Lpm(0, 0)``,
``Ternary(0, 0)`` and a range covering every value all become None, so
reads give P4Runtime's canonical form.  Key fields of kind ``selector`` are
not matched: they are the inputs of an action selector's hash.  Entries
therefore have one match per *match key* (``table.match_keys``), and
``lookup`` takes one value per match key.

Which entry wins.  A table whose match keys are all exact is a dict.  A
table with one lpm key (and otherwise exact keys) takes the longest prefix:
one dict per prefix length, probed longest first.  A table with ternary,
range or optional keys needs a priority on every entry (P4Runtime: > 0) and
the highest priority wins (or the lowest, when the program set
``largest_priority_wins = false``); between equal priorities the entry
inserted first wins.  Ternary tables without range keys are searched by
mask ("tuple space search": one dict per distinct mask, visited in order of
the best priority they hold, stopping as soon as no later mask can win);
tables with range keys scan their entries in priority order.

Indirect tables (``implementation`` names an action profile or selector)
hold entries that name a member or a group; ``lookup`` resolves them, hashing
the selector key values for a group as BMv2 does.

Idle timeout.  In tables that support it, a hit stores ``table.now_ns`` in
the entry (the caller keeps ``now_ns`` current, see RuntimeState.set_time),
and :meth:`Table.expired_entries` lists the entries idle for at least their
``idle_timeout_ns``, each once until it is hit again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import (
    NO_ACTION,
    ActionCall,
    ActionScope,
    ActionSpec,
    check_action_call,
)
from softswitch.runtime.externs import CounterData, MeterCell, MeterConfig, check_meter_config

if TYPE_CHECKING:
    from softswitch.runtime.profiles import ActionProfile

__all__ = [
    "NO_ACTION",
    "ActionCall",
    "ActionScope",
    "ActionSpec",
    "Exact",
    "KeySpec",
    "LookupResult",
    "Lpm",
    "Match",
    "MatchKind",
    "Optional",
    "Range",
    "Table",
    "TableEntry",
    "TableSpec",
    "Ternary",
    "initial_entry_priorities",
]


@dataclass(frozen=True, slots=True)
class Exact:
    value: int


@dataclass(frozen=True, slots=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True, slots=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True, slots=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Optional:
    value: int


Match = Exact | Lpm | Ternary | Range | Optional
MatchKind = Literal["exact", "lpm", "ternary", "range", "optional", "selector"]

_MATCH_TYPE: dict[str, type] = {
    "exact": Exact,
    "lpm": Lpm,
    "ternary": Ternary,
    "range": Range,
    "optional": Optional,
}


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One key field: its control-plane name, width in bits and match kind."""

    name: str
    width: int
    kind: MatchKind


@dataclass(frozen=True, slots=True)
class TableSpec:
    """What the program declares about a table."""

    name: str
    keys: tuple[KeySpec, ...]
    actions: tuple[ActionSpec, ...]
    default_action: ActionCall = NO_ACTION
    size: int = 1024
    default_is_const: bool = False
    is_const: bool = False  # `const entries`: no entry may be added, changed or removed
    implementation: str | None = None  # action profile or selector name
    direct_counter: str | None = None
    direct_meter: str | None = None
    supports_idle_timeout: bool = False
    largest_priority_wins: bool = True


@dataclass(slots=True, eq=False)
class TableEntry:
    """A table entry.

    Identity is ``(matches, priority)``.  ``action`` is set for direct tables,
    ``member_id`` or ``group_id`` for indirect ones.  ``counter`` and
    ``meter_config`` are the direct resources: on insert, None means the
    default (zero, unconfigured meter); on modify, a None counter is left as
    it is and a None meter config resets the meter (P4Runtime).  Entries
    returned by a table are its live objects: read them, do not change them.
    """

    matches: tuple[Match | None, ...]
    priority: int = 0
    action: ActionCall | None = None
    member_id: int | None = None
    group_id: int | None = None
    idle_timeout_ns: int = 0
    metadata: bytes = b""
    is_const: bool = False
    counter: CounterData | None = None
    meter_config: MeterConfig | None = None
    # Owned by the table once the entry is installed.
    meter: MeterCell | None = field(default=None, repr=False)
    last_hit_ns: int = field(default=0, repr=False)
    idle_notified: bool = field(default=False, repr=False)
    seq: int = field(default=0, repr=False)
    result: LookupResult | None = field(default=None, repr=False)

    @property
    def key(self) -> tuple[tuple[Match | None, ...], int]:
        """The identity of the entry in its table."""
        return (self.matches, self.priority)


@dataclass(frozen=True, slots=True)
class LookupResult:
    """What a lookup found: the action to run and the entry hit (None on a miss)."""

    hit: bool
    action_call: ActionCall
    entry: TableEntry | None


def initial_entry_priorities(
    explicit: Sequence[int | None], *, largest_priority_wins: bool = True, priority_delta: int = 1
) -> list[int]:
    """Priorities of a table's initial ``entries``, as p4c's EntryPriorities computes them.

    With no explicit priority, entries are numbered so that the first one
    wins: ``N*delta - delta + 1 ... 1`` when the largest priority wins, and
    ``1, 1 + delta, ...`` otherwise (``const entries`` always use this rule).
    Otherwise the first entry must have one, and each entry without one gets
    the previous priority minus (or plus) ``priority_delta``.
    """
    n = len(explicit)
    if all(p is None for p in explicit):
        ranks = [1 + i * priority_delta for i in range(n)]
        return ranks[::-1] if largest_priority_wins else ranks
    if explicit[0] is None:
        raise RuntimeConfigError("INVALID_ARGUMENT", "the first entry must have a priority")
    result: list[int] = []
    current = 0
    for p in explicit:
        if p is not None:
            current = p
        if current < 0:
            raise RuntimeConfigError("INVALID_ARGUMENT", "entry priorities would become negative")
        result.append(current)
        current = current - priority_delta if largest_priority_wins else current + priority_delta
    return result


def _mask(width: int) -> int:
    return (1 << width) - 1


def _prefix_mask(width: int, prefix_len: int) -> int:
    return _mask(width) ^ _mask(width - prefix_len)


def _out_of_range(table: str, key: KeySpec, value: int) -> RuntimeConfigError:
    return RuntimeConfigError(
        "OUT_OF_RANGE",
        f"value {value:#x} of key '{key.name}' in table '{table}' does not fit in {key.width} bits",
    )


def _canonical_match(table: str, key: KeySpec, match: Match | None) -> Match | None:
    """Check one field of an entry and return its canonical form (None for don't care)."""
    width = key.width
    if match is None:
        if key.kind == "exact":
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"exact key '{key.name}' of table '{table}' cannot be a wildcard",
            )
        return None
    if not isinstance(match, _MATCH_TYPE[key.kind]):
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"key '{key.name}' of table '{table}' is {key.kind}, got {type(match).__name__}",
        )
    if isinstance(match, Exact | Optional):
        if match.value < 0 or match.value >> width:
            raise _out_of_range(table, key, match.value)
        return match
    if isinstance(match, Lpm):
        if match.value < 0 or match.value >> width:
            raise _out_of_range(table, key, match.value)
        if not 0 <= match.prefix_len <= width:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"prefix length {match.prefix_len} of key '{key.name}' in table '{table}' "
                f"is not in [0, {width}]",
            )
        if match.value & ~_prefix_mask(width, match.prefix_len):
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"key '{key.name}' in table '{table}': {match.value:#x}/{match.prefix_len} "
                "has bits set past its prefix",
            )
        return None if match.prefix_len == 0 else match
    if isinstance(match, Ternary):
        for part in (match.value, match.mask):
            if part < 0 or part >> width:
                raise _out_of_range(table, key, part)
        if match.value & ~match.mask:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"key '{key.name}' in table '{table}': value {match.value:#x} has bits set "
                f"outside mask {match.mask:#x}",
            )
        return None if match.mask == 0 else match
    for bound in (match.low, match.high):
        if bound < 0 or bound >> width:
            raise _out_of_range(table, key, bound)
    if match.low > match.high:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"key '{key.name}' in table '{table}': range low {match.low} is above high "
            f"{match.high}",
        )
    return None if (match.low == 0 and match.high == _mask(width)) else match


# ---------------------------------------------------------------------------
# Matchers: one per way of finding the winning entry.  Each one indexes the
# installed entries (add/remove) and finds the winner for a key tuple.


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
            (_prefix_mask(self._width, plen), self._by_len[plen])
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
                mask |= _mask(width)
            elif isinstance(m, Ternary):
                value |= m.value
                mask |= m.mask
            elif isinstance(m, Lpm):
                value |= m.value
                mask |= _prefix_mask(width, m.prefix_len)
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


_Matcher = _ExactMatcher | _KeylessMatcher | _LpmMatcher | _TernaryMatcher


def _make_matcher(spec: TableSpec, keys: tuple[KeySpec, ...]) -> _Matcher:
    kinds = [k.kind for k in keys]
    if not keys:
        return _KeylessMatcher()
    if "range" in kinds:
        return _RangeMatcher(keys, spec.largest_priority_wins)
    if "ternary" in kinds or "optional" in kinds:
        return _TernaryMatcher(keys, spec.largest_priority_wins)
    if kinds.count("lpm") > 1:
        raise RuntimeConfigError(
            "UNIMPLEMENTED", f"table '{spec.name}' has more than one lpm key and no ternary key"
        )
    if "lpm" in kinds:
        return _LpmMatcher(keys)
    return _ExactMatcher()


class Table:
    """A match-action table: entries, default action, lookup."""

    def __init__(self, spec: TableSpec, profile: ActionProfile | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.profile = profile
        self.now_ns = 0
        self.match_keys = tuple(k for k in spec.keys if k.kind != "selector")
        self.selector_keys = tuple(k for k in spec.keys if k.kind == "selector")
        self.needs_priority = any(k.kind in ("ternary", "range", "optional") for k in spec.keys)
        self.actions = {a.name: a for a in spec.actions}
        self._entries: dict[tuple[tuple[Match | None, ...], int], TableEntry] = {}
        self._matcher = _make_matcher(spec, self.match_keys)
        self._find = self._matcher.find
        self._seq = itertools.count(1)
        self._idle = spec.supports_idle_timeout
        self.default_entry = TableEntry((), action=spec.default_action)
        self._install_cells(self.default_entry)
        self._miss = LookupResult(False, spec.default_action, None)
        check_action_call(self.name, self.actions, spec.default_action, default=True)

    # -- data plane ---------------------------------------------------------

    def lookup(self, key: tuple[int, ...], selector: tuple[int, ...] = ()) -> LookupResult:
        """Find the entry for ``key`` (one value per match key) and its action.

        ``selector`` holds the values of the selector keys; it is hashed only
        when the entry hit names a group.
        """
        entry = self._find(key)
        if entry is None:
            return self._miss
        if self._idle:
            entry.last_hit_ns = self.now_ns
            entry.idle_notified = False
        result = entry.result
        if result is not None:
            return result
        return self._resolve(entry, selector)

    def _resolve(self, entry: TableEntry, selector: tuple[int, ...]) -> LookupResult:
        profile = self.profile
        assert profile is not None
        if entry.member_id is not None:
            return LookupResult(True, profile.member(entry.member_id), entry)
        assert entry.group_id is not None
        call = profile.choose(entry.group_id, selector)
        if call is None:  # empty group: BMv2 runs no entry action, we run the default
            return LookupResult(False, self._miss.action_call, entry)
        return LookupResult(True, call, entry)

    # -- control plane: entries ---------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> Iterator[TableEntry]:
        """Installed entries, in insertion order."""
        return iter(list(self._entries.values()))

    def read(
        self,
        matches: Sequence[Match | None] | None = None,
        *,
        priority: int = 0,
        action: str | None = None,
        metadata: bytes = b"",
    ) -> list[TableEntry]:
        """Entries selected as a P4Runtime wildcard read does (0/None/b"" match anything)."""
        if matches is not None:
            return [self.get(matches, priority)]
        return [
            e
            for e in self._entries.values()
            if priority in (0, e.priority)
            and (action is None or (e.action is not None and e.action.name == action))
            and (not metadata or e.metadata == metadata)
        ]

    def get(self, matches: Sequence[Match | None], priority: int = 0) -> TableEntry:
        """The entry with this identity; NOT_FOUND if there is none."""
        key = (self._canonical(matches), priority)
        entry = self._entries.get(key)
        if entry is None:
            raise RuntimeConfigError(
                "NOT_FOUND", f"table '{self.name}' has no entry {_show(key[0], priority)}"
            )
        return entry

    def insert(self, entry: TableEntry) -> TableEntry:
        """Add an entry; returns the installed copy."""
        if self.spec.is_const:
            raise RuntimeConfigError(
                "PERMISSION_DENIED", f"table '{self.name}' has const entries and takes no others"
            )
        if entry.is_const:
            raise RuntimeConfigError("INVALID_ARGUMENT", "a written entry cannot be const")
        return self._insert(entry)

    def load_initial(self, entries: Iterable[TableEntry]) -> None:
        """Install the program's initial entries (``entries`` / ``const entries``).

        Entries of a const table are made const.  All or nothing: on error the
        table keeps no entry of this call.
        """
        done: list[TableEntry] = []
        try:
            for e in entries:
                done.append(self._insert(replace(e, is_const=e.is_const or self.spec.is_const)))
        except RuntimeConfigError:
            for e in done:
                self._remove(e)
            raise

    def _insert(self, entry: TableEntry) -> TableEntry:
        if not self.match_keys:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"table '{self.name}' has no key and takes no entries"
            )
        matches = self._canonical(entry.matches)
        self._check_priority(entry.priority)
        key = (matches, entry.priority)
        if key in self._entries:
            raise RuntimeConfigError(
                "ALREADY_EXISTS",
                f"table '{self.name}' already has an entry {_show(matches, entry.priority)}",
            )
        self._check_target(entry)
        self._check_resources(entry)
        if len(self._entries) >= self.spec.size:
            raise RuntimeConfigError(
                "RESOURCE_EXHAUSTED", f"table '{self.name}' is full ({self.spec.size} entries)"
            )
        installed = replace(
            entry,
            matches=matches,
            counter=CounterData(entry.counter.packets, entry.counter.bytes)
            if entry.counter
            else CounterData(),
            seq=next(self._seq),
            last_hit_ns=self.now_ns,
            idle_notified=False,
            meter=None,
            result=None,
        )
        self._install_cells(installed)
        self._set_result(installed)
        self._ref(installed, +1)
        self._entries[key] = installed
        self._matcher.add(installed)
        return installed

    def modify(self, entry: TableEntry) -> TableEntry:
        """Change the entry with ``entry``'s identity; returns the live entry.

        With no action, member or group the action is kept (P4Runtime), and
        only metadata, idle timeout and direct resources change.
        """
        current = self.get(entry.matches, entry.priority)
        has_target = not (
            entry.action is None and entry.member_id is None and entry.group_id is None
        )
        if entry.is_const:
            raise RuntimeConfigError("INVALID_ARGUMENT", "a written entry cannot be const")
        if current.is_const and has_target:
            raise RuntimeConfigError(
                "PERMISSION_DENIED",
                f"entry {_show(current.matches, current.priority)} of table '{self.name}' "
                "is const: only its direct resources can change",
            )
        if has_target:
            self._check_target(entry)
        self._check_resources(entry)
        if has_target:
            self._ref(current, -1)
            current.action, current.member_id, current.group_id = (
                entry.action,
                entry.member_id,
                entry.group_id,
            )
            self._ref(current, +1)
            self._set_result(current)
        if not current.is_const:
            current.metadata = entry.metadata
            current.idle_timeout_ns = entry.idle_timeout_ns
        if entry.counter is not None:
            current.counter = CounterData(entry.counter.packets, entry.counter.bytes)
        if self.spec.direct_meter is not None:
            current.meter_config = entry.meter_config
            assert current.meter is not None
            current.meter.configure(entry.meter_config)
        return current

    def delete(self, entry: TableEntry) -> TableEntry:
        """Remove the entry with ``entry``'s identity; returns the removed entry."""
        current = self.get(entry.matches, entry.priority)
        if self.spec.is_const or current.is_const:
            raise RuntimeConfigError(
                "PERMISSION_DENIED",
                f"entry {_show(current.matches, current.priority)} of table '{self.name}' is const",
            )
        self._remove(current)
        return current

    def _remove(self, entry: TableEntry) -> None:
        del self._entries[entry.key]
        self._matcher.remove(entry)
        self._ref(entry, -1)

    def clear(self) -> None:
        """Remove every non-const entry and reset the default action."""
        for entry in list(self._entries.values()):
            if not entry.is_const:
                self._remove(entry)
        self._set_default(self.spec.default_action)

    # -- control plane: default action --------------------------------------

    @property
    def default_action(self) -> ActionCall:
        return self._miss.action_call

    def set_default(self, action: ActionCall) -> None:
        """Change the action run on a miss; PERMISSION_DENIED if it is const."""
        if self.spec.default_is_const:
            raise RuntimeConfigError(
                "PERMISSION_DENIED", f"the default action of table '{self.name}' is const"
            )
        check_action_call(self.name, self.actions, action, default=True)
        self._set_default(action)

    def reset_default(self) -> None:
        """Restore the program's default action and the default entry's resources."""
        if self.spec.default_is_const:
            raise RuntimeConfigError(
                "PERMISSION_DENIED", f"the default action of table '{self.name}' is const"
            )
        self._set_default(self.spec.default_action)
        self.default_entry.counter = CounterData()
        self.default_entry.meter_config = None
        if self.default_entry.meter is not None:
            self.default_entry.meter.configure(None)

    def _set_default(self, action: ActionCall) -> None:
        self.default_entry.action = action
        self._miss = LookupResult(False, action, None)

    # -- idle timeout --------------------------------------------------------

    def expired_entries(self, now_ns: int) -> list[TableEntry]:
        """Entries idle for at least their timeout, each reported once until hit again."""
        expired = []
        for entry in self._entries.values():
            if (
                entry.idle_timeout_ns > 0
                and not entry.idle_notified
                and now_ns - entry.last_hit_ns >= entry.idle_timeout_ns
            ):
                entry.idle_notified = True
                expired.append(entry)
        return expired

    def time_since_last_hit(self, entry: TableEntry, now_ns: int) -> int:
        return max(0, now_ns - entry.last_hit_ns)

    # -- checks ----------------------------------------------------------------

    def _canonical(self, matches: Sequence[Match | None]) -> tuple[Match | None, ...]:
        if len(matches) != len(self.match_keys):
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"table '{self.name}' has {len(self.match_keys)} match key(s), "
                f"got {len(matches)} match(es)",
            )
        return tuple(
            _canonical_match(self.name, k, m) for k, m in zip(self.match_keys, matches, strict=True)
        )

    def _check_priority(self, priority: int) -> None:
        if self.needs_priority and priority <= 0:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"entries of table '{self.name}' need a priority > 0, got {priority}",
            )
        if not self.needs_priority and priority != 0:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"table '{self.name}' has no ternary, range or optional key: priority must be 0",
            )

    def _check_target(self, entry: TableEntry) -> None:
        """Check what the entry runs: an action, or a member or group of the profile."""
        targets = sum(x is not None for x in (entry.action, entry.member_id, entry.group_id))
        if targets != 1:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"an entry of table '{self.name}' needs exactly one of action, member, group",
            )
        if self.spec.implementation is None:
            if entry.action is None:
                raise RuntimeConfigError(
                    "INVALID_ARGUMENT",
                    f"table '{self.name}' is direct: its entries take an action, not a "
                    "member or group",
                )
            check_action_call(self.name, self.actions, entry.action, default=False)
            return
        if entry.action is not None:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"table '{self.name}' is implemented by '{self.spec.implementation}': "
                "its entries name a member or a group",
            )
        profile = self.profile
        if profile is None:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION",
                f"table '{self.name}' is not bound to '{self.spec.implementation}'",
            )
        if entry.member_id is not None:
            profile.member(entry.member_id)  # raises NOT_FOUND
        elif entry.group_id is not None:
            profile.group(entry.group_id)  # raises NOT_FOUND, or INVALID_ARGUMENT if no selector

    def _check_resources(self, entry: TableEntry) -> None:
        if entry.counter is not None and self.spec.direct_counter is None:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"table '{self.name}' has no direct counter"
            )
        if entry.meter_config is not None:
            if self.spec.direct_meter is None:
                raise RuntimeConfigError(
                    "INVALID_ARGUMENT", f"table '{self.name}' has no direct meter"
                )
            check_meter_config(entry.meter_config)
        if entry.idle_timeout_ns < 0 or (entry.idle_timeout_ns and not self._idle):
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"table '{self.name}' does not support idle timeout "
                f"(idle_timeout_ns={entry.idle_timeout_ns})",
            )

    def _install_cells(self, entry: TableEntry) -> None:
        if entry.counter is None:
            entry.counter = CounterData()
        if self.spec.direct_meter is not None:
            entry.meter = MeterCell(entry.meter_config)

    def _set_result(self, entry: TableEntry) -> None:
        entry.result = LookupResult(True, entry.action, entry) if entry.action is not None else None

    def _ref(self, entry: TableEntry, delta: int) -> None:
        if self.profile is None:
            return
        if entry.member_id is not None:
            self.profile.ref_member(entry.member_id, delta)
        elif entry.group_id is not None:
            self.profile.ref_group(entry.group_id, delta)


def _show(matches: Sequence[Match | None], priority: int) -> str:
    parts = ", ".join("*" if m is None else _show_match(m) for m in matches)
    return f"({parts})" + (f" priority {priority}" if priority else "")


def _show_match(m: Match) -> str:
    if isinstance(m, Exact | Optional):
        return f"{m.value:#x}"
    if isinstance(m, Lpm):
        return f"{m.value:#x}/{m.prefix_len}"
    if isinstance(m, Ternary):
        return f"{m.value:#x}&&&{m.mask:#x}"
    return f"{m.low:#x}..{m.high:#x}"
