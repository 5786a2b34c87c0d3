"""P4Runtime ids and aliases, assigned exactly as p4c's ``P4RuntimeSymbolTable`` does.

Every control-plane object is a *symbol*: a resource type (the 8-bit prefix of
``p4.config.v1.P4Ids``), a fully qualified name, and perhaps an ``@id``.
Assignment happens in two passes over all the symbols of a program:

1. Symbols are added in collection order. The first symbol of a given
   (type, name) wins and later duplicates are ignored. An ``@id`` is taken as
   given, with the type prefix or'ed into its top byte (a different non-zero top
   byte is an error), and no two ``@id``\\ s may be equal.
2. The types are then visited in ascending prefix order and, inside a type,
   the names still without an id in byte-sorted order. Each gets
   ``prefix << 24 | jenkins(name) & 0xFFFFFF``; on a collision with any id
   assigned so far, of any type, the *hash value* is incremented (so the prefix
   never changes) until the id is free.

Aliases are the shortest dotted suffix of a name that no other symbol name (of
any type) shares: p4c keeps one suffix tree over every symbol it collected.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from softswitch.errors import UNKNOWN_LOC, Loc, P4SourceError


class Prefix(IntEnum):
    """The resource-type byte of a P4Runtime id (``p4.config.v1.P4Ids.Prefix``)."""

    ACTION = 0x01
    TABLE = 0x02
    VALUE_SET = 0x03
    CONTROLLER_HEADER = 0x04
    ACTION_PROFILE = 0x11
    COUNTER = 0x12
    DIRECT_COUNTER = 0x13
    METER = 0x14
    DIRECT_METER = 0x15
    REGISTER = 0x16
    DIGEST = 0x17


_MASK24 = 0xFFFFFF
_MASK32 = 0xFFFFFFFF


def jenkins_hash(name: str) -> int:
    """Bob Jenkins' one-at-a-time hash of the UTF-8 bytes of ``name`` (32 bits)."""
    h = 0
    for byte in name.encode("utf-8"):
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


@dataclass(frozen=True, slots=True)
class Symbol:
    """One control-plane object as the id allocator sees it."""

    prefix: Prefix
    name: str
    explicit_id: int | None = None
    loc: Loc = UNKNOWN_LOC


@dataclass(slots=True)
class _SuffixNode:
    instances: int = 0
    edges: dict[str, _SuffixNode] = field(default_factory=dict)


class _SuffixSet:
    """p4c's tree of dotted suffixes: one node per suffix, counting the names through it."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._root = _SuffixNode()

    def add(self, name: str) -> None:
        if name in self._names:
            return
        self._names.add(name)
        node = self._root
        for component in reversed(name.split(".")):
            node = node.edges.setdefault(component, _SuffixNode())
            node.instances += 1

    def shortest_unique_suffix(self, name: str) -> str:
        components = name.split(".")
        needed = 0
        node = self._root
        for component in reversed(components):
            node = node.edges[component]
            needed += 1
            if node.instances < 2:
                break
        return ".".join(components[len(components) - needed :])


class SymbolTable:
    """Ids and aliases for every symbol of one program (built by :func:`assign_ids`)."""

    def __init__(self, ids: dict[tuple[Prefix, str], int], suffixes: _SuffixSet) -> None:
        self._ids = ids
        self._suffixes = suffixes

    def id_of(self, prefix: Prefix, name: str) -> int:
        """The id of the symbol ``name`` of type ``prefix``; KeyError if it was never added."""
        return self._ids[(prefix, name)]

    def alias_of(self, name: str) -> str:
        """The shortest dotted suffix of ``name`` that identifies it among all symbols."""
        return self._suffixes.shortest_unique_suffix(name)

    def items(self) -> list[tuple[Prefix, str, int]]:
        """Every (type, name, id), in the order the symbols were first added."""
        return [(prefix, name, id_) for (prefix, name), id_ in self._ids.items()]


def _explicit_id(symbol: Symbol) -> int | None:
    if symbol.explicit_id is None:
        return None
    value = symbol.explicit_id
    if not 0 <= value <= _MASK32:
        raise P4SourceError(symbol.loc, f"{symbol.name}: @id should be an unsigned integer")
    type_prefix = int(symbol.prefix) << 24
    top = value & 0xFF000000
    if top not in (0, type_prefix):
        raise P4SourceError(symbol.loc, f"{symbol.name}: @id has the wrong 8-bit prefix")
    return value | type_prefix


def assign_ids(symbols: Iterable[Symbol]) -> SymbolTable:
    """Assign an id to every symbol, as p4c does; raises P4SourceError on bad ``@id``\\ s."""
    ids: dict[tuple[Prefix, str], int | None] = {}
    used: set[int] = set()
    suffixes = _SuffixSet()
    for symbol in symbols:
        key = (symbol.prefix, symbol.name)
        if key in ids:
            continue
        explicit = _explicit_id(symbol)
        if explicit is not None:
            if explicit in used:
                raise P4SourceError(
                    symbol.loc, f"@id {explicit} is assigned to multiple declarations"
                )
            used.add(explicit)
        ids[key] = explicit
        suffixes.add(symbol.name)

    for prefix in sorted({prefix for prefix, _ in ids}):
        pending = sorted(
            (name for (p, name), id_ in ids.items() if p == prefix and id_ is None),
            key=lambda n: n.encode("utf-8"),
        )
        for name in pending:
            ids[(prefix, name)] = _probe(prefix, jenkins_hash(name), used, name)

    final = {key: id_ for key, id_ in ids.items() if id_ is not None}
    return SymbolTable(final, suffixes)


def _probe(prefix: Prefix, start: int, used: set[int], name: str) -> int:
    value = start
    while True:
        candidate = (int(prefix) << 24) | (value & _MASK24)
        if candidate not in used:
            used.add(candidate)
            return candidate
        value = (value + 1) & _MASK32
        if value == start:
            raise P4SourceError(UNKNOWN_LOC, f"No available id to represent {name} in P4Runtime")
