"""The P4_16 types the checker computes, and the operations on them.

The checker monomorphises: every control, parser, function and extern instance
is checked with its type parameters bound to concrete types, so the types
below never contain free type variables once checking of a body starts
(:class:`TypeVar` only appears in declarations being specialised).

Two families:

* value types -- :class:`Bits` (``bit<w>``/``int<w>``), :class:`InfInt`
  (the type of unsized integer constants), :class:`Bool`, :class:`Varbit`,
  :class:`Str`, :class:`ErrorT`, :class:`MatchKindT`, :class:`EnumT`
  (plain and serializable), :class:`NewType`, :class:`HeaderT`,
  :class:`UnionT`, :class:`StructT`, :class:`StackT`, :class:`TupleT`;
* object types -- :class:`ExternT`, :class:`BlockT` (a parser, control or
  package), :class:`TableT` with :class:`ApplyResultT` and
  :class:`ActionEnumT` (what its ``apply()`` returns), plus the callable
  :class:`CallableT` (an action, function or method signature).

Scalar types compare structurally (``Bits(8) == Bits(8)``); named aggregate
types compare by identity, because P4 typing of headers and structs is
nominal and each declaration (with given type arguments) is built once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class P4Type:
    """Base of every type."""

    __slots__ = ()

    def __str__(self) -> str:
        return "<type>"


@dataclass(frozen=True, slots=True)
class Bits(P4Type):
    """``bit<width>`` or ``int<width>``; the value is stored as an unsigned pattern."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        """All ones over the width."""
        return (1 << self.width) - 1


@dataclass(frozen=True, slots=True)
class InfInt(P4Type):
    """``int``: arbitrary-precision compile-time integers."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True, slots=True)
class Bool(P4Type):
    """``bool``."""

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class Varbit(P4Type):
    """``varbit<max_width>``."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True, slots=True)
class Str(P4Type):
    """``string``."""

    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True, slots=True)
class Void(P4Type):
    """``void``."""

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, slots=True)
class DontCareT(P4Type):
    """``_`` as a type argument, and the type of ``_`` keysets."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True, slots=True)
class ErrorT(P4Type):
    """``error``; values are the member indices (BMv2's error codes)."""

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True, slots=True)
class MatchKindT(P4Type):
    """``match_kind``."""

    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False, slots=True)
class EnumT(P4Type):
    """An enum; ``underlying`` is set for a serializable enum, whose members map
    to values of that type; plain enum members are numbered from 0."""

    name: str
    members: dict[str, int]
    underlying: Bits | None = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False, slots=True)
class NewType(P4Type):
    """``type T N``: a distinct type represented as ``base``."""

    name: str
    base: P4Type
    annotations: list[Any] = field(default_factory=list)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False, slots=True)
class StructLike(P4Type):
    """Common shape of headers, header unions and structs: ordered named fields."""

    name: str
    fields: dict[str, P4Type]
    annotations: list[Any] = field(default_factory=list)
    field_annotations: dict[str, list[Any]] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False, slots=True)
class HeaderT(StructLike):
    """A header type."""

    def bit_width(self) -> int:
        """The sum of the fixed widths of the fields (varbits count 0)."""
        return sum(bit_width(t) for t in self.fields.values() if not isinstance(t, Varbit))


@dataclass(eq=False, slots=True)
class UnionT(StructLike):
    """A header union type."""


@dataclass(eq=False, slots=True)
class StructT(StructLike):
    """A struct type."""


@dataclass(frozen=True, slots=True)
class StackT(P4Type):
    """``element[size]``."""

    element: P4Type
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(frozen=True, slots=True)
class TupleT(P4Type):
    """``tuple<...>`` and the type of list expressions."""

    elements: tuple[P4Type, ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.elements))}>"


@dataclass(frozen=True, slots=True)
class TypeVar(P4Type):
    """A type parameter not yet bound."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of a callable: name, direction ("" when directionless), type."""

    name: str
    direction: str
    type: P4Type
    has_default: bool = False


@dataclass(eq=False, slots=True)
class ExternT(P4Type):
    """An extern object type with its type arguments bound."""

    name: str
    type_args: tuple[P4Type, ...] = ()
    decl: Any = None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ExternT)
            and other.name == self.name
            and other.type_args == self.type_args
        )

    def __hash__(self) -> int:
        return hash((self.name, self.type_args))

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<{', '.join(map(str, self.type_args))}>"
        return self.name


