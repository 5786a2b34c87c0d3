"""The elaborated, typed program: what the interpreter and the P4Info extractor read.

The checker lowers the syntax tree into this IR while it elaborates ``main``:
every parser, control and extern is *instantiated* (constructor arguments
bound, type parameters replaced by concrete types), every expression carries
its :mod:`softswitch.frontend.types` type, constants are folded, and every
control-plane object has its fully qualified name computed as p4c does.

:class:`Program` fields (the contract with ``softswitch.p4info`` and the interpreter):

``tables``
    every :class:`Table` instance, in declaration order (nested instances
    included); ``Table.name`` is the control-plane name (``MyIngress.ipv4_lpm``).
``actions``
    every distinct action by control-plane name (:class:`Action`; ``NoAction``
    appears once even though each control that uses it gets its own copy).
``externs``
    every extern object instance (:class:`ExternInstance`): ``counter``,
    ``direct_counter``, ``meter``, ``direct_meter``, ``register``,
    ``action_profile``, ``action_selector``, ``Checksum16``... with the
    constructor arguments as Python values.
``value_sets``
    every parser ``value_set`` (:class:`ValueSet`).
``digests``
    one :class:`Digest` per struct type passed to ``digest()``, named after
    the type (``mac_learn_digest_t``).
``controller_headers``
    header types annotated ``@controller_header("packet_in")`` (:class:`HeaderT`).
``pipeline``
    the six v1model blocks, by V1Switch parameter name (``p``, ``vr``, ``ig``,
    ``eg``, ``ck``, ``dep``), as :class:`BlockInstance`.
``types``
    every named header, header union, struct, enum and newtype declared.
``errors``
    the error members in code order (index = BMv2 error code).
``annotations`` of objects are :class:`Annotation` with ``name``, ``body`` (the
raw text) and ``args`` (folded constant values where the body is an expression list).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softswitch.errors import UNKNOWN_LOC, Loc
from softswitch.frontend.types import (
    BOOL,
    P4Type,
    Param,
)


@dataclass(frozen=True, slots=True)
class Annotation:
    """A source annotation: ``@name(body)``; ``args`` are constant values or strings."""

    name: str
    body: str = ""
    args: tuple[Any, ...] = ()


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    """The last annotation called ``name``, or None."""
    found = None
    for ann in annotations:
        if ann.name == name:
            found = ann
    return found


# ---------------------------------------------------------------------------
# Expressions


@dataclass(eq=False, slots=True)
class Expr:
    """An expression; ``type`` is its P4 type."""

    type: P4Type
    loc: Loc


@dataclass(eq=False, slots=True)
class Const(Expr):
    """A constant: ints are masked unsigned patterns for ``bit``/``int``;
    enum members and errors are their codes; strings and bools are themselves."""

    value: Any


@dataclass(eq=False, slots=True)
class Var(Expr):
    """A local variable or parameter; ``name`` is unique in its function."""

    name: str


@dataclass(eq=False, slots=True)
class FieldRef(Expr):
    """``base.field`` of a header, union or struct."""

    base: Expr
    field: str


@dataclass(eq=False, slots=True)
class IndexRef(Expr):
    """``base[index]`` of a header stack or tuple."""

    base: Expr
    index: Expr


@dataclass(eq=False, slots=True)
class StackRef(Expr):
    """``stack.next`` or ``stack.last`` (``which``)."""

    base: Expr
    which: str


@dataclass(eq=False, slots=True)
class SliceE(Expr):
    """``base[hi:lo]`` (constant bounds); for ``[b +: w]`` with a runtime
    base, ``dyn_lo`` holds the low bound expression and ``hi - lo + 1`` is the width."""

    base: Expr
    hi: int
    lo: int
    dyn_lo: Expr | None = None


@dataclass(eq=False, slots=True)
class UnOp(Expr):
    """``op operand``: ``!``, ``~``, ``-``."""

    op: str
    operand: Expr


@dataclass(eq=False, slots=True)
class BinOp(Expr):
    """``left op right`` with both operands converted to the operation's type
    (except shifts, whose right operand keeps its own type)."""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False, slots=True)
class CastE(Expr):
    """``(type) expr``: the target is ``self.type``."""

    expr: Expr


@dataclass(eq=False, slots=True)
class Mux(Expr):
    """``cond ? then : else_``."""

    cond: Expr
    then: Expr
    else_: Expr


@dataclass(eq=False, slots=True)
class StructLit(Expr):
    """A struct, header (valid) or tuple value built from expressions, in field order."""

    fields: list[tuple[str, Expr]]


@dataclass(eq=False, slots=True)
class InvalidHdr(Expr):
    """``{#}``: an invalid header or union of ``type``."""


@dataclass(frozen=True, slots=True)
class Arg:
    """An argument bound to a parameter: ``expr`` is None for ``_`` (don't care)."""

    param: Param
    expr: Expr | None


@dataclass(eq=False, slots=True)
class Call(Expr):
    """Any call.  ``kind`` and ``target``:

    * ``"action"`` -- :class:`Action`;
    * ``"function"`` -- :class:`Function`;
    * ``"extern_func"`` -- the extern function's name (``"mark_to_drop"``);
    * ``"method"`` -- ``(receiver, method name)``; ``receiver`` is an
      :class:`InstanceRef` of an extern instance, or an expression
      (``packet``, a header for ``isValid``, a stack for ``push_front``);
    * ``"table"`` -- :class:`Table` (``apply``);
    * ``"block"`` -- :class:`BlockInstance` (a parser or control ``apply``).

    ``type_args`` are the bound type parameters (``hash<O, T, D, M>``...).
    """

    kind: str
    target: Any
    args: list[Arg]
    type_args: tuple[P4Type, ...] = ()


@dataclass(eq=False, slots=True)
class InstanceRef(Expr):
    """A reference to an extern, table, parser or control instance (not a value)."""

    instance: Any


@dataclass(eq=False, slots=True)
class TableResult(Expr):
    """``t.apply().hit`` / ``.miss`` / ``.action_run`` (``which``)."""

    call: Call
    which: str


# ---------------------------------------------------------------------------
# Statements


@dataclass(eq=False, slots=True)
class Stmt:
    """A statement."""

    loc: Loc


@dataclass(eq=False, slots=True)
class Assign(Stmt):
    """``lhs = rhs`` (composite values are copied)."""

    lhs: Expr
    rhs: Expr


@dataclass(eq=False, slots=True)
class CallStmt(Stmt):
    """A call evaluated for its effects."""

    call: Call


@dataclass(eq=False, slots=True)
class VarDecl(Stmt):
    """A local variable; ``init`` None leaves it uninitialised (0 / invalid)."""

    var: Var
    init: Expr | None


@dataclass(eq=False, slots=True)
class If(Stmt):
    """``if (cond) then else else_``."""

    cond: Expr
    then: list[Stmt]
    else_: list[Stmt]


@dataclass(eq=False, slots=True)
class SwitchCase:
    """Labels (constants, or action names for ``action_run``; empty for
    ``default``) and the body; a fall-through label shares the next body."""

    labels: list[Any]
    is_default: bool
    body: list[Stmt]


@dataclass(eq=False, slots=True)
class Switch(Stmt):
    """``switch (expr) { cases }``."""

    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False, slots=True)
