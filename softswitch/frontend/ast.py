"""The untyped syntax tree of a P4_16 program, as the parser builds it.

The tree mirrors the P4_16 grammar (specification v1.2.x, appendix "P4 grammar")
closely enough that a reader can find each production in it, but it drops what
only matters to parsing: parentheses, separators, and the distinction between
``nonTypeName`` and ``typeName`` (which the parser has already resolved).

Four abstract families partition the nodes:

* :class:`Type` -- a type as written in the source (``bit<8>``, ``H[4]``, ``T<U>``);
  nothing is resolved, a :class:`TypeName` is just a path.
* :class:`Expression` -- every value-producing construct, including the keyset
  forms that only appear in ``select`` cases and table entries (``default``,
  ``_``, ``a &&& m``, ``lo .. hi``).  Every expression carries a keyword-only
  ``type`` slot, ``None`` after parsing, that the type checker fills in.
* :class:`Statement` -- everything that may appear in a block, parser state or
  action body, except local declarations, which are :class:`Declaration` nodes;
  a block item is therefore a :data:`StatOrDecl`.
* :class:`Declaration` -- everything with a name in some scope.  A declaration's
  ``loc`` is the location of its *name*, which is where a "duplicate name" or
  "unused" diagnostic should point; other nodes start at their first token.

Every node is a slots dataclass whose first field is ``loc``.  Node lists are
plain ``list`` objects so the parser can build them incrementally; later passes
should treat the tree as read-only and build new structures (the IR) instead.

Operators are kept as their source spelling in ``op`` strings, so the tree can
be printed back and error messages can quote them:

* :class:`Unary` -- ``!``, ``~``, ``-``, ``+``
* :class:`Binary` -- ``*  /  %  +  -  |+|  |-|  ++  <<  >>  <  >  <=  >=  ==  !=
  &  ^  |  &&  ||`` and the keyset operators ``&&&`` (mask) and ``..`` (range)

Direct application of a type (``MyControl.apply(...)``) is a
:class:`MethodCallStatement` whose call's method is
``Member(TypeNameExpression(TypeName(...)), "apply")``; the type checker
tells it apart from an instance's ``apply``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from softswitch.errors import Loc

Direction: TypeAlias = Literal["in", "out", "inout"]

# ---------------------------------------------------------------------------
# Bases


@dataclass(slots=True)
class Node:
    """Any syntax-tree node; ``loc`` is where it is in the original source."""

    loc: Loc


@dataclass(slots=True)
class Type(Node):
    """A type as written in the source."""


@dataclass(slots=True)
class Expression(Node):
    """A value-producing construct; ``type`` is filled in by the type checker."""

    type: object | None = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(slots=True)
class Statement(Node):
    """An executable statement."""


@dataclass(slots=True)
class Declaration(Node):
    """A named entity; ``loc`` is the location of its name."""


# ---------------------------------------------------------------------------
# Names and annotations


@dataclass(slots=True)
class Ident(Node):
    """A bare identifier with its location (error members, type parameters...)."""

    name: str


@dataclass(slots=True)
class Path(Node):
    """A possibly top-level name: ``x`` or ``.x`` (``absolute`` is True for ``.x``)."""

    name: str
    absolute: bool = False

    def __str__(self) -> str:
        return f".{self.name}" if self.absolute else self.name


@dataclass(slots=True)
class KeyValue(Node):
    """One ``key = value`` pair of a structured annotation or struct expression."""

    key: str
    value: Expression


@dataclass(slots=True)
class Annotation(Node):
    """``@name``, ``@name(body)`` or the structured ``@name[k = v, ...]``.

    ``raw`` is the body's token text (tokens joined by single spaces; string
    literals keep their quotes) and is always present, "" for no body.
    ``expressions`` is the body parsed as an expression list when it parses as
    one, else None; ``pairs`` is the key-value list of a structured annotation
    written ``@name[k = v]`` (then ``structured`` is True and ``expressions``
    holds the bracketed expression list of ``@name[e1, e2]`` if that is the form).
    """

    name: str
    raw: str = ""
    expressions: list[Expression] | None = None
    pairs: list[KeyValue] | None = None
    structured: bool = False


# ---------------------------------------------------------------------------
# Types


@dataclass(slots=True)
class BoolType(Type):
    """``bool``."""


@dataclass(slots=True)
class ErrorType(Type):
    """``error``."""


@dataclass(slots=True)
class MatchKindType(Type):
    """``match_kind``."""


@dataclass(slots=True)
class StringType(Type):
    """``string``."""


@dataclass(slots=True)
class VoidType(Type):
    """``void`` (return types and type arguments only)."""


@dataclass(slots=True)
class IntType(Type):
    """``int``: the arbitrary-precision integer type of untyped constants."""


@dataclass(slots=True)
class BitsType(Type):
    """``bit<w>`` (``signed`` False) or ``int<w>`` (``signed`` True).

    ``width`` is None for a bare ``bit``, which means ``bit<1>``.
    """

    width: Expression | None
    signed: bool = False


@dataclass(slots=True)
class VarbitType(Type):
    """``varbit<w>``."""

    width: Expression


@dataclass(slots=True)
class DontCareType(Type):
    """``_`` used as a type argument."""


@dataclass(slots=True)
class TypeName(Type):
    """A named type (typedef, header, struct, extern, type parameter...)."""

    path: Path


@dataclass(slots=True)
class SpecializedType(Type):
    """``base<args>``: a generic named type applied to type arguments."""

    base: TypeName
    args: list[Type]


@dataclass(slots=True)
class TupleType(Type):
    """``tuple<T1, T2, ...>``."""

    elements: list[Type]


@dataclass(slots=True)
class ListType(Type):
    """``list<T>`` (P4 1.2.4)."""

    element: Type


@dataclass(slots=True)
class HeaderStackType(Type):
    """``T[size]``: a header (or header union) stack."""

    element: Type
    size: Expression


# ---------------------------------------------------------------------------
# Expressions


@dataclass(slots=True)
class IntLiteral(Expression):
    """An integer literal such as ``5``, ``0x1F``, ``8w5``, ``4s3``, ``1_000``.

    ``width`` is None for an unsized (``int``) literal; ``signed`` is True for
    an ``s`` literal; ``value`` is the value as written (the checker truncates);
    ``text`` is the source spelling.
    """

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass(slots=True)
class BoolLiteral(Expression):
    """``true`` or ``false``."""

    value: bool


@dataclass(slots=True)
class StringLiteral(Expression):
    """A string literal; ``value`` is the text between the quotes, escape
    sequences kept as written (as p4c keeps them)."""

    value: str


@dataclass(slots=True)
class NameExpression(Expression):
    """A reference to a value by name: ``x`` or ``.x``."""

    path: Path


@dataclass(slots=True)
class TypeNameExpression(Expression):
    """A type used where an expression is expected: ``E`` in ``E.A``, ``error`` in
    ``error.NoError``, ``C`` in ``C.apply()``, ``bit<8>`` in ``bit<8>.minSizeInBits()``."""

    type_ref: Type


@dataclass(slots=True)
class ThisExpression(Expression):
    """``this`` (inside the initializer block of an instantiation)."""


@dataclass(slots=True)
class DefaultExpression(Expression):
    """The keyset ``default`` (also a ``switch`` label)."""


@dataclass(slots=True)
class DontCareExpression(Expression):
    """``_``: the keyset that matches anything, or a don't-care ``out`` argument."""