@dataclass(eq=False, slots=True)
class BlockT(P4Type):
    """A parser, control or package type (or declaration) with bound type arguments."""

    kind: str  # "parser" | "control" | "package"
    name: str
    params: tuple[Param, ...]
    type_args: tuple[P4Type, ...] = ()
    decl: Any = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False, slots=True)
class TableT(P4Type):
    """The type of a table instance."""

    name: str

    def __str__(self) -> str:
        return f"table {self.name}"


@dataclass(frozen=True, slots=True)
class ApplyResultT(P4Type):
    """The struct returned by ``table.apply()``: ``hit``, ``miss``, ``action_run``."""

    table: str

    def __str__(self) -> str:
        return f"apply_result({self.table})"


@dataclass(frozen=True, slots=True)
class ActionEnumT(P4Type):
    """The type of ``t.apply().action_run``."""

    table: str

    def __str__(self) -> str:
        return f"action_list({self.table})"


@dataclass(frozen=True, slots=True)
class CallableT(P4Type):
    """An action, function or method signature."""

    kind: str
    params: tuple[Param, ...]
    ret: P4Type

    def __str__(self) -> str:
        return self.kind


BOOL = Bool()
INFINT = InfInt()
STRING = Str()
VOID = Void()
ERROR = ErrorT()
MATCH_KIND = MatchKindT()
DONTCARE = DontCareT()


def strip_newtype(t: P4Type) -> P4Type:
    """The representation type of ``t`` (through any number of newtypes)."""
    while isinstance(t, NewType):
        t = t.base
    return t


def value_type(t: P4Type) -> P4Type:
    """``t`` without newtypes, and serializable enums as their underlying type."""
    t = strip_newtype(t)
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying
    return t


def bit_width(t: P4Type) -> int:
    """The width in bits of a fixed-width serializable type (0 if none)."""
    t = strip_newtype(t)
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, Bool):
        return 1
    if isinstance(t, EnumT):
        return t.underlying.width if t.underlying is not None else 0
    if isinstance(t, Varbit):
        return t.max_width
    if isinstance(t, HeaderT | StructT):
        return sum(bit_width(f) for f in t.fields.values())
    if isinstance(t, StackT):
        return t.size * bit_width(t.element)
    if isinstance(t, TupleT):
        return sum(bit_width(e) for e in t.elements)
    return 0


def size_in_bits(t: P4Type, *, largest: bool) -> int:
    """``minSizeInBits`` (varbits count 0) or ``maxSizeInBits`` (their maximum)."""
    t = strip_newtype(t)
    if isinstance(t, Varbit):
        return t.max_width if largest else 0
    if isinstance(t, UnionT):
        sizes = [size_in_bits(f, largest=largest) for f in t.fields.values()]
        return (max(sizes) if largest else min(sizes)) if sizes else 0
    if isinstance(t, HeaderT | StructT):
        return sum(size_in_bits(f, largest=largest) for f in t.fields.values())
    if isinstance(t, StackT):
        return t.size * size_in_bits(t.element, largest=largest)
    if isinstance(t, TupleT):
        return sum(size_in_bits(e, largest=largest) for e in t.elements)
    return bit_width(t)


def is_integral(t: P4Type) -> bool:
    """Whether ``t`` is ``bit<w>``, ``int<w>`` or ``int``."""
    return isinstance(t, Bits | InfInt)


def is_composite(t: P4Type) -> bool:
    """Whether values of ``t`` are mutable objects (copied on assignment)."""
    return isinstance(t, StructLike | StackT | TupleT)


def contains_headers(t: P4Type) -> bool:
    """Whether ``t`` is or contains a header (for ``out`` initialisation)."""
    if isinstance(t, HeaderT | UnionT):
        return True
    if isinstance(t, StructT):
        return any(contains_headers(f) for f in t.fields.values())
    if isinstance(t, StackT):
        return True
    if isinstance(t, TupleT):
        return any(contains_headers(e) for e in t.elements)
    return False


def to_signed(value: int, width: int) -> int:
    """Interpret an unsigned ``width``-bit pattern as two's complement."""
    sign = 1 << (width - 1)
    return (value ^ sign) - sign


def fits(value: int, t: Bits) -> bool:
    """Whether the integer ``value`` is representable in ``t`` without loss."""
    if t.signed:
        return -(1 << (t.width - 1)) <= value < (1 << (t.width - 1))
    return 0 <= value < (1 << t.width)