class Exit(Stmt):
    """``exit;``."""


@dataclass(eq=False, slots=True)
class Return(Stmt):
    """``return [value];``."""

    value: Expr | None


@dataclass(eq=False, slots=True)
class Loop(Stmt):
    """A ``for`` loop: ``init``; while ``cond``: ``body``; ``updates``."""

    init: list[Stmt]
    cond: Expr | None
    updates: list[Stmt]
    body: list[Stmt]


@dataclass(eq=False, slots=True)
class ForIn(Stmt):
    """``for (x in collection)``: ``var`` takes each element (stack or list)."""

    var: Var
    collection: Expr
    body: list[Stmt]


@dataclass(eq=False, slots=True)
class Break(Stmt):
    """``break;``."""


@dataclass(eq=False, slots=True)
class Continue(Stmt):
    """``continue;``."""


# ---------------------------------------------------------------------------
# Declarations


@dataclass(eq=False, slots=True)
class Action:
    """An action (one copy per control that uses it).  ``name`` is the
    control-plane name; ``params`` bind directional arguments first, then the
    control-plane (directionless) ones."""

    name: str
    local_name: str
    params: list[Var]
    directions: list[str]
    body: list[Stmt]
    annotations: list[Annotation]
    loc: Loc = UNKNOWN_LOC
    uid: str = ""

    @property
    def cp_params(self) -> list[Var]:
        """The directionless parameters, supplied by the control plane."""
        return [p for p, d in zip(self.params, self.directions, strict=True) if d == ""]


@dataclass(eq=False, slots=True)
class Function:
    """A function (specialised for one set of type arguments)."""

    name: str
    params: list[Var]
    directions: list[str]
    ret: P4Type
    body: list[Stmt]
    loc: Loc = UNKNOWN_LOC
    uid: str = ""


