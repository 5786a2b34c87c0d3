"""A neutral description of a program's control-plane objects.

This is the seam between the front-end (:mod:`softswitch.p4info.extract` reads an
``ir.Program``) and the P4Info writer (:mod:`softswitch.p4info.emit`). It holds
what P4Info needs and nothing of protobuf: names, explicit ``@id``\\ s,
annotations, widths, types. Ids and aliases are *not* here; the writer computes
them from the whole model, as p4c's symbol table does.

Order matters and is p4c's: every tuple lists its objects in the order p4c would
add them to the P4Info message (the evaluated blocks breadth-first: parser,
controls, then their tables and extern instances, each in declaration order).
Objects marked ``hidden`` (``@hidden``) take part in id assignment and aliases
but are not written out, as in p4c.

Annotations are kept as p4c prints them (``@noWarn("unused")``), with their name
beside so that the writer can leave out the ones P4Info represents elsewhere
(``@name``, ``@id``, ``@brief``, ``@description``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from softswitch.errors import UNKNOWN_LOC, Loc

# ---------------------------------------------------------------------------
# annotations and documentation


@dataclass(frozen=True, slots=True)
class Annotation:
    """An unstructured annotation: its name and its text as P4 source (``@x(1)``)."""

    name: str
    text: str


ExprValue = str | int | bool


@dataclass(frozen=True, slots=True)
class StructuredAnnotation:
    """A structured annotation ``@name[...]``: empty, a list of literals, or key=literal pairs."""

    name: str
    expressions: tuple[ExprValue, ...] = ()
    kv_pairs: tuple[tuple[str, ExprValue], ...] = ()


@dataclass(frozen=True, slots=True)
class Documentation:
    """The ``@brief`` and ``@description`` of a declaration."""

    brief: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Annotations:
    """Every annotation of one declaration, in source order, and its documentation."""

    items: tuple[Annotation, ...] = ()
    structured: tuple[StructuredAnnotation, ...] = ()
    doc: Documentation | None = None

    def has(self, name: str) -> bool:
        """True if an annotation called ``name`` is present."""
        return any(a.name == name for a in self.items) or any(
            s.name == name for s in self.structured
        )


NO_ANNOTATIONS = Annotations()

# ---------------------------------------------------------------------------
# types (P4DataTypeSpec and P4TypeInfo)


@dataclass(frozen=True, slots=True)
class BitsType:
    """``bit<W>`` or, when ``signed``, ``int<W>``."""

    width: int
    signed: bool = False


@dataclass(frozen=True, slots=True)
class VarbitType:
    """``varbit<W>``."""

    max_width: int


@dataclass(frozen=True, slots=True)
class BoolType:
    """``bool``."""


@dataclass(frozen=True, slots=True)
class ErrorType:
    """``error``."""


NamedKind = Literal["struct", "header", "header_union", "enum", "serializable_enum", "new_type"]


@dataclass(frozen=True, slots=True)
class NamedType:
    """A reference by name to a type described in :class:`TypeInfo`."""

    kind: NamedKind
    name: str


@dataclass(frozen=True, slots=True)
class TupleType:
    """A tuple or list type."""

    members: tuple[DataType, ...]


@dataclass(frozen=True, slots=True)
class StackType:
    """A stack of headers (``kind="header"``) or of header unions."""

    kind: Literal["header", "header_union"]
    name: str
    size: int


DataType = BitsType | VarbitType | BoolType | ErrorType | NamedType | TupleType | StackType


@dataclass(frozen=True, slots=True)
class StructInfo:
    """The members of a struct, in declaration order."""

    members: tuple[tuple[str, DataType], ...]


@dataclass(frozen=True, slots=True)
class HeaderInfo:
    """The (flattened) fields of a header; each is bit, int or varbit."""

    members: tuple[tuple[str, BitsType | VarbitType], ...]


@dataclass(frozen=True, slots=True)
class HeaderUnionInfo:
    """The members of a header union: (member name, header type name)."""

    members: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class SerEnumInfo:
    """A serializable enum: its underlying width and (member, value) pairs."""

    width: int
    members: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Translation:
    """``@p4runtime_translation(uri, W)``; ``sdn_bitwidth`` None means ``string``."""

    uri: str
    sdn_bitwidth: int | None


@dataclass(frozen=True, slots=True)
class NewTypeInfo:
    """A ``type`` declaration: translated, or represented by its original type."""

    original: DataType | None
    translation: Translation | None = None
    annotations: Annotations = NO_ANNOTATIONS


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """``P4Info.type_info``: the named types that other entries refer to."""

    structs: tuple[tuple[str, StructInfo], ...] = ()
    headers: tuple[tuple[str, HeaderInfo], ...] = ()
    header_unions: tuple[tuple[str, HeaderUnionInfo], ...] = ()
    enums: tuple[tuple[str, tuple[str, ...]], ...] = ()
    errors: tuple[str, ...] | None = None
    serializable_enums: tuple[tuple[str, SerEnumInfo], ...] = ()
    new_types: tuple[tuple[str, NewTypeInfo], ...] = ()


# ---------------------------------------------------------------------------
# entities


MatchKind = Literal["exact", "lpm", "ternary", "range", "optional", "selector"] | str


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotated:
    """What every P4Info object with an id carries: its ``@id`` and its annotations.

    The fields are keyword-only, so that each object's own fields come first.
    """

    explicit_id: int | None = None
    annotations: Annotations = NO_ANNOTATIONS


@dataclass(frozen=True, slots=True, kw_only=True)
class Entity(Annotated):
    """A top-level P4Info entity, which also has a place in the source."""

    loc: Loc = UNKNOWN_LOC


@dataclass(frozen=True, slots=True)
class MatchField(Annotated):
    """One key element of a table, or one field of a value set.

    ``match_kind`` is the P4 match_kind name; ``selector`` fields are not written
    but still take a position in the id numbering, as in p4c. ``type_name`` is the
    name of a ``type`` (new type) when the field has one.
    """

    name: str
    bitwidth: int
    match_kind: MatchKind
    type_name: str | None = None


@dataclass(frozen=True, slots=True)
class Param(Annotated):
    """An action parameter; ``bitwidth`` None for a (non-serializable) enum."""

    name: str
    bitwidth: int | None
    type_name: str | None = None


@dataclass(frozen=True, slots=True)
class Action(Entity):
    """An action, with its fully qualified control-plane name."""

    name: str
    params: tuple[Param, ...] = ()
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class ActionRef:
    """An entry of a table's ``actions`` list, with the annotations written on it."""

    name: str
    annotations: Annotations = NO_ANNOTATIONS