@dataclass(slots=True)
class DotsExpression(Expression):
    """``...``: "all remaining fields/elements take default values"."""


@dataclass(slots=True)
class InvalidHeaderExpression(Expression):
    """``{#}``: the invalid header or header union value (P4 1.2.2)."""


@dataclass(slots=True)
class Member(Expression):
    """``expr.member`` (fields, methods, ``E.A``, ``error.X``, ``h.isValid``...)."""

    expr: Expression
    member: str


@dataclass(slots=True)
class Index(Expression):
    """``expr[index]``: header stack, tuple or array element."""

    expr: Expression
    index: Expression


@dataclass(slots=True)
class Slice(Expression):
    """``expr[hi:lo]``: bit slice, both bounds inclusive."""

    expr: Expression
    hi: Expression
    lo: Expression


@dataclass(slots=True)
class PlusSlice(Expression):
    """``expr[base +: width]``: the ``width`` bits starting at bit ``base``
    (P4 1.2.5 indexed part select; ``width`` must be a compile-time constant)."""

    expr: Expression
    base: Expression
    width: Expression


@dataclass(slots=True)
class Argument(Node):
    """One call argument: ``e``, ``name = e``, or ``_`` (``value`` is a
    :class:`DontCareExpression`)."""

    value: Expression
    name: str | None = None


