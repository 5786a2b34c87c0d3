"""Calls, statements, actions and functions, over the expression checker.

:class:`StmtChecker` binds every call to its callee (actions, functions,
extern functions and methods, built-in header/stack/packet methods, table and
block ``apply``), lowers statements, and lowers action and function bodies on
first use (one copy of an action per control that uses it, as p4c's
``LocalizeAllActions`` does; one copy of a function per type-argument list).
Where the current block is needed (actions, tables, digests) it is
``self.ctx``, set by :mod:`elaborate` while it lowers a block.

A :class:`StmtChecker` holds the :class:`~softswitch.frontend.typecheck.ExprChecker`
it lowers expressions with (``exprs``); the one thing it needs from the
elaborator, instantiating a block applied directly (``C.apply()``), goes
through its :class:`StmtHost`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from kvfabric.suggest import did_you_mean
from softswitch.errors import Loc
from softswitch.frontend import ast, ir
from softswitch.frontend.scope import (
    DeclSym,
    InstanceSym,
    OverloadSym,
    Scope,
    TypeSym,
    ValueSym,
)
from softswitch.frontend.typecheck import ExprChecker, is_constant
from softswitch.frontend.types import (
    BOOL,
    ERROR,
    INFINT,
    VOID,
    ActionEnumT,
    Bits,
    BlockT,
    Bool,
    EnumT,
    ExternT,
    HeaderT,
    P4Type,
    Param,
    StackT,
    StructLike,
    StructT,
    TupleT,
    TypeVar,
    UnionT,
    Varbit,
    Void,
    size_in_bits,
    strip_newtype,
)


def _calls_something(node: object) -> bool:
    """Whether the IR expression ``node`` contains a call."""
    if isinstance(node, ir.Call):
        return True
    if isinstance(node, list | tuple):
        return any(_calls_something(item) for item in node)
    if isinstance(node, ir.Expr):
        return any(_calls_something(getattr(node, f.name)) for f in fields(node))
    return False


HEADER_METHODS = {"isValid": BOOL, "setValid": VOID, "setInvalid": VOID}
SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


@dataclass(eq=False)
class BlockCtx:
    """The block being lowered: where its actions, tables and instances go."""

    inst: ir.BlockInstance | None
    prefix: str
    scope: Scope
    actions: dict[int, ir.Action] = field(default_factory=dict)
    in_parser: bool = False


@dataclass(eq=False)
class FuncCtx:
    """The body being lowered: what ``return`` and ``exit`` may do there."""

    kind: str  # "action" | "function" | "control" | "parser"
    ret: P4Type = VOID


class StmtHost(Protocol):
    """What statements need from the elaborator: block instantiation."""

    def direct_instance(self, sym: DeclSym, loc: Loc) -> ir.BlockInstance:
        """The instance created by a direct invocation ``C.apply()``."""
        ...


class StmtChecker:
    """Calls and statements, over the expression checker ``exprs``; blocks
    applied directly (``C.apply()``) are instantiated by ``host``."""

    def __init__(self, exprs: ExprChecker, host: StmtHost) -> None:
        self.exprs = exprs
        self.host = host
        self.ctx: BlockCtx | None = None
        self.fctx: FuncCtx = FuncCtx("control")
        self.functions: dict[tuple[Any, ...], ir.Function] = {}
        self.digests: dict[str, ir.Digest] = {}
        self.all_actions: list[ir.Action] = []
        self.lowered_actions: set[int] = set()
        self._uid = 0

    def uid(self, prefix: str) -> str:
        """A program-unique identifier."""
        self._uid += 1
        return f"{prefix}{self._uid}"

    # ------------------------------------------------------------------
    # Calls

    def call(self, e: ast.Call, scope: Scope) -> ir.Call:
        """Bind a call to its callee and its arguments to the parameters."""
        m = e.method
        if isinstance(m, ast.Member):
            return self._member_call(e, m, scope)
        if isinstance(m, ast.NameExpression):
            sym = self.exprs.lookup(m.path, scope, m.loc)
            if isinstance(sym, DeclSym) and sym.kind == "action":
                return self.action_call(sym, e.args, scope, e.loc)
            if isinstance(sym, DeclSym) and sym.kind == "function":
                return self.function_call(sym, e, scope)
            if isinstance(sym, DeclSym) and sym.kind == "extern_function":
                return self.extern_function_call([sym], e, scope)
            if isinstance(sym, OverloadSym):
                if sym.options[0].kind == "function":
                    for opt in sym.options:
                        if len(opt.decl.params) == len(e.args):
                            return self.function_call(opt, e, scope)
                return self.extern_function_call(sym.options, e, scope)
            self.exprs.fail(m.loc, f"'{m.path.name}' is not a function, action or method")
        self.exprs.fail(e.loc, "this expression cannot be called")

    def _member_call(self, e: ast.Call, m: ast.Member, scope: Scope) -> ir.Call:  # noqa: C901 - one case per kind of P4 construct
        if m.member in SIZE_METHODS:
            return self._size_call(e, m, scope)
        if m.member == "apply":
            sym = self._block_type_sym(m.expr, scope)
            if sym is not None:
                assert self.ctx is not None
                inst = self.host.direct_instance(sym, m.loc)
                return self.block_apply(inst, e, scope)
        base = self.exprs.expr(m.expr, scope)
        if isinstance(base, ir.InstanceRef):
            inst = base.instance
            if isinstance(inst, ir.Table):
                if m.member != "apply":
                    self.exprs.fail(m.loc, f"a table has no method '{m.member}'")
                if e.args:
                    self.exprs.fail(e.loc, "table apply() takes no arguments")
                return ir.Call(ActionEnumT(inst.uid), e.loc, "table", inst, [])
            if isinstance(inst, ir.BlockInstance):
                if m.member != "apply":
                    self.exprs.fail(m.loc, f"a {inst.kind} has no method '{m.member}'")
                return self.block_apply(inst, e, scope)
            if isinstance(inst, ir.ExternInstance):
                assert isinstance(base.type, ExternT)
                return self.method_call(base, base.type, m.member, e, scope)
            self.exprs.fail(m.loc, f"'{m.member}' cannot be called here")
        t = strip_newtype(base.type)
        if isinstance(t, HeaderT) and m.member in HEADER_METHODS:
            if e.args:
                self.exprs.fail(e.loc, f"{m.member}() takes no arguments")
            return ir.Call(HEADER_METHODS[m.member], e.loc, "method", (base, m.member), [])
        if isinstance(t, UnionT) and m.member == "isValid":
            return ir.Call(BOOL, e.loc, "method", (base, m.member), [])
        if isinstance(t, StackT) and m.member in ("push_front", "pop_front"):
            if len(e.args) != 1:
                self.exprs.fail(e.loc, f"{m.member}() takes one argument")
            count = self.exprs.const_int(e.args[0].value, scope)
            arg = ir.Arg(Param("count", "in", INFINT), ir.Const(INFINT, e.loc, count))
            self.exprs.check_lvalue(base, e.loc)
            return ir.Call(VOID, e.loc, "method", (base, m.member), [arg])
        if isinstance(t, ExternT):
            return self.method_call(base, t, m.member, e, scope)
        self.exprs.fail(m.loc, f"{base.type} has no method '{m.member}'")

    def _size_call(self, e: ast.Call, m: ast.Member, scope: Scope) -> ir.Call:
        """``x.minSizeInBits()`` and friends, of a type or an expression: constants."""
        if e.args:
            self.exprs.fail(e.loc, f"{m.member}() takes no arguments")
        t = self.exprs.type_of_name(m.expr, scope)
        if t is None:
            t = self.exprs.expr(m.expr, scope).type
        vt = strip_newtype(t)
        if not isinstance(vt, Bits | Bool | Varbit | StructLike | StackT | TupleT | EnumT):
            self.exprs.fail(m.loc, f"{t} has no method '{m.member}'")
        bits = size_in_bits(t, largest=m.member.startswith("max"))
        value = (bits + 7) // 8 if m.member.endswith("Bytes") else bits
        return ir.Call(INFINT, e.loc, "const", value, [])

    def _block_type_sym(self, e: ast.Expression, scope: Scope) -> DeclSym | None:
        if isinstance(e, ast.TypeNameExpression) and isinstance(e.type_ref, ast.TypeName):
            path = e.type_ref.path
        elif isinstance(e, ast.NameExpression):
            path = e.path
        else:
            return None
        sym = self.exprs.block_sym(
            self.exprs.root.lookup(path.name) if path.absolute else scope.lookup(path.name),
            path.name,
        )
        if isinstance(sym, DeclSym) and sym.kind in ("control", "parser"):
            return sym
        return None

    def block_apply(self, inst: ir.BlockInstance, e: ast.Call, scope: Scope) -> ir.Call:
        """``instance.apply(args)`` for a parser or control instance."""
        params = [
            Param(n, d, v.type)
            for n, v, d in zip(inst.param_names, inst.params, inst.directions, strict=True)
        ]
        args, _ = self.exprs.bind_args(params, e.args, scope, e.loc, f"{inst.type_name}.apply")
        return ir.Call(VOID, e.loc, "block", inst, args)

    def method_call(
        self, receiver: ir.Expr, t: ExternT, name: str, e: ast.Call, scope: Scope
    ) -> ir.Call:
        """A method of an extern object (an instance or a ``packet_in`` parameter)."""
        decl = t.decl
        cands = [md for md in decl.methods if md.name == name and md.return_type is not None]
        if not cands:
            self.exprs.fail(
                e.method.loc,
                f"extern {decl.name} has no method '{name}'"
                f"{did_you_mean(name, [md.name for md in decl.methods])}",
            )
        chosen = self.pick_overload(cands, len(e.args), e.loc, f"{decl.name}.{name}")
        inner = scope.root().child()
        for i, tp in enumerate(decl.type_params):
            bound = t.type_args[i] if i < len(t.type_args) else TypeVar(tp.name)
            inner.names[tp.name] = TypeSym(tp.name, bound)
        args, ret, type_args = self._bind_declared(chosen, e, inner, scope, f"{decl.name}.{name}")
        if name == "lookahead" and isinstance(ret, TypeVar):
            self.exprs.fail(e.loc, "lookahead needs a type argument: lookahead<T>()")
        return ir.Call(ret, e.loc, "method", (receiver, name), args, type_args)

    def pick_overload(self, cands: Sequence[Any], nargs: int, loc: Loc, what: str) -> Any:
        """The declaration among ``cands`` that takes ``nargs`` arguments (exactly,
        else with its optional parameters left out); a located error if none does."""
        for c in cands:
            if len(c.params) == nargs:
                return c
        for c in cands:
            required = _optional_flags(c.params).count(False)
            if required <= nargs <= len(c.params):
                return c
        counts = sorted({len(c.params) for c in cands})
        self.exprs.fail(loc, f"{what} takes {' or '.join(map(str, counts))} arguments, got {nargs}")

    def _bind_declared(
        self, decl: Any, e: ast.Call, inner: Scope, scope: Scope, what: str
    ) -> tuple[list[ir.Arg], P4Type, tuple[P4Type, ...]]:
        """Bind the call ``e`` to the method or extern function ``decl`` (named
        ``what`` in errors), whose type parameters are declared in ``inner``:
        its arguments, its return type and its type arguments."""
        binding = self._explicit_type_args(decl, e, inner, scope)
        params = [self.exprs.param_of(p, inner) for p in decl.params]
        args, binding = self.exprs.bind_args(
            params,
            e.args,
            scope,
            e.loc,
            what,
            binding=binding,
            defaults=[p.default for p in decl.params],
            optional=_optional_flags(decl.params),
        )
        ret = self.exprs.substitute(self.exprs.resolve_type(decl.return_type, inner), binding)
        type_args = tuple(binding.get(tp.name, TypeVar(tp.name)) for tp in decl.type_params)
        return args, ret, type_args

    def _explicit_type_args(
        self, decl: Any, e: ast.Call, inner: Scope, scope: Scope
    ) -> dict[str, P4Type]:
        binding: dict[str, P4Type] = {}
        for tp in decl.type_params:
            inner.names[tp.name] = TypeSym(tp.name, TypeVar(tp.name))
        if e.type_args:
            if len(e.type_args) != len(decl.type_params):
                self.exprs.fail(e.loc, f"{decl.name} takes {len(decl.type_params)} type arguments")
            for tp, ta in zip(decl.type_params, e.type_args, strict=True):
                binding[tp.name] = self.exprs.resolve_type(ta, scope)
        return binding

    def extern_function_call(self, options: list[DeclSym], e: ast.Call, scope: Scope) -> ir.Call:
        """A call of an extern function (``mark_to_drop``, ``hash``, ``verify``...)."""
        decl = self.pick_overload([o.decl for o in options], len(e.args), e.loc, options[0].name)
        inner = scope.root().child()
        args, ret, type_args = self._bind_declared(decl, e, inner, scope, decl.name)
        if decl.name == "static_assert":
            cond = args[0].expr
            if not isinstance(cond, ir.Const):
                self.exprs.fail(e.loc, "static_assert needs a compile-time condition")
            if not cond.value:
                second = args[1].expr if len(args) > 1 else None
                msg = second.value if isinstance(second, ir.Const) else ""
                self.exprs.fail(e.loc, f"static_assert failed: {msg}".rstrip(": "))
            return ir.Call(BOOL, e.loc, "const", True, [])
        if decl.name == "digest" and type_args:
            self.note_digest(type_args[0], e.loc)
        return ir.Call(ret, e.loc, "extern_func", decl.name, args, type_args)

    def note_digest(self, t: P4Type, loc: Loc) -> None:
        """Record the data type of a ``digest()`` call."""
        name = str(t)
        if isinstance(strip_newtype(t), StructT) and name and name not in self.digests:
            self.digests[name] = ir.Digest(name, t, loc)

    def action_call(
        self, sym: DeclSym, args: Sequence[ast.Argument], scope: Scope, loc: Loc
    ) -> ir.Call:
        """A direct call of an action: every parameter gets an argument."""
        action = self.lower_action(sym)
        params = [
            Param(p.name, d, v.type)
            for p, v, d in zip(sym.decl.params, action.params, action.directions, strict=True)
        ]
        bound, _ = self.exprs.bind_args(params, args, scope, loc, f"action {sym.name}")
        return ir.Call(VOID, loc, "action", action, bound)

    def function_call(self, sym: DeclSym, e: ast.Call, scope: Scope) -> ir.Call:
        """A call of a (possibly generic) function."""
        decl: ast.FunctionDeclaration = sym.decl
        inner = sym.scope.child()
        binding = self._explicit_type_args(decl, e, inner, scope)
        params = [self.exprs.param_of(p, inner) for p in decl.params]
        defaults = [p.default for p in decl.params]
        args, binding = self.exprs.bind_args(
            params, e.args, scope, e.loc, decl.name, binding=binding, defaults=defaults
        )
        type_args = tuple(binding.get(tp.name, TypeVar(tp.name)) for tp in decl.type_params)
        func = self.lower_function(sym, type_args)
        args = [
            ir.Arg(Param(v.name, a.param.direction, a.param.type), a.expr)
            for v, a in zip(func.params, args, strict=True)
        ]
        return ir.Call(func.ret, e.loc, "function", func, args)

    # ------------------------------------------------------------------
    # Actions and functions

    def lower_action(self, sym: DeclSym) -> ir.Action:
        """The current block's copy of the action declared by ``sym``."""
        assert self.ctx is not None
        decl: ast.ActionDeclaration = sym.decl
        found = self.ctx.actions.get(id(decl))
        if found is not None:
            return found
        self.lowered_actions.add(id(decl))
        anns = self.exprs.annotations(decl.annotations, sym.scope)
        at_top = sym.scope is self.exprs.root
        name = self.cp_name(decl.name, anns, "" if at_top else self.ctx.prefix)
        inner = sym.scope.child()
        params, dirs = self._declare_params(decl.params, inner)
        action = ir.Action(name, decl.name, params, dirs, [], anns, decl.loc, self.uid("a"))
        self.ctx.actions[id(decl)] = action
        if self.ctx.inst is not None:
            self.ctx.inst.actions.append(action)
        saved = self.fctx
        self.fctx = FuncCtx("action")
        try:
            action.body = self.block(decl.body.items, inner)
        finally:
            self.fctx = saved
        self.all_actions.append(action)
        return action

    def _declare_params(
        self, declared: Sequence[ast.Parameter], inner: Scope
    ) -> tuple[list[ir.Var], list[str]]:
        """Declare an action's or function's parameters in its scope ``inner``:
        their variables and their directions ("" for a directionless one)."""
        params: list[ir.Var] = []
        dirs: list[str] = []
        for p in declared:
            t = self.exprs.resolve_type(p.type, inner)
            v = self.exprs.fresh_var(p.name, t, p.loc)
            inner.names[p.name] = ValueSym(p.name, t, v, p.direction or "", is_param=True)
            params.append(v)
            dirs.append(p.direction or "")
        return params, dirs

    def cp_name(self, local: str, anns: list[ir.Annotation], prefix: str) -> str:
        """The control-plane name of a declaration, honouring ``@name``."""
        ann = ir.find_annotation(anns, "name")
        if ann is not None and ann.args and isinstance(ann.args[0], str):
            given = ann.args[0]
            if given.startswith("."):
                return given[1:]
            local = given
        return f"{prefix}.{local}" if prefix else local

    def lower_function(self, sym: DeclSym, type_args: tuple[P4Type, ...]) -> ir.Function:
        """The copy of a function for these type arguments."""
        decl: ast.FunctionDeclaration = sym.decl
        key = (id(decl), type_args)
        found = self.functions.get(key)
        if found is not None:
            return found
        inner = sym.scope.child()
        for tp, ta in zip(decl.type_params, type_args, strict=True):
            inner.names[tp.name] = TypeSym(tp.name, ta)
        params, dirs = self._declare_params(decl.params, inner)
        ret = self.exprs.resolve_type(decl.return_type, inner)
        func = ir.Function(decl.name, params, dirs, ret, [], decl.loc, self.uid("f"))
        self.functions[key] = func
        saved = self.fctx
        self.fctx = FuncCtx("function", ret)
        try:
            func.body = self.block(decl.body.items, inner)
        finally:
            self.fctx = saved
        return func

    # ------------------------------------------------------------------
    # Statements

    def block(
        self, items: Sequence[ast.Statement | ast.Declaration], scope: Scope
    ) -> list[ir.Stmt]:
        """A list of statements and local declarations, in a new scope."""
        inner = scope.child()
        out: list[ir.Stmt] = []
        for item in items:
            out.extend(self.stmt(item, inner))
        return out

    def stmt(self, s: ast.Statement | ast.Declaration, scope: Scope) -> list[ir.Stmt]:  # noqa: C901 - one case per kind of P4 construct
        """Lower one statement or local declaration."""
        if isinstance(s, ast.AssignmentStatement):
            return self.assignment(s, scope)
        if isinstance(s, ast.MethodCallStatement):
            call = self.call(s.call, scope)
            if call.kind == "const":
                return []
            return [ir.CallStmt(s.loc, call)]
        if isinstance(s, ast.BlockStatement):
            return self.block(s.items, scope)
        if isinstance(s, ast.IfStatement):
            cond = self.exprs.coerce(self.exprs.expr(s.cond, scope, BOOL), BOOL, s.cond.loc)
            then = self.stmt_list(s.then, scope)
            else_ = self.stmt_list(s.else_, scope) if s.else_ is not None else []
            if isinstance(cond, ir.Const):
                return then if cond.value else else_
            return [ir.If(s.loc, cond, then, else_)]
        if isinstance(s, ast.EmptyStatement):
            return []
        if isinstance(s, ast.ExitStatement):
            if self.fctx.kind in ("function", "parser"):
                self.exprs.fail(s.loc, f"exit is not allowed in a {self.fctx.kind}")
            return [ir.Exit(s.loc)]
        if isinstance(s, ast.ReturnStatement):
            return [self.return_stmt(s, scope)]
        if isinstance(s, ast.SwitchStatement):
            return [self.switch(s, scope)]
        if isinstance(s, ast.VariableDeclaration):
            return self.var_decl(s, scope)
        if isinstance(s, ast.ConstantDeclaration):
            self.const_decl(s, scope)
            return []
        if isinstance(s, ast.ForStatement):
            return self.for_stmt(s, scope)
        if isinstance(s, ast.ForInStatement):
            return self.for_in(s, scope)
        if isinstance(s, ast.BreakStatement):
            return [ir.Break(s.loc)]
        if isinstance(s, ast.ContinueStatement):
            return [ir.Continue(s.loc)]
        self.exprs.unsupported(s.loc, f"statement {type(s).__name__}")

    def stmt_list(self, s: ast.Statement, scope: Scope) -> list[ir.Stmt]:
        """A statement in its own scope (the branch of an if, a loop body)."""
        return self.stmt(s, scope.child())

    def assignment(self, s: ast.AssignmentStatement, scope: Scope) -> list[ir.Stmt]:
        """``lhs = rhs`` and the compound forms ``lhs op= rhs``.

        ``lhs op= rhs`` is ``lhs = lhs op rhs`` with ``lhs`` evaluated once: a
        call in one of its indices (``a[f()] += 1``) runs once, its value kept
        in a temporary declared before the assignment."""
        lhs = self.exprs.expr(s.target, scope)
        self.exprs.check_lvalue(lhs, s.target.loc)
        if isinstance(lhs.type, ActionEnumT):
            self.exprs.fail(s.loc, "cannot assign an action_run value")
        before: list[ir.Stmt] = []
        if s.op != "=":
            lhs = self._place_once(lhs, before)
        rhs = self.exprs.expr(s.value, scope, lhs.type)
        if s.op != "=":
            rhs = self.exprs.binary(s.op[:-1], lhs, rhs, s.loc)
        rhs = self.exprs.coerce(rhs, lhs.type, s.value.loc)
        return [*before, ir.Assign(s.loc, lhs, rhs)]

    def _place_once(self, e: ir.Expr, before: list[ir.Stmt]) -> ir.Expr:
        """The l-value ``e`` with every index that calls something replaced by
        a temporary, whose declaration is appended to ``before`` (outer
        indices first, as they are evaluated)."""

        def once(index: ir.Expr) -> ir.Expr:
            if not _calls_something(index):
                return index
            tmp = self.exprs.fresh_var("index", index.type, index.loc)
            before.append(ir.VarDecl(index.loc, tmp, index))
            return tmp

        if isinstance(e, ir.IndexRef):
            base = self._place_once(e.base, before)
            return ir.IndexRef(e.type, e.loc, base, once(e.index))
        if isinstance(e, ir.FieldRef):
            return ir.FieldRef(e.type, e.loc, self._place_once(e.base, before), e.field)
        if isinstance(e, ir.StackRef):
            return ir.StackRef(e.type, e.loc, self._place_once(e.base, before), e.which)
        if isinstance(e, ir.SliceE):
            base = self._place_once(e.base, before)
            lo = once(e.dyn_lo) if e.dyn_lo is not None else None
            return ir.SliceE(e.type, e.loc, base, e.hi, e.lo, lo)
        return e

    def return_stmt(self, s: ast.ReturnStatement, scope: Scope) -> ir.Stmt:
        """``return [value];``."""
        if s.value is None:
            if not isinstance(self.fctx.ret, Void):
                self.exprs.fail(s.loc, f"this function must return a value of type {self.fctx.ret}")
            return ir.Return(s.loc, None)
        if isinstance(self.fctx.ret, Void):
            self.exprs.fail(s.loc, "return with a value in a void function or action")
        v = self.exprs.coerce(
            self.exprs.expr(s.value, scope, self.fctx.ret), self.fctx.ret, s.value.loc
        )
        return ir.Return(s.loc, v)

    def var_decl(self, s: ast.VariableDeclaration, scope: Scope) -> list[ir.Stmt]:
        """A local variable."""
        if s.name in scope.names:
            self.exprs.fail(s.loc, f"duplicate declaration of '{s.name}'")
        t = self.exprs.resolve_type(s.type, scope)
        init = None
        if s.init is not None:
            init = self.exprs.coerce(self.exprs.expr(s.init, scope, t), t, s.init.loc)
        v = self.exprs.fresh_var(s.name, t, s.loc)
        scope.names[s.name] = ValueSym(s.name, t, v)
        return [ir.VarDecl(s.loc, v, init)]

    def const_decl(self, s: ast.ConstantDeclaration, scope: Scope) -> None:
        """A constant: folded and bound by value."""
        if s.name in scope.names:
            self.exprs.fail(s.loc, f"duplicate declaration of '{s.name}'")
        t = self.exprs.resolve_type(s.type, scope)
        value = self.exprs.const_value(s.value, scope, t)
        scope.names[s.name] = ValueSym(s.name, t, None, const_value=value)

    def switch(self, s: ast.SwitchStatement, scope: Scope) -> ir.Stmt:
        """``switch`` on a table's ``action_run`` or on a value."""
        subject = self.exprs.expr(s.expr, scope)
        cases: list[ir.SwitchCase] = []
        pending: list[Any] = []
        seen: set[Any] = set()
        is_action = isinstance(subject, ir.TableResult) and subject.which == "action_run"
        for c in s.cases:
            is_default = isinstance(c.label, ast.DefaultExpression)
            if not is_default:
                label = self._switch_label(c.label, subject, is_action, scope)
                if label in seen:
                    self.exprs.fail(c.label.loc, "duplicate switch label")
                seen.add(label)
                pending.append(label)
            if c.body is None:
                if is_default:
                    self.exprs.fail(c.loc, "default label cannot fall through")
                continue
            body = self.block(c.body.items, scope)
            cases.append(ir.SwitchCase(pending, is_default, body))
            pending = []
        if pending:
            cases.append(ir.SwitchCase(pending, False, []))
        return ir.Switch(s.loc, subject, cases)

    def _switch_label(
        self, label: ast.Expression, subject: ir.Expr, is_action: bool, scope: Scope
    ) -> Any:
        if is_action:
            assert isinstance(subject, ir.TableResult)
            table: ir.Table = subject.call.target
            if not isinstance(label, ast.NameExpression):
                self.exprs.fail(label.loc, "a switch on action_run needs action names as labels")
            for ref in table.actions:
                if ref.action.local_name == label.path.name:
                    return ref.action.uid
            self.exprs.fail(
                label.loc, f"action '{label.path.name}' is not an action of table {table.name}"
            )
        v = self.exprs.coerce(self.exprs.expr(label, scope, subject.type), subject.type, label.loc)
        if not isinstance(v, ir.Const):
            self.exprs.fail(label.loc, "switch labels must be compile-time constants")
        return v.value

    def for_stmt(self, s: ast.ForStatement, scope: Scope) -> list[ir.Stmt]:
        """``for (init; cond; updates) body``."""
        inner = scope.child()
        init: list[ir.Stmt] = []
        for item in s.init:
            init.extend(self.stmt(item, inner))
        cond = None
        if s.cond is not None:
            cond = self.exprs.coerce(self.exprs.expr(s.cond, inner, BOOL), BOOL, s.cond.loc)
        updates: list[ir.Stmt] = []
        for u in s.updates:
            updates.extend(self.stmt(u, inner))
        body = self.stmt_list(s.body, inner)
        return [ir.Loop(s.loc, init, cond, updates, body)]

    def for_in(self, s: ast.ForInStatement, scope: Scope) -> list[ir.Stmt]:
        """``for (T x in collection) body``."""
        inner = scope.child()
        coll = self.exprs.expr(s.collection, inner)
        ct = strip_newtype(coll.type)
        if isinstance(ct, StackT):
            et: P4Type = ct.element
        elif isinstance(ct, TupleT) and ct.elements:
            et = ct.elements[0]
        else:
            self.exprs.unsupported(s.loc, f"for-in over {coll.type}")
        if s.var_type is not None:
            et = self.exprs.resolve_type(s.var_type, inner)
        v = self.exprs.fresh_var(s.var_name, et, s.loc)
        inner.names[s.var_name] = ValueSym(s.var_name, et, v)
        body = self.stmt_list(s.body, inner)
        return [ir.ForIn(s.loc, v, coll, body)]


def _optional_flags(params: Sequence[ast.Parameter]) -> list[bool]:
    """Which parameters a call may leave out (a default value or ``@optional``)."""
    return [
        p.default is not None or any(a.name == "optional" for a in p.annotations) for p in params
    ]


__all__ = ["BlockCtx", "FuncCtx", "StmtChecker", "StmtHost"]

_TYPES_USED = (Bits, Bool, BlockT, ERROR, InstanceSym, is_constant)