@dataclass(frozen=True, slots=True)
class ActionCall:
    """An action with constant arguments (the table's initial default action)."""

    name: str
    args: tuple[tuple[int, int], ...] = ()
    """(bit width, value) of each argument, in parameter order."""


@dataclass(frozen=True, slots=True)
class Table(Entity):
    """A match-action table."""

    name: str
    match_fields: tuple[MatchField, ...] = ()
    action_refs: tuple[ActionRef, ...] = ()
    size: int = 1024
    default_action: ActionCall | None = None
    default_action_const: bool = False
    is_const_table: bool = False
    has_initial_entries: bool = False
    implementation: str | None = None
    direct_counter: str | None = None
    direct_meter: str | None = None
    idle_timeout: bool = False
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class ActionProfile(Entity):
    """An ``action_profile`` or (``with_selector``) ``action_selector`` instance."""

    name: str
    size: int
    with_selector: bool = False
    max_group_size: int | None = None
    selector_size_semantics: str | None = None
    """``"sum_of_weights"`` or ``"sum_of_members"`` (``@selector_size_semantics``)."""
    max_member_weight: int | None = None


CounterUnit = Literal["packets", "bytes", "packets_and_bytes", ""]
MeterUnit = Literal["packets", "bytes", ""]


@dataclass(frozen=True, slots=True)
class ExternArray(Entity):
    """An indirect counter or meter array: ``size`` cells of ``unit``.

    :class:`Counter` and :class:`Meter` (and :class:`DirectCounter` and
    :class:`DirectMeter` of :class:`DirectExtern`) add no field of their own:
    they are plain subclasses, which keep the dataclass's methods and slots.
    """

    name: str
    unit: str
    size: int
    index_type_name: str | None = None


@dataclass(frozen=True, slots=True)
class DirectExtern(Entity):
    """A direct counter or meter: one cell per entry of ``table``."""

    name: str
    unit: str
    table: str


class Counter(ExternArray):
    """An indirect ``counter`` array."""

    __slots__ = ()


class DirectCounter(DirectExtern):
    """A ``direct_counter`` attached to ``table``."""

    __slots__ = ()


class Meter(ExternArray):
    """An indirect ``meter`` array."""

    __slots__ = ()


class DirectMeter(DirectExtern):
    """A ``direct_meter`` attached to ``table``."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Register(Entity):
    """A ``register`` array of ``type_spec`` values."""

    name: str
    type_spec: DataType
    size: int
    index_type_name: str | None = None


@dataclass(frozen=True, slots=True)
class Digest(Entity):
    """A ``digest<T>()`` call site's data type, named after ``T``."""

    name: str
    type_spec: DataType


@dataclass(frozen=True, slots=True)
class PacketMetadata(Annotated):
    """One field of a controller header."""

    name: str
    bitwidth: int
    type_name: str | None = None
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class ControllerHeader(Entity):
    """A header type annotated ``@controller_header("packet_in")``.

    ``name`` is the type's control-plane name (what p4c hashes for the id);
    ``controller_name`` is the annotation's argument (what P4Info shows).
    """

    name: str
    controller_name: str
    metadata: tuple[PacketMetadata, ...] = ()
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class ValueSet(Entity):
    """A parser ``value_set``; ``matches`` of a bit<W> element is one unnamed field."""

    name: str
    size: int
    matches: tuple[MatchField, ...] = ()


@dataclass(frozen=True, slots=True)
class PkgInfo:
    """``P4Info.pkg_info``: the architecture and the ``@pkginfo`` of ``main``."""

    arch: str = "v1model"
    name: str = ""
    version: str = ""
    organization: str = ""
    contact: str = ""
    url: str = ""
    annotations: Annotations = NO_ANNOTATIONS


@dataclass(frozen=True, slots=True)
class Model:
    """Every control-plane object of one program, each list in p4c's order."""

    pkg_info: PkgInfo | None = field(default_factory=PkgInfo)
    tables: tuple[Table, ...] = ()
    actions: tuple[Action, ...] = ()
    action_profiles: tuple[ActionProfile, ...] = ()
    counters: tuple[Counter, ...] = ()
    direct_counters: tuple[DirectCounter, ...] = ()
    meters: tuple[Meter, ...] = ()
    direct_meters: tuple[DirectMeter, ...] = ()
    controller_headers: tuple[ControllerHeader, ...] = ()
    value_sets: tuple[ValueSet, ...] = ()
    registers: tuple[Register, ...] = ()
    digests: tuple[Digest, ...] = ()
    #: None when p4c would never have touched ``P4Info.type_info`` (no table, no
    #: action parameter, no extern instance, no extern function call...): then
    #: the message has no ``type_info`` at all, not even an empty one.
    type_info: TypeInfo | None = field(default_factory=TypeInfo)
