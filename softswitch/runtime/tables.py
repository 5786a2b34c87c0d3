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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import (
    NO_ACTION,
    ActionCall,
    ActionScope,
    ActionSpec,
    check_action_call,
)
from softswitch.runtime.externs import CounterData, MeterCell, MeterConfig, check_meter_config
from softswitch.runtime.matchers import make_matcher
from softswitch.runtime.matches import (
    Exact,
    KeySpec,
    Lpm,
    Match,
    MatchKind,
    Optional,
    Range,
    Ternary,
    canonical_match,
    show_key,
)

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


class Table:
    """A match-action table: entries, default action, lookup."""

    def __init__(self, spec: TableSpec, profile: ActionProfile | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.profile = profile
        self.now_ns = 0
        self.match_keys = tuple(k for k in spec.keys if k.kind != "selector")
        self.selector_keys = tuple(k for k in spec.keys if k.kind == "selector")
        self._selector_widths = tuple(k.width for k in self.selector_keys)
        self.needs_priority = any(k.kind in ("ternary", "range", "optional") for k in spec.keys)
        self.actions = {a.name: a for a in spec.actions}
        self._entries: dict[tuple[tuple[Match | None, ...], int], TableEntry] = {}
        self._matcher = make_matcher(spec.name, self.match_keys, spec.largest_priority_wins)
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
        call = profile.choose(entry.group_id, selector, self._selector_widths)
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
                "NOT_FOUND", f"table '{self.name}' has no entry {show_key(key[0], priority)}"
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
                f"table '{self.name}' already has an entry {show_key(matches, entry.priority)}",
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
                f"entry {show_key(current.matches, current.priority)} of table '{self.name}' "
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
                f"entry {show_key(current.matches, current.priority)} "
                f"of table '{self.name}' is const",
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
            canonical_match(self.name, k, m) for k, m in zip(self.match_keys, matches, strict=True)
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
