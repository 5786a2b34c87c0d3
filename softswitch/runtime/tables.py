"""Match-action tables: the data structures, with no knowledge of P4 syntax.

STUB: signatures are final; bodies are being filled in.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from softswitch.runtime.externs import CounterData, MeterCell


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


@dataclass(frozen=True, slots=True)
class KeySpec:
    name: str
    width: int
    kind: MatchKind


class ActionScope(enum.Enum):
    TABLE_AND_DEFAULT = "TABLE_AND_DEFAULT"
    TABLE_ONLY = "TABLE_ONLY"
    DEFAULT_ONLY = "DEFAULT_ONLY"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    name: str
    params: tuple[tuple[str, int], ...] = ()
    scope: ActionScope = ActionScope.TABLE_AND_DEFAULT


@dataclass(frozen=True, slots=True)
class ActionCall:
    name: str
    args: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TableSpec:
    name: str
    keys: tuple[KeySpec, ...]
    actions: tuple[ActionSpec, ...]
    default_action: ActionCall
    size: int = 1024
    default_is_const: bool = False
    is_const: bool = False
    implementation: str | None = None
    direct_counter: str | None = None
    direct_meter: str | None = None
    supports_idle_timeout: bool = False


@dataclass(slots=True, eq=False)
class TableEntry:
    matches: tuple[Match | None, ...]
    priority: int = 0
    action: ActionCall | None = None
    member_id: int | None = None
    group_id: int | None = None
    idle_timeout_ns: int = 0
    metadata: bytes = b""
    counter: CounterData = field(default_factory=CounterData)
    meter: MeterCell | None = None
    last_hit_ns: int = 0
    is_const: bool = False


@dataclass(frozen=True, slots=True)
class LookupResult:
    hit: bool
    action_call: ActionCall
    entry: TableEntry | None


class Table:
    def __init__(self, spec: TableSpec, profile: object | None = None) -> None:
        self.spec = spec
        self.now_ns = 0

    @property
    def match_keys(self) -> tuple[KeySpec, ...]:
        raise NotImplementedError

    @property
    def needs_priority(self) -> bool:
        raise NotImplementedError

    def insert(self, entry: TableEntry) -> TableEntry:
        raise NotImplementedError

    def modify(self, entry: TableEntry) -> TableEntry:
        raise NotImplementedError

    def delete(self, entry: TableEntry) -> TableEntry:
        raise NotImplementedError

    def get(self, matches: Sequence[Match | None], priority: int = 0) -> TableEntry:
        raise NotImplementedError

    def entries(self) -> Iterator[TableEntry]:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def default_action(self) -> ActionCall:
        raise NotImplementedError

    def set_default(self, action: ActionCall) -> None:
        raise NotImplementedError

    def reset_default(self) -> None:
        raise NotImplementedError

    def lookup(self, key: tuple[int, ...], selector: tuple[int, ...] = ()) -> LookupResult:
        raise NotImplementedError

    def expired_entries(self, now_ns: int) -> list[TableEntry]:
        raise NotImplementedError