@dataclass(slots=True)
class Call(Expression):
    """``method<type_args>(args)``: function, method, action or constructor call."""

    method: Expression
    type_args: list[Type]
    args: list[Argument]


@dataclass(slots=True)
class ConstructorCall(Expression):
    """``T<args>(ctor args)`` used as an expression (a nameless instantiation,
    e.g. a constructor argument ``MyCtrl()`` of a package)."""

    type_ref: Type
    args: list[Argument]


@dataclass(slots=True)
class Cast(Expression):
    """``(target) expr``."""

    target: Type
    expr: Expression


@dataclass(slots=True)
class Unary(Expression):
    """A prefix operator applied to ``operand``: ``!``, ``~``, ``-`` or ``+``."""

    op: str
    operand: Expression


@dataclass(slots=True)
class Binary(Expression):
    """An infix operator (see the module docstring for the list)."""

    op: str
    left: Expression
    right: Expression


@dataclass(slots=True)
class Ternary(Expression):
    """``cond ? then : else_``."""

    cond: Expression
    then: Expression
    else_: Expression


@dataclass(slots=True)
class ListExpression(Expression):
    """``{a, b, ...}`` (a tuple, list or header-stack value), and the tuple keyset
    ``(k1, k2)`` of a ``select`` case or table entry."""

    elements: list[Expression]


@dataclass(slots=True)
class StructExpression(Expression):
    """``{f1 = e1, f2 = e2, ...}`` (``...`` as the last item sets ``dots``).

    ``type_name`` is set for the old ``T { ... }`` form; the common
    ``(T){ ... }`` form is a :class:`Cast` of a type-less struct expression.
    """

    fields: list[KeyValue]
    type_name: Type | None = None
    dots: bool = False


# ---------------------------------------------------------------------------
# Statements


@dataclass(slots=True)
class AssignmentStatement(Statement):
    """``target = value;`` or a compound assignment such as ``target += value;``
    (P4 1.2.5; ``op`` is the operator as written: ``=``, ``+=``, ``|+|=``, ``<<=``...)."""

    target: Expression
    value: Expression
    op: str = "="


@dataclass(slots=True)
class MethodCallStatement(Statement):
    """``call;`` -- a function, method, action, extern or ``apply`` call."""

    call: Call


@dataclass(slots=True)
class EmptyStatement(Statement):
    """``;``."""


@dataclass(slots=True)
class ExitStatement(Statement):
    """``exit;``."""


@dataclass(slots=True)
class ReturnStatement(Statement):
    """``return;`` or ``return value;``."""

    value: Expression | None = None


@dataclass(slots=True)
class BreakStatement(Statement):
    """``break;`` (inside a ``for`` loop, P4 1.2.4)."""


@dataclass(slots=True)
class ContinueStatement(Statement):
    """``continue;`` (inside a ``for`` loop, P4 1.2.4)."""


@dataclass(slots=True)
class BlockStatement(Statement):
    """``{ items }``, optionally annotated."""

    items: list[StatOrDecl]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class IfStatement(Statement):
    """``if (cond) then else else_``."""

    cond: Expression
    then: Statement
    else_: Statement | None = None


@dataclass(slots=True)
class SwitchCase(Node):
    """One ``label: body`` of a switch; ``body`` is None for a fall-through label.

    ``label`` is a :class:`DefaultExpression`, a :class:`NameExpression` (an
    action name, when switching on ``t.apply().action_run``), or any expression
    (P4 1.2.x allows switching on values).
    """

    label: Expression
    body: BlockStatement | None


@dataclass(slots=True)
class SwitchStatement(Statement):
    """``switch (expr) { cases }``."""

    expr: Expression
    cases: list[SwitchCase]


