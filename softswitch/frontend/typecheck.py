"""Type checking of types and expressions, lowering them to the typed IR.

The :class:`ExprChecker` resolves names through :mod:`scope`, computes the
type of every expression (filling the syntax tree's ``type`` slot as it goes),
applies the implicit conversions P4_16 allows (an ``int`` constant takes the
width its context asks for; a serializable enum converts to its underlying
type; ``{...}`` lists become the struct, header, tuple or stack the context
expects), folds constant sub-expressions with :mod:`constfold`, and builds
:mod:`ir` expressions.  A call's arguments are bound to its callee's
parameters here (:meth:`ExprChecker.bind_args`), the type parameters of
generic extern functions and methods inferred by unifying the parameter types
with the argument types.

Statements, actions and functions are in :mod:`stmtcheck`; instantiation,
tables and control-plane names in :mod:`elaborate`.  The checker calls up to
them only through its :class:`ExprHost` (the binding of a call's callee, and
an instance used as a value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

from kvfabric.suggest import did_you_mean
from softswitch.errors import Loc, P4SourceError, UnsupportedError
from softswitch.frontend import ast, constfold, ir
from softswitch.frontend.scope import (
    DeclSym,
    InstanceSym,
    OverloadSym,
    Scope,
    StateSym,
    Symbol,
    TypeSym,
    ValueSym,
)
from softswitch.frontend.types import (
    BOOL,
    DONTCARE,
    ERROR,
    INFINT,
    MATCH_KIND,
    STRING,
    VOID,
    ApplyResultT,
    Bits,
    BlockT,
    Bool,
    DontCareT,
    EnumT,
    ErrorT,
    ExternT,
    HeaderT,
    InfInt,
    NewType,
    P4Type,
    Param,
    StackT,
    StructLike,
    StructT,
    TableT,
    TupleT,
    TypeVar,
    UnionT,
    Varbit,
    strip_newtype,
    value_type,
)

MAX_EXPR_DEPTH = 100
"""How deep a typed expression may nest.  Deeper ones are refused with a located
error, not left to exhaust Python's recursion limit here or in the passes after
this one (the interpreter's code generator takes five frames a level).  A chain
of binary operators down the left (``1 + 1 + ... + 1``, which is how they
associate) is typed in a loop, and only its unfolded part counts: a constant
chain of any length folds into one constant."""


# the kinds of declaration that name a block type (parser, control, package, extern)
BLOCK_KINDS = ("parser", "control", "parser_type", "control_type", "package", "extern")


# The written types that denote one type each, whatever the scope.
_SIMPLE_TYPES: dict[type[ast.Type], P4Type] = {
    ast.BoolType: BOOL,
    ast.ErrorType: ERROR,
    ast.StringType: STRING,
    ast.VoidType: VOID,
    ast.IntType: INFINT,
    ast.MatchKindType: MATCH_KIND,
    ast.DontCareType: DONTCARE,
}


class ExprHost(Protocol):
    """What expressions need from the layers above the checker: the binding
    of calls (:mod:`stmtcheck`) and instances used as values (:mod:`elaborate`)."""

    def call(self, e: ast.Call, scope: Scope) -> ir.Call:
        """Bind a call expression to its callee."""
        ...

    def constructor_value(self, e: ast.ConstructorCall, scope: Scope) -> ir.Expr:
        """``T(args)`` used as a value (a constructor argument)."""
        ...


class ExprChecker:
    """Types, constants and expressions; calls and instances through ``host``."""

    def __init__(self, host: ExprHost) -> None:
        self.host = host
        # parsers and controls hidden by a function of the same name
        self.shadow_blocks: dict[str, DeclSym] = {}
        self.root = Scope()
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.named_types: dict[str, P4Type] = {}
        self._specialised: dict[tuple[Any, ...], P4Type] = {}
        self._var_count = 0
        self._expr_depth = 0
        self._expr_peak = 0

    # ------------------------------------------------------------------
    # Errors

    def fail(self, loc: Loc, message: str) -> NoReturn:
        """Raise a located source error."""
        raise P4SourceError(loc, message)

    def unsupported(self, loc: Loc, feature: str) -> NoReturn:
        """Raise a located unsupported-feature error."""
        raise UnsupportedError(loc, feature)

    def fresh_var(self, name: str, t: P4Type, loc: Loc) -> ir.Var:
        """A new IR variable with a name unique in the program."""
        self._var_count += 1
        safe = "".join(c if c.isalnum() else "_" for c in name)
        return ir.Var(t, loc, f"v{self._var_count}_{safe}")

    # ------------------------------------------------------------------
    # Types

    def resolve_type(self, t: ast.Type | ast.Declaration, scope: Scope) -> P4Type:
        """The :mod:`types` type that the written type ``t`` denotes."""
        if isinstance(t, ast.Declaration):
            return self.declare_type(t, scope)
        if isinstance(t, ast.BitsType):
            width = 1 if t.width is None else self.const_int(t.width, scope)
            if width <= 0 and not (width == 0 and not t.signed):
                self.fail(t.loc, f"invalid width {width}")
            if t.signed and width < 1:
                self.fail(t.loc, f"invalid width {width} for int<>")
            return Bits(width, t.signed)
        simple = _SIMPLE_TYPES.get(type(t))
        if simple is not None:
            return simple
        if isinstance(t, ast.VarbitType):
            return Varbit(self.const_int(t.width, scope))
        if isinstance(t, ast.HeaderStackType):
            elem = self.resolve_type(t.element, scope)
            size = self.const_int(t.size, scope)
            if not isinstance(strip_newtype(elem), HeaderT | UnionT):
                self.fail(t.loc, f"header stack element must be a header, not {elem}")
            return StackT(elem, size)
        if isinstance(t, ast.TupleType):
            return TupleT(tuple(self.resolve_type(e, scope) for e in t.elements))
        if isinstance(t, ast.ListType):
            return TupleT((self.resolve_type(t.element, scope),))
        if isinstance(t, ast.TypeName):
            return self._named_type(t, [], scope)
        if isinstance(t, ast.SpecializedType):
            args = [self.resolve_type(a, scope) for a in t.args]
            return self._named_type(t.base, args, scope)
        self.fail(t.loc, f"unexpected type {type(t).__name__}")

    def block_sym(self, sym: Symbol | None, name: str) -> Symbol | None:
        """``sym``, or the parser/control called ``name`` that a function hides."""
        if isinstance(sym, OverloadSym) or (
            isinstance(sym, DeclSym) and sym.kind in ("extern_function", "function")
        ):
            return self.shadow_blocks.get(name, sym)
        return sym

    def _named_type(self, t: ast.TypeName, args: list[P4Type], scope: Scope) -> P4Type:
        sym = self.root.lookup(t.path.name) if t.path.absolute else scope.lookup(t.path.name)
        block = self.block_sym(sym, t.path.name)
        if isinstance(block, DeclSym) and block.kind in BLOCK_KINDS:
            return self.specialise_decl(block, args, t.loc)
        if sym is None:
            cands = [n for n in scope.all_names() if isinstance(scope.lookup(n), TypeSym)]
            self.fail(t.loc, f"no type named '{t.path.name}'{did_you_mean(t.path.name, cands)}")
        if not isinstance(sym, TypeSym):
            self.fail(t.loc, f"'{t.path.name}' is not a type")
        if sym.type is not None:
            if args:
                self.fail(t.loc, f"type '{t.path.name}' takes no type arguments")
            return sym.type
        assert sym.scope is not None
        return self.specialise_type(sym.decl, args, sym.scope, t.loc)

    def specialise_type(self, decl: Any, args: list[P4Type], scope: Scope, loc: Loc) -> P4Type:
        """A generic header/struct declaration applied to type arguments."""
        params = decl.type_params
        if len(params) != len(args):
            self.fail(loc, f"'{decl.name}' expects {len(params)} type arguments, got {len(args)}")
        key = (id(decl), tuple(args))
        if key in self._specialised:
            return self._specialised[key]
        inner = scope.child()
        for p, a in zip(params, args, strict=True):
            inner.names[p.name] = TypeSym(p.name, a)
        name = f"{decl.name}<{', '.join(map(str, args))}>"
        result = self._build_struct_like(decl, name, inner)
        self._specialised[key] = result
        return result

    def specialise_decl(self, sym: DeclSym, args: list[P4Type], loc: Loc) -> P4Type:
        """An extern, parser, control or package type with type arguments
        (a parser or control type declaration gives a parser or control)."""
        if sym.kind in ("parser_type", "control_type"):
            sym = DeclSym(sym.name, sym.decl, sym.scope, sym.kind.removesuffix("_type"))
        decl = sym.decl
        if sym.kind == "extern":
            if args and len(args) != len(decl.type_params):
                self.fail(loc, f"'{decl.name}' expects {len(decl.type_params)} type arguments")
            return ExternT(decl.name, tuple(args), decl)
        inner = sym.scope.child()
        for i, p in enumerate(decl.type_params):
            inner.names[p.name] = TypeSym(p.name, args[i] if i < len(args) else TypeVar(p.name))
        params = tuple(self.param_of(p, inner) for p in decl.params)
        return BlockT(sym.kind, decl.name, params, tuple(args), decl)

    def param_of(self, p: ast.Parameter, scope: Scope) -> Param:
        """A callable's parameter description."""
        return Param(
            p.name, p.direction or "", self.resolve_type(p.type, scope), p.default is not None
        )

    def declare_type(self, decl: ast.Declaration, scope: Scope) -> P4Type:
        """Enter a type declaration in ``scope`` and return its type."""
        if isinstance(
            decl, ast.HeaderDeclaration | ast.StructDeclaration | ast.HeaderUnionDeclaration
        ):
            if decl.type_params:
                scope.names[decl.name] = TypeSym(decl.name, None, decl, scope)
                return TypeVar(decl.name)
            t = self._build_struct_like(decl, decl.name, scope)
            scope.names[decl.name] = TypeSym(decl.name, t)
            self.named_types[decl.name] = t
            return t
        if isinstance(decl, ast.EnumDeclaration):
            return self._declare_enum(decl, scope)
        if isinstance(decl, ast.TypedefDeclaration):
            inner = self.resolve_type(decl.type, scope)
            scope.names[decl.name] = TypeSym(decl.name, inner)
            return inner
        if isinstance(decl, ast.NewTypeDeclaration):
            base = self.resolve_type(decl.type, scope)
            nt = NewType(decl.name, base, self.annotations(decl.annotations, scope))
            scope.names[decl.name] = TypeSym(decl.name, nt)
            self.named_types[decl.name] = nt
            return nt
        self.fail(decl.loc, f"not a type declaration: {type(decl).__name__}")

    def _declare_enum(self, decl: ast.EnumDeclaration, scope: Scope) -> P4Type:
        members: dict[str, int] = {}
        underlying: Bits | None = None
        if decl.underlying is not None:
            u = strip_newtype(self.resolve_type(decl.underlying, scope))
            if not isinstance(u, Bits):
                self.fail(decl.loc, f"enum underlying type must be bit<> or int<>, not {u}")
            underlying = u
        for i, m in enumerate(decl.members):
            if m.name in members:
                self.fail(m.loc, f"duplicate enum member '{m.name}'")
            if underlying is not None:
                if m.value is None:
                    self.fail(m.loc, f"member '{m.name}' of a serializable enum needs a value")
                members[m.name] = constfold.to_value(self.const_int(m.value, scope), underlying)
            else:
                members[m.name] = i
        t = EnumT(decl.name, members, underlying)
        scope.names[decl.name] = TypeSym(decl.name, t)
        self.named_types[decl.name] = t
        return t

    def _build_struct_like(self, decl: Any, name: str, scope: Scope) -> StructLike:
        fields: dict[str, P4Type] = {}
        fanns: dict[str, list[Any]] = {}
        for f in decl.fields:
            if f.name in fields:
                self.fail(f.loc, f"duplicate field '{f.name}' in {name}")
            ft = self.resolve_type(f.type, scope)
            fields[f.name] = ft
            fanns[f.name] = self.annotations(f.annotations, scope)
        anns = self.annotations(decl.annotations, scope)
        if isinstance(decl, ast.HeaderDeclaration):
            for fname, ft in fields.items():
                base = strip_newtype(ft)
                ok = isinstance(base, Bits | Varbit | Bool) or (
                    isinstance(base, EnumT) and base.underlying is not None
                )
                if not ok and not isinstance(base, StructT):
                    self.fail(
                        decl.loc,
                        f"field '{fname}' of header {name} has type {ft}, "
                        "which a header cannot hold",
                    )
            return HeaderT(name, fields, anns, fanns)
        if isinstance(decl, ast.HeaderUnionDeclaration):
            for fname, ft in fields.items():
                if not isinstance(strip_newtype(ft), HeaderT):
                    self.fail(decl.loc, f"field '{fname}' of header_union {name} must be a header")
            return UnionT(name, fields, anns, fanns)
        return StructT(name, fields, anns, fanns)

    def annotations(self, anns: Sequence[ast.Annotation], scope: Scope) -> list[ir.Annotation]:
        """Annotations with their argument lists folded where they are constants.

        ``@field_list`` arguments must be compile-time integers (literals, named
        constants, constant expressions): one that is not is a located error.
        """
        result = []
        for a in anns:
            if a.name == "field_list":
                result.append(ir.Annotation(a.name, a.raw, self._field_list_indices(a, scope)))
                continue
            args: list[Any] = []
            for e in a.expressions or []:
                if isinstance(e, ast.StringLiteral | ast.IntLiteral):
                    args.append(e.value)
                else:
                    args.append(None)
            result.append(ir.Annotation(a.name, a.raw, tuple(args)))
        return result

    def _field_list_indices(self, a: ast.Annotation, scope: Scope) -> tuple[int, ...]:
        if a.expressions is None or a.structured:
            self.fail(a.loc, f"@field_list({a.raw}): expected field list indices")
        return tuple(self.const_int(e, scope) for e in a.expressions)

    # ------------------------------------------------------------------
    # Constants

    def const_int(self, e: ast.Expression, scope: Scope) -> int:
        """The compile-time integer value of ``e``."""
        v = self.expr(e, scope)
        if not isinstance(v, ir.Const) or isinstance(v.value, bool) or not isinstance(v.value, int):
            self.fail(e.loc, "expected a compile-time integer constant")
        t = strip_newtype(v.type)
        if isinstance(t, Bits) and t.signed:
            return int(constfold.cast(v.value, t, INFINT))
        return int(v.value)

    def const_value(self, e: ast.Expression, scope: Scope, t: P4Type | None = None) -> ir.Expr:
        """``e`` folded; an error unless it is a compile-time constant."""
        v = self.expr(e, scope, t)
        if t is not None:
            v = self.coerce(v, t, e.loc)
        if not is_constant(v):
            self.fail(e.loc, "expected a compile-time constant")
        return v

    # ------------------------------------------------------------------
    # Implicit conversions

    def coerce(self, e: ir.Expr, t: P4Type, loc: Loc) -> ir.Expr:
        """``e`` converted to type ``t`` as an implicit cast allows, or an error."""
        src = e.type
        if src is t or src == t or isinstance(t, TypeVar | DontCareT):
            return e
        vs, vt = strip_newtype(src), strip_newtype(t)
        if vs is vt or vs == vt:
            return self._retype(e, t)
        if isinstance(vs, InfInt) and isinstance(e, ir.Const):
            if isinstance(vt, Bits):
                return ir.Const(t, e.loc, constfold.to_value(e.value, vt))
            if isinstance(vt, InfInt):
                return e
        if isinstance(vs, EnumT) and vs.underlying is not None and vs.underlying == vt:
            return self._retype(e, t)
        if (
            isinstance(vs, Bits)
            and isinstance(vt, Bits)
            and vs.signed == vt.signed
            and vt.width > vs.width
        ):
            # p4c accepts a lossless widening to a wider type of the same
            # signedness (zero- or sign-extending), e.g. int<64> = int<32> >> n
            return ir.CastE(t, e.loc, e)
        if isinstance(e, ir.StructLit) and isinstance(e.type, TupleT | StructT):
            return self._convert_list(e, t, loc)
        if isinstance(e, ir.InvalidHdr) and isinstance(vt, HeaderT | UnionT):
            return ir.InvalidHdr(t, e.loc)
        if (
            isinstance(vs, TupleT)
            and isinstance(vt, TupleT)
            and len(vs.elements) == len(vt.elements)
        ):
            return e
        if isinstance(vs, BlockT) and isinstance(vt, BlockT) and _block_conforms(vs, vt):
            # a parser or control instance where a parser/control type is expected
            return e
        self.fail(loc, f"type mismatch: expected {t}, got {src}")

    def _retype(self, e: ir.Expr, t: P4Type) -> ir.Expr:
        if isinstance(e, ir.Const):
            return ir.Const(t, e.loc, e.value)
        if isinstance(strip_newtype(e.type), EnumT) and not isinstance(strip_newtype(t), EnumT):
            return ir.CastE(t, e.loc, e)
        return e

    def _convert_list(self, e: ir.StructLit, t: P4Type, loc: Loc) -> ir.Expr:
        vt = strip_newtype(t)
        values = [v for _, v in e.fields]
        if isinstance(vt, StructLike):
            if isinstance(vt, UnionT):
                self.fail(loc, f"cannot initialize header_union {vt} with a list")
            if isinstance(e.type, StructT) and e.type.name == "":
                named = dict(e.fields)
                missing = [f for f in vt.fields if f not in named]
                extra = [f for f in named if f not in vt.fields]
                if extra:
                    self.fail(
                        loc,
                        f"no field '{extra[0]}' in {vt}{did_you_mean(extra[0], list(vt.fields))}",
                    )
                if missing:
                    self.fail(loc, f"field '{missing[0]}' of {vt} is not initialized")
                values = [named[f] for f in vt.fields]
            if len(values) != len(vt.fields):
                self.fail(loc, f"{vt} has {len(vt.fields)} fields, the list has {len(values)}")
            fields = [
                (fname, self.coerce(v, ft, loc))
                for (fname, ft), v in zip(vt.fields.items(), values, strict=True)
            ]
            return ir.StructLit(t, e.loc, fields)
        if isinstance(vt, TupleT):
            if len(values) != len(vt.elements):
                self.fail(loc, f"type mismatch: expected {vt}, got a list of {len(values)}")
            fields = [
                (str(i), self.coerce(v, et, loc))
                for i, (et, v) in enumerate(zip(vt.elements, values, strict=True))
            ]
            return ir.StructLit(t, e.loc, fields)
        if isinstance(vt, StackT):
            if len(values) != vt.size:
                self.fail(loc, f"type mismatch: expected {vt}, got a list of {len(values)}")
            fields = [(str(i), self.coerce(v, vt.element, loc)) for i, v in enumerate(values)]
            return ir.StructLit(t, e.loc, fields)
        self.fail(loc, f"type mismatch: expected {t}, got {e.type}")

    # ------------------------------------------------------------------
    # Expressions

    def expr(self, e: ast.Expression, scope: Scope, expected: P4Type | None = None) -> ir.Expr:
        """Lower ``e``; ``expected`` guides literals and lists (no conversion is forced)."""
        self._enter(e.loc, 1)
        try:
            result = self._expr(e, scope, expected)
        finally:
            self._expr_depth -= 1
        e.type = result.type
        return result

    def _enter(self, loc: Loc, levels: int) -> None:
        """Go ``levels`` deeper into an expression; refuse beyond :data:`MAX_EXPR_DEPTH`."""
        if self._expr_depth + levels > MAX_EXPR_DEPTH:
            self.fail(
                loc,
                f"expression nested more than {MAX_EXPR_DEPTH} deep: "
                "split it with intermediate constants or variables",
            )
        self._expr_depth += levels
        self._expr_peak = max(self._expr_peak, self._expr_depth)

    def _measured(self, e: ast.Expression, scope: Scope) -> tuple[ir.Expr, int]:
        """Lower ``e`` and say how deep its IR is (0 for a constant)."""
        base, outer_peak = self._expr_depth, self._expr_peak
        self._expr_peak = base
        result = self.expr(e, scope)
        depth = 0 if isinstance(result, ir.Const) else self._expr_peak - base
        self._expr_peak = max(outer_peak, self._expr_peak)
        return result, depth

    def _binary_chain(self, e: ast.Binary, scope: Scope) -> ir.Expr:
        """``a op b op c ...``: typed from the leftmost operand up, in a loop.

        ``spine[j]`` is ``j`` levels under ``e``; once a partial result does not fold,
        every node above it does not either, so its depth is known as soon as it is made.
        """
        spine = [e]
        while isinstance(spine[-1].left, ast.Binary):
            spine.append(spine[-1].left)
        level = self._expr_depth  # e's level, counted by expr()
        result, depth = self._measured(spine[-1].left, scope)
        for j in range(len(spine) - 1, -1, -1):
            node = spine[j]
            right, right_depth = self._measured(node.right, scope)
            result = self.binary(node.op, result, right, node.loc)
            node.type = result.type
            depth = 0 if isinstance(result, ir.Const) else 1 + max(depth, right_depth)
            if depth and level + j + depth - 1 > MAX_EXPR_DEPTH:
                self._enter(node.loc, MAX_EXPR_DEPTH + 1)  # fails, located at this operator
        self._expr_peak = max(self._expr_peak, level + depth - 1)
        return result

    def _expr(self, e: ast.Expression, scope: Scope, expected: P4Type | None) -> ir.Expr:  # noqa: C901 - one case per kind of P4 construct
        if isinstance(e, ast.IntLiteral):
            if e.width is None:
                return ir.Const(INFINT, e.loc, e.value)
            if e.width <= 0:
                self.fail(e.loc, f"invalid width {e.width}")
            t = Bits(e.width, e.signed)
            return ir.Const(t, e.loc, e.value & t.mask)
        if isinstance(e, ast.BoolLiteral):
            return ir.Const(BOOL, e.loc, e.value)
        if isinstance(e, ast.StringLiteral):
            return ir.Const(STRING, e.loc, e.value)
        if isinstance(e, ast.NameExpression):
            return self.name_expr(e, scope)
        if isinstance(e, ast.Member):
            return self.member_expr(e, scope)
        if isinstance(e, ast.Binary):
            return self._binary_chain(e, scope)
        if isinstance(e, ast.Unary):
            return self.unary(e.op, self.expr(e.operand, scope, expected), e.loc)
        if isinstance(e, ast.Cast):
            target = self.resolve_type(e.target, scope)
            return self.cast(self.expr(e.expr, scope, target), target, e.loc)
        if isinstance(e, ast.Ternary):
            return self.ternary(e, scope, expected)
        if isinstance(e, ast.Slice):
            base = self.expr(e.expr, scope)
            return self.slice(base, self.const_int(e.hi, scope), self.const_int(e.lo, scope), e.loc)
        if isinstance(e, ast.PlusSlice):
            return self.plus_slice(e, scope)
        if isinstance(e, ast.Index):
            return self.index_expr(e, scope)
        if isinstance(e, ast.Call):
            call = self.host.call(e, scope)
            if isinstance(call.type, type(VOID)):
                self.fail(e.loc, "a void call cannot be used as a value")
            if call.kind == "const":
                return ir.Const(call.type, e.loc, call.target)
            return call
        if isinstance(e, ast.ListExpression):
            return self.list_expr(e, scope, expected)
        if isinstance(e, ast.StructExpression):
            return self.struct_expr(e, scope, expected)
        if isinstance(e, ast.InvalidHeaderExpression):
            if expected is None or not isinstance(strip_newtype(expected), HeaderT | UnionT):
                self.fail(e.loc, "cannot infer the type of {#}")
            return ir.InvalidHdr(expected, e.loc)
        if isinstance(e, ast.TypeNameExpression):
            self.fail(e.loc, "a type cannot be used as a value")
        if isinstance(e, ast.DontCareExpression | ast.DefaultExpression):
            return ir.Const(DONTCARE, e.loc, None)
        if isinstance(e, ast.ConstructorCall):
            return self.host.constructor_value(e, scope)
        self.unsupported(e.loc, f"expression {type(e).__name__}")

    # -- names

    def lookup(self, path: ast.Path, scope: Scope, loc: Loc) -> Any:
        """The symbol for ``path``, or a located 'no such name' error."""
        sym = self.root.lookup(path.name) if path.absolute else scope.lookup(path.name)
        if sym is None:
            self.fail(
                loc,
                f"no declaration named '{path.name}'{did_you_mean(path.name, scope.all_names())}",
            )
        return sym

    def name_expr(self, e: ast.NameExpression, scope: Scope) -> ir.Expr:
        """A name used as a value."""
        sym = self.lookup(e.path, scope, e.loc)
        if isinstance(sym, ValueSym):
            if sym.const_value is not None:
                return sym.const_value
            assert sym.var is not None, sym.name
            return sym.var
        if isinstance(sym, InstanceSym):
            return ir.InstanceRef(sym.type, e.loc, sym.instance)
        if isinstance(sym, StateSym):
            self.fail(e.loc, f"parser state '{sym.name}' cannot be used as a value")
        if isinstance(sym, DeclSym) and sym.kind in ("control", "parser", "package", "extern"):
            return ir.InstanceRef(self.specialise_decl(sym, [], e.loc), e.loc, sym)
        if isinstance(sym, TypeSym):
            self.fail(e.loc, f"type '{sym.name}' cannot be used as a value")
        return ir.InstanceRef(VOID, e.loc, sym)

    def type_of_name(self, e: ast.Expression, scope: Scope) -> P4Type | None:
        """The type that ``e`` names when it is a type used as an expression."""
        if isinstance(e, ast.TypeNameExpression):
            return self.resolve_type(e.type_ref, scope)
        if isinstance(e, ast.NameExpression):
            sym = self.root.lookup(e.path.name) if e.path.absolute else scope.lookup(e.path.name)
            if isinstance(sym, TypeSym) and sym.type is not None:
                return sym.type
        return None

    def member_expr(self, e: ast.Member, scope: Scope) -> ir.Expr:
        """``base.member`` as a value."""
        named = self.type_of_name(e.expr, scope)
        if named is not None:
            return self.type_member(named, e.member, e.loc)
        base = self.expr(e.expr, scope)
        return self.member_of(base, e.member, e.loc)

    def type_member(self, t: P4Type, member: str, loc: Loc) -> ir.Expr:
        """``error.X``, ``E.A``, ``T.minSizeInBits``..."""
        vt = strip_newtype(t)
        if isinstance(vt, ErrorT):
            if member not in self.errors:
                self.fail(loc, f"no error named '{member}'{did_you_mean(member, self.errors)}")
            return ir.Const(ERROR, loc, self.errors.index(member))
        if isinstance(vt, EnumT):
            if member not in vt.members:
                self.fail(
                    loc,
                    f"no member '{member}' in enum {vt.name}"
                    f"{did_you_mean(member, list(vt.members))}",
                )
            return ir.Const(t, loc, vt.members[member])
        self.fail(loc, f"type {t} has no member '{member}'")

    def member_of(self, base: ir.Expr, member: str, loc: Loc) -> ir.Expr:
        """A field or property of a value."""
        if isinstance(base, ir.Call) and base.kind == "table":
            if member not in ("hit", "miss", "action_run"):
                self.fail(loc, f"a table apply result has no member '{member}'")
            t = BOOL if member != "action_run" else base.type
            return ir.TableResult(t, loc, base, member)
        t = strip_newtype(base.type)
        if isinstance(t, StructLike):
            if member not in t.fields:
                kind = (
                    "header"
                    if isinstance(t, HeaderT)
                    else ("header_union" if isinstance(t, UnionT) else "struct")
                )
                self.fail(
                    loc,
                    f"no field '{member}' in {kind} {t}{did_you_mean(member, list(t.fields))}",
                )
            ft = t.fields[member]
            if isinstance(base, ir.StructLit) and all(is_constant(v) for _, v in base.fields):
                return dict(base.fields)[member]
            return ir.FieldRef(ft, loc, base, member)
        if isinstance(t, StackT):
            if member == "size":
                return ir.Const(Bits(32), loc, t.size)
            if member in ("next", "last"):
                return ir.StackRef(t.element, loc, base, member)
            if member == "lastIndex":
                return ir.StackRef(Bits(32), loc, base, "lastIndex")
            self.fail(loc, f"a header stack has no member '{member}'")
        if isinstance(t, TupleT):
            self.fail(loc, f"a tuple has no member '{member}'")
        self.fail(loc, f"{base.type} has no member '{member}'")

    def index_expr(self, e: ast.Index, scope: Scope) -> ir.Expr:
        """``base[index]``."""
        base = self.expr(e.expr, scope)
        t = strip_newtype(base.type)
        idx = self.expr(e.index, scope)
        if isinstance(t, TupleT):
            if not isinstance(idx, ir.Const):
                self.fail(e.loc, "a tuple index must be a compile-time constant")
            i = int(idx.value)
            if not 0 <= i < len(t.elements):
                self.fail(e.loc, f"tuple index {i} out of range")
            if isinstance(base, ir.StructLit):
                return base.fields[i][1]
            return ir.IndexRef(t.elements[i], e.loc, base, ir.Const(INFINT, e.loc, i))
        if not isinstance(t, StackT):
            self.fail(e.loc, f"{base.type} cannot be indexed")
        if isinstance(idx, ir.Const):
            i = int(idx.value)
            if not 0 <= i < t.size:
                self.fail(e.index.loc, f"index {i} out of range for {t}")
        elif not isinstance(value_type(idx.type), Bits):
            self.fail(e.index.loc, f"a stack index must be bit<> or int<>, got {idx.type}")
        return ir.IndexRef(t.element, e.loc, base, idx)

    # -- operators

    def unary(self, op: str, v: ir.Expr, loc: Loc) -> ir.Expr:
        """``op v``."""
        t = value_type(v.type)
        if op == "!":
            if not isinstance(t, Bool):
                self.fail(loc, f"'!' needs a bool operand, got {v.type}")
            if isinstance(v, ir.Const):
                return ir.Const(BOOL, loc, not v.value)
            return ir.UnOp(BOOL, loc, "!", v)
        if op == "+":
            if not isinstance(t, Bits | InfInt):
                self.fail(loc, f"unary '+' needs a number, got {v.type}")
            return v
        if op in ("-", "~"):
            if not isinstance(t, Bits | InfInt):
                self.fail(loc, f"'{op}' needs a bit<> or int<> operand, got {v.type}")
            if op == "~" and isinstance(t, InfInt):
                self.fail(loc, "'~' needs a width: cast the literal first")
            if isinstance(v, ir.Const):
                fold = constfold.negate if op == "-" else constfold.complement
                return ir.Const(t, loc, fold(v.value, t))
            return ir.UnOp(t, loc, op, v)
        self.fail(loc, f"unknown operator '{op}'")

    def _unify_operands(self, op: str, a: ir.Expr, b: ir.Expr, loc: Loc) -> tuple[ir.Expr, ir.Expr]:
        ta, tb = value_type(a.type), value_type(b.type)
        if isinstance(ta, InfInt) and not isinstance(tb, InfInt):
            return self._coerce_operand(a, b.type, op, loc), b
        if isinstance(tb, InfInt) and not isinstance(ta, InfInt):
            return a, self._coerce_operand(b, a.type, op, loc)
        if ta != tb and ta is not tb:
            self.fail(loc, f"type mismatch: {a.type} {op} {b.type}")
        return a, b

    def _coerce_operand(self, v: ir.Expr, t: P4Type, op: str, loc: Loc) -> ir.Expr:
        vt = value_type(t)
        if isinstance(vt, Bits) and isinstance(v, ir.Const):
            return ir.Const(vt, v.loc, constfold.to_value(v.value, vt))
        self.fail(loc, f"type mismatch: {v.type} {op} {t}")

    def binary(self, op: str, a: ir.Expr, b: ir.Expr, loc: Loc) -> ir.Expr:  # noqa: C901 - one case per kind of P4 construct
        """``a op b`` with operand conversion and folding."""
        if op in ("&&", "||"):
            for v in (a, b):
                if not isinstance(value_type(v.type), Bool):
                    self.fail(v.loc, f"'{op}' needs bool operands, got {v.type}")
            if isinstance(a, ir.Const) and isinstance(b, ir.Const):
                return ir.Const(
                    BOOL, loc, (a.value and b.value) if op == "&&" else (a.value or b.value)
                )
            return ir.BinOp(BOOL, loc, op, a, b)
        if op == "++":
            return self._concat(a, b, loc)
        if op in constfold.SHIFT_OPS:
            return self._shift(op, a, b, loc)
        if op in constfold.EQUALITY_OPS:
            return self._equality(op, a, b, loc)
        a, b = self._unify_operands(op, a, b, loc)
        t = value_type(a.type)
        if not isinstance(t, Bits | InfInt):
            self.fail(loc, f"'{op}' needs numeric operands, got {a.type}")
        if op in constfold.COMPARE_OPS:
            if isinstance(a, ir.Const) and isinstance(b, ir.Const):
                return ir.Const(BOOL, loc, constfold.compare(op, a.value, b.value, t))
            return ir.BinOp(BOOL, loc, op, a, b)
        if op not in constfold.ARITH_OPS:
            self.fail(loc, f"unknown operator '{op}'")
        if op in ("/", "%") and isinstance(b, ir.Const) and b.value == 0:
            self.fail(loc, "division by zero")
        if (
            isinstance(t, Bits)
            and t.signed
            and op in ("/", "%")
            and not (isinstance(a, ir.Const) and isinstance(b, ir.Const))
        ):
            self.fail(loc, f"'{op}' is not defined on signed values: {a.type}")
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            try:
                return ir.Const(t, loc, constfold.arith(op, a.value, b.value, t))
            except constfold.FoldError as err:
                self.fail(loc, str(err))
        if isinstance(t, InfInt):
            self.fail(loc, f"'{op}' on int values that are not compile-time constants")
        return ir.BinOp(t, loc, op, a, b)

    def _concat(self, a: ir.Expr, b: ir.Expr, loc: Loc) -> ir.Expr:
        ta, tb = value_type(a.type), value_type(b.type)
        for v, t in ((a, ta), (b, tb)):
            if isinstance(t, InfInt):
                self.fail(v.loc, "concatenation needs widths: cast the int literal to bit<W>")
            if not isinstance(t, Bits):
                self.fail(v.loc, f"'++' needs bit<> or int<> operands, got {v.type}")
        assert isinstance(ta, Bits) and isinstance(tb, Bits)
        rt = Bits(ta.width + tb.width, ta.signed)
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return ir.Const(rt, loc, constfold.concat(a.value, b.value, tb))
        return ir.BinOp(rt, loc, "++", a, b)

    def _shift(self, op: str, a: ir.Expr, b: ir.Expr, loc: Loc) -> ir.Expr:
        ta, tb = value_type(a.type), value_type(b.type)
        if not isinstance(ta, Bits | InfInt):
            self.fail(a.loc, f"'{op}' needs a bit<> or int<> left operand, got {a.type}")
        if isinstance(tb, Bits) and tb.signed:
            self.fail(b.loc, f"a shift amount must be unsigned, got {b.type}")
        if not isinstance(tb, Bits | InfInt):
            self.fail(b.loc, f"a shift amount must be a number, got {b.type}")
        if isinstance(b, ir.Const) and isinstance(tb, InfInt) and b.value < 0:
            self.fail(b.loc, "a shift amount must not be negative")
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return ir.Const(ta, loc, constfold.arith(op, a.value, b.value, ta))
        if isinstance(ta, InfInt):
            self.fail(
                loc, "shift of an int literal by a run-time amount: cast the literal to bit<W>"
            )
        return ir.BinOp(ta, loc, op, a, b)

    def _equality(self, op: str, a: ir.Expr, b: ir.Expr, loc: Loc) -> ir.Expr:
        ta, tb = value_type(a.type), value_type(b.type)
        if isinstance(ta, InfInt) and isinstance(tb, Bits):
            a = self._coerce_operand(a, tb, op, loc)
        elif isinstance(tb, InfInt) and isinstance(ta, Bits):
            b = self._coerce_operand(b, ta, op, loc)
        elif isinstance(a, ir.StructLit) and not isinstance(b, ir.StructLit):
            a = self.coerce(a, b.type, loc)
        elif isinstance(b, ir.StructLit) and not isinstance(a, ir.StructLit):
            b = self.coerce(b, a.type, loc)
        elif ta != tb and ta is not tb and not (isinstance(ta, TupleT) and isinstance(tb, TupleT)):
            self.fail(loc, f"type mismatch: {a.type} {op} {b.type}")
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return ir.Const(BOOL, loc, (a.value == b.value) == (op == "=="))
        return ir.BinOp(BOOL, loc, op, a, b)

    def cast(self, v: ir.Expr, target: P4Type, loc: Loc) -> ir.Expr:
        """``(target) v`` (explicit cast)."""
        src, dst = strip_newtype(v.type), strip_newtype(target)
        if isinstance(v, ir.StructLit) or isinstance(dst, StructLike | TupleT | StackT):
            return self.coerce(v, target, loc)
        if isinstance(v, ir.InvalidHdr):
            return self.coerce(v, target, loc)
        if src == dst or src is dst:
            return self._retype(v, target)
        ok = self._cast_allowed(src, dst)
        if not ok:
            self.fail(loc, f"cannot cast {v.type} to {target}")
        if isinstance(v, ir.Const):
            value = constfold.cast(v.value, src, dst)
            if isinstance(dst, EnumT) and dst.underlying is not None:
                value = constfold.to_value(int(value), dst.underlying)
            return ir.Const(target, loc, value)
        return ir.CastE(target, loc, v)

    def _cast_allowed(self, src: P4Type, dst: P4Type) -> bool:
        su = src.underlying if isinstance(src, EnumT) and src.underlying else src
        du = dst.underlying if isinstance(dst, EnumT) and dst.underlying else dst
        if isinstance(su, Bits | InfInt) and isinstance(du, Bits | InfInt):
            return True
        if isinstance(su, Bool) and isinstance(du, Bits) and du.width == 1 and not du.signed:
            return True
        if isinstance(du, Bool) and isinstance(su, Bits) and su.width == 1:
            return True
        if isinstance(du, Bool) and isinstance(su, InfInt):
            return True
        return isinstance(su, Bool) and isinstance(du, Bool)

    def slice(self, base: ir.Expr, hi: int, lo: int, loc: Loc) -> ir.Expr:
        """``base[hi:lo]``."""
        t = value_type(base.type)
        if isinstance(t, InfInt) and isinstance(base, ir.Const):
            if hi < lo:
                self.fail(loc, f"slice [{hi}:{lo}] has hi < lo")
            return ir.Const(Bits(hi - lo + 1), loc, constfold.slice_bits(base.value, hi, lo))
        if not isinstance(t, Bits):
            self.fail(loc, f"cannot slice a value of type {base.type}")
        if not (0 <= lo <= hi < t.width):
            self.fail(loc, f"slice [{hi}:{lo}] out of range for {base.type}")
        rt = Bits(hi - lo + 1)
        if isinstance(base, ir.Const):
            return ir.Const(rt, loc, constfold.slice_bits(base.value, hi, lo))
        return ir.SliceE(rt, loc, base, hi, lo)

    def plus_slice(self, e: ast.PlusSlice, scope: Scope) -> ir.Expr:
        """``base[b +: w]``."""
        base = self.expr(e.expr, scope)
        width = self.const_int(e.width, scope)
        lo = self.expr(e.base, scope)
        if isinstance(lo, ir.Const):
            return self.slice(base, int(lo.value) + width - 1, int(lo.value), e.loc)
        t = value_type(base.type)
        if not isinstance(t, Bits):
            self.fail(e.loc, f"cannot slice a value of type {base.type}")
        return ir.SliceE(Bits(width), e.loc, base, width - 1, 0, lo)

    def ternary(self, e: ast.Ternary, scope: Scope, expected: P4Type | None) -> ir.Expr:
        """``c ? a : b``."""
        cond = self.coerce(self.expr(e.cond, scope), BOOL, e.cond.loc)
        a = self.expr(e.then, scope, expected)
        b = self.expr(e.else_, scope, expected)
        ta, tb = value_type(a.type), value_type(b.type)
        if isinstance(ta, InfInt) and isinstance(tb, InfInt) and not isinstance(cond, ir.Const):
            if expected is not None and isinstance(value_type(expected), Bits):
                a, b = self.coerce(a, expected, e.loc), self.coerce(b, expected, e.loc)
            else:
                self.fail(e.loc, "cannot infer the width of a ?: of int literals")
        elif isinstance(ta, InfInt):
            a = self.coerce(a, b.type, e.then.loc)
        elif isinstance(tb, InfInt):
            b = self.coerce(b, a.type, e.else_.loc)
        elif isinstance(a, ir.StructLit) and not isinstance(b, ir.StructLit):
            a = self.coerce(a, b.type, e.loc)
        elif isinstance(b, ir.StructLit):
            b = self.coerce(b, a.type, e.loc)
        elif ta != tb and ta is not tb:
            self.fail(e.loc, f"type mismatch: ?: branches have types {a.type} and {b.type}")
        if isinstance(cond, ir.Const):
            return a if cond.value else b
        return ir.Mux(a.type, e.loc, cond, a, b)

    def list_expr(self, e: ast.ListExpression, scope: Scope, expected: P4Type | None) -> ir.Expr:
        """``{a, b}``: a tuple, converted when the context expects a struct etc."""
        et = strip_newtype(expected) if expected is not None else None
        hints: list[P4Type | None] = [None] * len(e.elements)
        if isinstance(et, StructLike) and len(et.fields) == len(e.elements):
            hints = list(et.fields.values())
        elif isinstance(et, TupleT) and len(et.elements) == len(e.elements):
            hints = list(et.elements)
        elif isinstance(et, StackT):
            hints = [et.element] * len(e.elements)
        values = [self.expr(x, scope, h) for x, h in zip(e.elements, hints, strict=True)]
        lit = ir.StructLit(
            TupleT(tuple(v.type for v in values)),
            e.loc,
            [(str(i), v) for i, v in enumerate(values)],
        )
        if expected is not None and isinstance(et, StructLike | TupleT | StackT):
            return self.coerce(lit, expected, e.loc)
        return lit

    def struct_expr(
        self, e: ast.StructExpression, scope: Scope, expected: P4Type | None
    ) -> ir.Expr:
        """``{f = v, ...}``: a struct or header value."""
        target = self.resolve_type(e.type_name, scope) if e.type_name is not None else expected
        tt = strip_newtype(target) if target is not None else None
        fields: list[tuple[str, ir.Expr]] = []
        for kv in e.fields:
            hint = tt.fields.get(kv.key) if isinstance(tt, StructLike) else None
            fields.append((kv.key, self.expr(kv.value, scope, hint)))
        if isinstance(tt, StructLike) and target is not None:
            if e.dots:
                given = {k for k, _ in fields}
                fields += [
                    (f, self.default_value(ft, e.loc))
                    for f, ft in tt.fields.items()
                    if f not in given
                ]
            return self.coerce(ir.StructLit(StructT("", {}), e.loc, fields), target, e.loc)
        if e.dots:
            self.fail(e.loc, "cannot infer the type of a struct expression with '...'")
        anon = StructT("", {k: v.type for k, v in fields})
        return ir.StructLit(anon, e.loc, fields)

    def default_value(self, t: P4Type, loc: Loc) -> ir.Expr:
        """The default value of ``t`` (spec 7.3): 0, false, invalid headers,
        the first enum member, error.NoError, structs of defaults."""
        vt = strip_newtype(t)
        if isinstance(vt, Bits | InfInt):
            return ir.Const(t, loc, 0)
        if isinstance(vt, Bool):
            return ir.Const(t, loc, False)
        if isinstance(vt, ErrorT):
            return ir.Const(t, loc, 0)
        if isinstance(vt, EnumT):
            if vt.underlying is not None:
                return ir.Const(t, loc, 0)
            return ir.Const(t, loc, min(vt.members.values(), default=0))
        if isinstance(vt, HeaderT | UnionT):
            return ir.InvalidHdr(t, loc)
        if isinstance(vt, StructT):
            fields = [(f, self.default_value(ft, loc)) for f, ft in vt.fields.items()]
            return ir.StructLit(t, loc, fields)
        if isinstance(vt, TupleT):
            elems = [(str(i), self.default_value(et, loc)) for i, et in enumerate(vt.elements)]
            return ir.StructLit(t, loc, elems)
        if isinstance(vt, StackT):
            elems = [(str(i), self.default_value(vt.element, loc)) for i in range(vt.size)]
            return ir.StructLit(t, loc, elems)
        self.unsupported(loc, f"default value of {t}")

    # ------------------------------------------------------------------
    # Type inference for generic calls

    def unify(self, pt: P4Type, at: P4Type, binding: dict[str, P4Type]) -> None:
        """Bind the type variables of ``pt`` so that it matches ``at``."""
        if isinstance(pt, TypeVar):
            cur = binding.get(pt.name)
            if cur is None or isinstance(cur, InfInt):
                binding[pt.name] = at
            return
        if (
            isinstance(pt, TupleT)
            and isinstance(at, TupleT)
            and len(pt.elements) == len(at.elements)
        ):
            for p, a in zip(pt.elements, at.elements, strict=True):
                self.unify(p, a, binding)
        if isinstance(pt, StackT) and isinstance(at, StackT):
            self.unify(pt.element, at.element, binding)
        if isinstance(pt, ExternT) and isinstance(at, ExternT):
            for p, a in zip(pt.type_args, at.type_args, strict=False):
                self.unify(p, a, binding)
        if isinstance(pt, BlockT) and isinstance(at, BlockT):
            for pp, ap in zip(pt.params, at.params, strict=False):
                self.unify(pp.type, ap.type, binding)

    def substitute(self, t: P4Type, binding: dict[str, P4Type]) -> P4Type:
        """``t`` with its bound type variables replaced."""
        if isinstance(t, TypeVar):
            return binding.get(t.name, t)
        if isinstance(t, TupleT):
            return TupleT(tuple(self.substitute(e, binding) for e in t.elements))
        if isinstance(t, StackT):
            return StackT(self.substitute(t.element, binding), t.size)
        if isinstance(t, ExternT) and t.type_args:
            return ExternT(t.name, tuple(self.substitute(a, binding) for a in t.type_args), t.decl)
        return t

    # ------------------------------------------------------------------
    # Calls (the callee is bound by the host; arguments are bound here)

    def bind_args(  # noqa: C901 - one case per kind of P4 construct
        self,
        params: Sequence[Param],
        args: Sequence[ast.Argument],
        scope: Scope,
        loc: Loc,
        what: str,
        *,
        binding: dict[str, P4Type] | None = None,
        defaults: Sequence[ast.Expression | None] = (),
        optional: Sequence[bool] = (),
    ) -> tuple[list[ir.Arg], dict[str, P4Type]]:
        """Match ``args`` to ``params`` (positional or named), infer type
        variables, convert each argument, and check directions.  A parameter
        marked in ``optional`` (``@optional``) may be left out: its
        :class:`ir.Arg` then has no expression."""
        binding = dict(binding or {})
        ordered: list[ast.Argument | None] = [None] * len(params)
        names = [p.name for p in params]
        if any(a.name is not None for a in args):
            for named in args:
                if named.name is None:
                    self.fail(named.loc, "cannot mix named and positional arguments")
                if named.name not in names:
                    close = did_you_mean(named.name, names)
                    self.fail(named.loc, f"{what} has no parameter '{named.name}'{close}")
                ordered[names.index(named.name)] = named
        else:
            if len(args) > len(params):
                self.fail(loc, f"{what} takes {len(params)} arguments, got {len(args)}")
            for i, a in enumerate(args):
                ordered[i] = a
        lowered: list[ir.Expr | None] = []
        for p, given in zip(params, ordered, strict=True):
            if given is None:
                lowered.append(None)
                continue
            if isinstance(given.value, ast.DontCareExpression):
                if p.direction != "out":
                    self.fail(given.loc, f"'_' can only be passed to an out parameter ('{p.name}')")
                lowered.append(None)
                continue
            pt = self.substitute(p.type, binding)
            hint = pt if not _has_typevar(pt) else None
            value = self.expr(given.value, scope, hint)
            if not isinstance(value.type, InfInt):
                self.unify(p.type, value.type, binding)
            lowered.append(value)
        for p, low in zip(params, lowered, strict=True):
            if low is not None and isinstance(low.type, InfInt):
                self.unify(p.type, INFINT, binding)
        result: list[ir.Arg] = []
        for i, (p, arg, v) in enumerate(zip(params, ordered, lowered, strict=True)):
            pt = self.substitute(p.type, binding)
            bound = Param(p.name, p.direction, pt, p.has_default)
            if arg is None:
                default = defaults[i] if i < len(defaults) else None
                if default is not None:
                    result.append(
                        ir.Arg(bound, self.coerce(self.expr(default, scope, pt), pt, loc))
                    )
                    continue
                if i < len(optional) and optional[i]:
                    result.append(ir.Arg(bound, None))
                    continue
                self.fail(loc, f"{what}: missing argument for parameter '{p.name}'")
            if v is None:
                result.append(ir.Arg(bound, None))
                continue
            converted = self.coerce(v, pt, arg.loc)
            if p.direction in ("out", "inout"):
                self.check_lvalue(converted, arg.loc)
            result.append(ir.Arg(bound, converted))
        return result, binding

    def check_lvalue(self, v: ir.Expr, loc: Loc) -> None:
        """An error unless ``v`` can be assigned."""
        node = v
        while True:
            if isinstance(node, ir.Var):
                return
            if isinstance(node, ir.FieldRef | ir.IndexRef | ir.StackRef | ir.SliceE):
                if isinstance(node, ir.StackRef) and node.which == "lastIndex":
                    break
                node = node.base
                continue
            break
        self.fail(loc, "expression cannot be assigned: it is not a variable, field or slice")


def _block_conforms(have: BlockT, want: BlockT) -> bool:
    """Whether a parser/control of type ``have`` can be used as ``want``: the
    same kind and apply parameters of the same directions and types (a type
    variable of ``want`` accepts any type)."""
    if have.kind != want.kind or len(have.params) != len(want.params):
        return False
    for h, w in zip(have.params, want.params, strict=True):
        if h.direction != w.direction:
            return False
        if isinstance(w.type, TypeVar) or isinstance(h.type, TypeVar):
            continue
        ht, wt = strip_newtype(h.type), strip_newtype(w.type)
        if ht != wt and ht is not wt:
            return False
    return True


def _has_typevar(t: P4Type) -> bool:
    if isinstance(t, TypeVar):
        return True
    if isinstance(t, TupleT):
        return any(_has_typevar(e) for e in t.elements)
    if isinstance(t, StackT):
        return _has_typevar(t.element)
    if isinstance(t, ExternT):
        return any(_has_typevar(a) for a in t.type_args)
    return False


def is_constant(v: ir.Expr) -> bool:
    """Whether ``v`` is a compile-time constant (possibly a list of them)."""
    if isinstance(v, ir.Const):
        return True
    if isinstance(v, ir.StructLit):
        return all(is_constant(x) for _, x in v.fields)
    return False


__all__ = [
    "BLOCK_KINDS",
    "ExprChecker",
    "ExprHost",
    "is_constant",
]

_UNUSED = (DeclSym, OverloadSym, TableT, ApplyResultT, Param, StructT)