@dataclass(eq=False, slots=True)
class TableKey:
    """One key element; ``name`` is the control-plane name (p4c's text of
    the expression, or its ``@name``)."""

    expr: Expr
    name: str
    match_kind: str
    width: int
    annotations: list[Annotation]


@dataclass(eq=False, slots=True)
class TableActionRef:
    """An action in a table's ``actions`` list; ``scope`` is ``""``,
    ``"tableonly"`` or ``"defaultonly"``."""

    action: Action
    scope: str
    annotations: list[Annotation]
    bound_args: list[Expr] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class ConstEntry:
    """A ``const entries`` / ``entries`` row: one keyset per key.

    Each keyset is ``("exact", v)``, ``("ternary", v, mask)``, ``("lpm", v, plen)``,
    ``("range", lo, hi)``, ``("optional", v)`` or ``("dontcare",)``.
    """

    keys: list[tuple[Any, ...]]
    action: Action
    args: list[int]
    priority: int | None
    is_const: bool
    annotations: list[Annotation]
    loc: Loc = UNKNOWN_LOC


@dataclass(eq=False, slots=True)
class Table:
    """A table instance."""

    name: str
    local_name: str
    keys: list[TableKey]
    actions: list[TableActionRef]
    default_action: Action
    default_args: list[int]
    default_const: bool
    entries: list[ConstEntry]
    entries_const: bool
    size: int
    implementation: ExternInstance | None
    direct_counter: ExternInstance | None
    direct_meter: ExternInstance | None
    support_timeout: bool
    custom: dict[str, Any]
    annotations: list[Annotation]
    loc: Loc = UNKNOWN_LOC
    uid: str = ""
    has_size: bool = False
    priority_largest_wins: bool = True


@dataclass(eq=False, slots=True)
class ExternInstance:
    """An extern object: ``type_name`` (``counter``, ``register``...), its bound
    ``type_args`` and constructor ``args`` (Python values: ints, enum member
    names as strings, other instances)."""

    name: str
    local_name: str
    type_name: str
    type_args: tuple[P4Type, ...]
    args: list[Any]
    annotations: list[Annotation]
    loc: Loc = UNKNOWN_LOC
    uid: str = ""
    table: str | None = None


@dataclass(eq=False, slots=True)
class ValueSet:
    """A parser ``value_set<T>(size)``."""

    name: str
    element_type: P4Type
    size: int
    annotations: list[Annotation]
    loc: Loc = UNKNOWN_LOC
    uid: str = ""
    widths: list[int] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Digest:
    """A ``digest<T>(receiver, data)`` type: one per distinct struct type."""

    name: str
    type: P4Type
    loc: Loc = UNKNOWN_LOC


@dataclass(frozen=True, slots=True)
class SelectCaseIR:
    """One select case: keysets (one per key, same shape as :class:`ConstEntry`
    keys, plus ``("value_set", ValueSet)``) or None for default; the next state."""

    keysets: tuple[tuple[Any, ...], ...] | None
    state: str


@dataclass(eq=False, slots=True)
class ParserStateIR:
    """A parser state: statements, then ``select`` (possibly no keys) to ``cases``."""

    name: str
    body: list[Stmt]
    select: list[Expr]
    cases: list[SelectCaseIR]
    loc: Loc = UNKNOWN_LOC


@dataclass(eq=False, slots=True)
class BlockInstance:
    """A parser or control instance with everything it declares."""

    kind: str  # "parser" | "control"
    name: str  # control-plane prefix: "MyIngress" or "MyIngress.c"
    type_name: str
    params: list[Var]
    directions: list[str]
    locals: list[Stmt]
    actions: list[Action]
    tables: list[Table]
    externs: list[ExternInstance]
    blocks: list[BlockInstance]
    value_sets: list[ValueSet]
    body: list[Stmt]
    states: list[ParserStateIR]
    annotations: list[Annotation]
    loc: Loc = UNKNOWN_LOC
    uid: str = ""
    param_names: list[str] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Program:
    """The elaborated program (see the module docstring)."""

    source: str
    tables: list[Table] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    externs: list[ExternInstance] = field(default_factory=list)
    value_sets: list[ValueSet] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)
    controller_headers: list[Any] = field(default_factory=list)
    pipeline: dict[str, BlockInstance] = field(default_factory=dict)
    package: str = ""
    types: dict[str, P4Type] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    all_actions: list[Action] = field(default_factory=list)


TRUE = Const(BOOL, UNKNOWN_LOC, True)