@dataclass(slots=True)
class ForStatement(Statement):
    """``for (init; cond; updates) body`` (P4 1.2.4)."""

    init: list[StatOrDecl]
    cond: Expression | None
    updates: list[Statement]
    body: Statement
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ForInStatement(Statement):
    """``for (T x in collection) body`` (P4 1.2.4); ``var_type`` None for ``for (x in ...)``."""

    var_type: Type | None
    var_name: str
    collection: Expression
    body: Statement
    annotations: list[Annotation] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Declarations: common pieces


@dataclass(slots=True)
class Parameter(Declaration):
    """``annotations direction type name [= default]``; ``direction`` is None when
    directionless."""

    type: Type
    name: str
    direction: Direction | None = None
    default: Expression | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ConstantDeclaration(Declaration):
    """``const type name = value;``."""

    type: Type
    name: str
    value: Expression
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class VariableDeclaration(Declaration):
    """``type name [= init];``."""

    type: Type
    name: str
    init: Expression | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class Instantiation(Declaration):
    """``type(args) name;`` or ``type(args) name = { initializer };``.

    ``initializer`` holds the implementations of an extern's abstract methods
    (:class:`FunctionDeclaration`) and nested instantiations; None when absent.
    """

    type: Type
    args: list[Argument]
    name: str
    initializer: list[Declaration] | None = None
    annotations: list[Annotation] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Declarations: types


@dataclass(slots=True)
class StructField(Declaration):
    """``annotations type name;`` inside a header, header union or struct."""

    type: Type
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class HeaderDeclaration(Declaration):
    """``header name<type_params> { fields }``."""

    name: str
    fields: list[StructField]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class HeaderUnionDeclaration(Declaration):
    """``header_union name<type_params> { fields }``."""

    name: str
    fields: list[StructField]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class StructDeclaration(Declaration):
    """``struct name<type_params> { fields }``."""

    name: str
    fields: list[StructField]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class EnumMember(Node):
    """One enum member; ``value`` is set exactly for a serializable enum."""

    name: str
    value: Expression | None = None


@dataclass(slots=True)
class EnumDeclaration(Declaration):
    """``enum name { A, B }`` or the serializable ``enum bit<8> name { A = 1 }``
    (then ``underlying`` is the representation type)."""

    name: str
    members: list[EnumMember]
    underlying: Type | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ErrorDeclaration(Declaration):
    """``error { A, B }``; several such declarations add up."""

    members: list[Ident]


@dataclass(slots=True)
class MatchKindDeclaration(Declaration):
    """``match_kind { exact, lpm }``; several such declarations add up."""

    members: list[Ident]


@dataclass(slots=True)
class TypedefDeclaration(Declaration):
    """``typedef type name;`` -- a synonym.  ``type`` may be a derived type
    declaration written inline (``typedef header H { ... } X;``)."""

    name: str
    type: Type | Declaration
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class NewTypeDeclaration(Declaration):
    """``type type name;`` -- a new type with the representation of ``type``."""

    name: str
    type: Type | Declaration
    annotations: list[Annotation] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Declarations: externs, functions, actions


@dataclass(slots=True)
class MethodPrototype(Declaration):
    """A method (or constructor, when ``return_type`` is None) of an extern object.

    ``abstract`` marks ``abstract R m(...)`` methods, to be implemented in an
    instantiation's initializer block.
    """

    name: str
    return_type: Type | None
    params: list[Parameter]
    type_params: list[Ident] = field(default_factory=list)
    abstract: bool = False
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def is_constructor(self) -> bool:
        """Whether this is a constructor (no return type)."""
        return self.return_type is None


@dataclass(slots=True)
class ExternDeclaration(Declaration):
    """``extern Name<type_params> { constructors and methods }``."""

    name: str
    methods: list[MethodPrototype]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ExternFunctionDeclaration(Declaration):
    """``extern R name<type_params>(params);``."""

    name: str
    return_type: Type
    params: list[Parameter]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class FunctionDeclaration(Declaration):
    """``R name<type_params>(params) { body }`` (also an abstract method's
    implementation inside an initializer block)."""

    name: str
    return_type: Type
    params: list[Parameter]
    body: BlockStatement
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ActionDeclaration(Declaration):
    """``action name(params) { body }``."""

    name: str
    params: list[Parameter]
    body: BlockStatement
    annotations: list[Annotation] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Declarations: tables


