"""Match values and key fields, and P4Runtime's rules for them.

A key field of a table entry holds :class:`Exact`, :class:`Lpm`,
:class:`Ternary`, :class:`Range` or :class:`Optional`, or None for "don't
care".  :func:`canonical_match` checks one against its :class:`KeySpec` (a
value that does not fit the width is OUT_OF_RANGE; bits set past an LPM
prefix or outside a ternary mask, a range with low above high, or a wildcard
exact field are INVALID_ARGUMENT) and returns P4Runtime's canonical form, in
which every don't-care form (prefix length 0, mask 0, the full range) is
None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from softswitch.errors import RuntimeConfigError


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


def mask_of(width: int) -> int:
    return (1 << width) - 1


def prefix_mask(width: int, prefix_len: int) -> int:
    return mask_of(width) ^ mask_of(width - prefix_len)


def _out_of_range(table: str, key: KeySpec, value: int) -> RuntimeConfigError:
    return RuntimeConfigError(
        "OUT_OF_RANGE",
        f"value {value:#x} of key '{key.name}' in table '{table}' does not fit in {key.width} bits",
    )


def canonical_match(table: str, key: KeySpec, match: Match | None) -> Match | None:  # noqa: C901 - one case per match kind, as P4Runtime spells them
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
        if match.value & ~prefix_mask(width, match.prefix_len):
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
    return None if (match.low == 0 and match.high == mask_of(width)) else match


def show_key(matches: Sequence[Match | None], priority: int) -> str:
    parts = ", ".join("*" if m is None else show_match(m) for m in matches)
    return f"({parts})" + (f" priority {priority}" if priority else "")


def show_match(m: Match) -> str:
    if isinstance(m, Exact | Optional):
        return f"{m.value:#x}"
    if isinstance(m, Lpm):
        return f"{m.value:#x}/{m.prefix_len}"
    if isinstance(m, Ternary):
        return f"{m.value:#x}&&&{m.mask:#x}"
    return f"{m.low:#x}..{m.high:#x}"
