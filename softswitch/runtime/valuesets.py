"""Parser value sets: a set of match keys that a parser ``select`` tests against.

A :class:`ValueSet` has one or more key fields (a ``value_set<bit<W>>`` has
one exact field; a struct element type has one per member, each with its
``@match`` kind).  The control plane replaces all its members at once
(P4Runtime only allows MODIFY): more members than ``size`` is
RESOURCE_EXHAUSTED, a duplicate ALREADY_EXISTS, and each member follows the
same rules as a table entry's match.  A key is in the set when any member
matches it; no priority is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.matches import (
    Exact,
    KeySpec,
    Lpm,
    Match,
    Optional,
    Range,
    Ternary,
    canonical_match,
    mask_of,
    prefix_mask,
    show_key,
)


class ValueSet:
    """A runtime-programmable set of keys for a parser transition."""

    __slots__ = ("_exact", "_members", "_patterns", "keys", "name", "size")

    def __init__(self, name: str, keys: Sequence[KeySpec], size: int) -> None:
        self.name = name
        self.keys = tuple(keys)
        self.size = size
        self._members: tuple[tuple[Match | None, ...], ...] = ()
        self._exact: frozenset[tuple[int, ...]] = frozenset()
        # members that are not all exact: (value, mask, ranges) over the packed key
        self._patterns: tuple[tuple[int, int, tuple[tuple[int, int, int], ...]], ...] = ()

    @property
    def members(self) -> tuple[tuple[Match | None, ...], ...]:
        return self._members

    def set_members(self, members: Sequence[Sequence[Match | None]]) -> None:
        """Replace every member; on error the set is unchanged."""
        canonical: list[tuple[Match | None, ...]] = []
        for member in members:
            if len(member) != len(self.keys):
                raise RuntimeConfigError(
                    "INVALID_ARGUMENT",
                    f"value set '{self.name}' has {len(self.keys)} field(s), "
                    f"a member has {len(member)}",
                )
            m = tuple(
                canonical_match(self.name, k, v) for k, v in zip(self.keys, member, strict=True)
            )
            if m in canonical:
                raise RuntimeConfigError(
                    "ALREADY_EXISTS",
                    f"duplicate member {show_key(m, 0)} in value set '{self.name}'",
                )
            canonical.append(m)
        if len(canonical) > self.size:
            raise RuntimeConfigError(
                "RESOURCE_EXHAUSTED",
                f"value set '{self.name}' holds at most {self.size} members, got {len(canonical)}",
            )
        exact: set[tuple[int, ...]] = set()
        patterns = []
        for m in canonical:
            if all(isinstance(v, Exact | Optional) for v in m):
                exact.add(tuple(v.value for v in m if isinstance(v, Exact | Optional)))
            else:
                patterns.append(self._pattern(m))
        self._members = tuple(canonical)
        self._exact = frozenset(exact)
        self._patterns = tuple(patterns)

    def _pattern(
        self, member: tuple[Match | None, ...]
    ) -> tuple[int, int, tuple[tuple[int, int, int], ...]]:
        value = mask = 0
        ranges = []
        for i, (m, key) in enumerate(zip(member, self.keys, strict=True)):
            value <<= key.width
            mask <<= key.width
            if isinstance(m, Exact | Optional):
                value |= m.value
                mask |= mask_of(key.width)
            elif isinstance(m, Ternary):
                value |= m.value
                mask |= m.mask
            elif isinstance(m, Lpm):
                value |= m.value
                mask |= prefix_mask(key.width, m.prefix_len)
            elif isinstance(m, Range):
                ranges.append((i, m.low, m.high))
        return value, mask, tuple(ranges)

    def contains(self, key: tuple[int, ...]) -> bool:
        """Whether some member matches ``key`` (one value per field)."""
        if key in self._exact:
            return True
        if not self._patterns:
            return False
        packed = 0
        for v, k in zip(key, self.keys, strict=True):
            packed = (packed << k.width) | v
        for value, mask, ranges in self._patterns:
            if packed & mask == value and all(lo <= key[i] <= hi for i, lo, hi in ranges):
                return True
        return False

    def clear(self) -> None:
        self.set_members(())