@dataclass(slots=True)
class KeyElement(Node):
    """``expr : match_kind annotations;`` in a table's ``key``."""

    expr: Expression
    match_kind: Path
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ActionRef(Node):
    """``annotations name`` or ``annotations name(args)``: an action named in an
    ``actions`` list or a table entry (args bind the action's directional
    parameters)."""

    name: Path
    args: list[Argument] | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class TableEntry(Node):
    """``[const] [priority = p :] keyset : action annotations;``.

    ``keyset`` is a single keyset expression or a :class:`ListExpression` for
    the tuple form ``(k1, k2)``.
    """

    keyset: Expression
    action: ActionRef
    priority: Expression | None = None
    const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class TableProperty(Node):
    """A table property; ``name`` is its keyword (``key``, ``actions``...)."""

    name: str
    const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class KeyProperty(TableProperty):
    """``key = { elements }``."""

    elements: list[KeyElement] = field(default_factory=list)


@dataclass(slots=True)
class ActionsProperty(TableProperty):
    """``actions = { a; b; ... }``."""

    actions: list[ActionRef] = field(default_factory=list)


@dataclass(slots=True)
class EntriesProperty(TableProperty):
    """``[const] entries = { entries }``."""

    entries: list[TableEntry] = field(default_factory=list)


@dataclass(slots=True)
class ExpressionProperty(TableProperty):
    """Any other property: ``[const] name = expr;`` -- ``default_action``
    (the value is a :class:`NameExpression` or :class:`Call`), ``size``,
    ``implementation``, ``counters``, ``meters``, ``support_timeout``,
    ``priority`` and custom properties."""

    value: Expression | None = None


@dataclass(slots=True)
class TableDeclaration(Declaration):
    """``table name { properties }``."""

    name: str
    properties: list[TableProperty]
    annotations: list[Annotation] = field(default_factory=list)

    def property(self, name: str) -> TableProperty | None:
        """The (last) property called ``name``, or None."""
        found = None
        for prop in self.properties:
            if prop.name == name:
                found = prop
        return found


# ---------------------------------------------------------------------------
# Declarations: parsers


@dataclass(slots=True)
class ValueSetDeclaration(Declaration):
    """``value_set<element_type>(size) name;``."""

    element_type: Type
    size: Expression
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class SelectCase(Node):
    """``keyset : state;`` -- ``keyset`` is a :class:`ListExpression` for a tuple."""

    keyset: Expression
    state: Path


@dataclass(slots=True)
class SelectExpression(Expression):
    """``select (exprs) { cases }``."""

    exprs: list[Expression]
    cases: list[SelectCase]


@dataclass(slots=True)
class Transition(Node):
    """``transition next;`` (a :class:`NameExpression`) or ``transition select...;``
    (a :class:`SelectExpression`)."""

    target: Expression


@dataclass(slots=True)
class ParserState(Declaration):
    """``state name { statements transition }``; ``transition`` is None when
    omitted (which means ``transition reject``)."""

    name: str
    statements: list[StatOrDecl]
    transition: Transition | None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ParserTypeDeclaration(Declaration):
    """``parser Name<type_params>(params);``."""

    name: str
    params: list[Parameter]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ParserDeclaration(Declaration):
    """``parser Name<tp>(params)(ctor_params) { locals states }``."""

    name: str
    params: list[Parameter]
    ctor_params: list[Parameter]
    locals: list[Declaration]
    states: list[ParserState]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Declarations: controls and packages


@dataclass(slots=True)
class ControlTypeDeclaration(Declaration):
    """``control Name<type_params>(params);``."""

    name: str
    params: list[Parameter]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class ControlDeclaration(Declaration):
    """``control Name<tp>(params)(ctor_params) { locals apply body }``."""

    name: str
    params: list[Parameter]
    ctor_params: list[Parameter]
    locals: list[Declaration]
    body: BlockStatement
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(slots=True)
class PackageTypeDeclaration(Declaration):
    """``package Name<type_params>(params);``."""

    name: str
    params: list[Parameter]
    type_params: list[Ident] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Program


@dataclass(slots=True)
class Program(Node):
    """A whole P4 program: its top-level declarations in source order."""

    declarations: list[Declaration]


StatOrDecl: TypeAlias = Statement | Declaration
"""An item of a block or parser state: a statement or a local declaration
(constant, variable or instantiation)."""
