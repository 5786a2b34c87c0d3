"""Elaboration: instantiate ``main`` and build the :class:`ir.Program`.

Starting from the top-level ``main`` instantiation (``V1Switch(...)``), every
constructor argument is instantiated recursively: a parser or control
declaration becomes an :class:`ir.BlockInstance` whose locals, actions,
tables, extern instances and nested instances are lowered with the
constructor parameters bound to their (constant) arguments.

Control-plane names follow p4c:

* an anonymous top-level instance (``MyIngress()`` as an argument of
  ``V1Switch``) is named after its type, so its locals are
  ``MyIngress.<local>``;
* a nested instantiation ``C() c;`` inside ``MyIngress`` prefixes its locals
  with ``MyIngress.c``; a direct invocation ``C.apply()`` with ``MyIngress.C``;
* ``@name("x")`` replaces the local part (``MyIngress.x``) and
  ``@name(".x")`` gives the absolute name ``x``;
* actions declared at the top level keep their bare name (``NoAction``),
  actions declared in a control get the control's prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvfabric.suggest import did_you_mean
from softswitch.errors import Loc
from softswitch.frontend import ast, ir
from softswitch.frontend.scope import (
    DeclSym,
    InstanceSym,
    OverloadSym,
    Scope,
    StateSym,
    TypeSym,
    ValueSym,
)
from softswitch.frontend.stmtcheck import BlockCtx, FuncCtx, StmtChecker
from softswitch.frontend.typecheck import ExprChecker, is_constant
from softswitch.frontend.types import (
    BOOL,
    Bits,
    BlockT,
    Bool,
    EnumT,
    ErrorT,
    ExternT,
    HeaderT,
    InfInt,
    P4Type,
    Param,
    TableT,
    TupleT,
    TypeVar,
    bit_width,
    strip_newtype,
)
from softswitch.frontend.unreached import check_unreached, defer_unused_actions

KNOWN_TABLE_PROPERTIES = (
    "key",
    "actions",
    "default_action",
    "entries",
    "size",
    "implementation",
    "counters",
    "meters",
    "support_timeout",
)


def expr_text(e: ast.Expression) -> str:
    """The expression as p4c prints it in control-plane key names."""
    if isinstance(e, ast.NameExpression):
        return str(e.path)
    if isinstance(e, ast.Member):
        return f"{expr_text(e.expr)}.{e.member}"
    if isinstance(e, ast.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, ast.Call):
        args = ", ".join(expr_text(a.value) for a in e.args)
        return f"{expr_text(e.method)}({args})"
    if isinstance(e, ast.IntLiteral):
        return _constant_text(e)
    if isinstance(e, ast.BoolLiteral):
        return "true" if e.value else "false"
    if isinstance(e, ast.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, ast.Unary):
        return f"{e.op}{expr_text(e.operand)}"
    if isinstance(e, ast.Cast):
        return f"({_type_text(e.target)}){expr_text(e.expr)}"
    if isinstance(e, ast.TypeNameExpression):
        return _type_text(e.type_ref)
    return type(e).__name__


def _constant_text(e: ast.IntLiteral) -> str:
    """A constant as p4c's ``Constant::toString`` prints it: the value in the
    base it was written in, without a width (``8w0xFF`` is ``0xff``)."""
    spelling = e.text.replace("_", "").lower()
    digits = spelling.split("w", 1)[-1].split("s", 1)[-1] if spelling[:1].isdigit() else spelling
    value = abs(e.value)
    sign = "-" if e.value < 0 else ""
    if digits.startswith("0x"):
        return f"{sign}0x{value:x}"
    if digits.startswith("0b"):
        return f"{sign}0b{value:b}"
    if digits.startswith("0o"):
        return f"{sign}0o{value:o}"
    return f"{sign}{value}"


def _type_text(t: ast.Type) -> str:
    if isinstance(t, ast.BitsType):
        w = expr_text(t.width) if t.width is not None else "1"
        return f"{'int' if t.signed else 'bit'}<{w}>"
    if isinstance(t, ast.TypeName):
        return str(t.path)
    if isinstance(t, ast.BoolType):
        return "bool"
    return type(t).__name__


class Elaborator:
    """Checks a whole program and elaborates ``main`` into an :class:`ir.Program`.

    It owns the checkers: ``exprs`` for types and expressions, ``stmts`` for
    calls, statements, actions and functions.  They reach back to it only
    through their host protocols (:class:`ExprHost`, :class:`StmtHost`)."""

    def __init__(self, source: str) -> None:
        self.exprs = ExprChecker(self)
        self.stmts = StmtChecker(self.exprs, self)
        self.program = ir.Program(source)
        self._top_instances: dict[str, Any] = {}
        self.instantiated: set[int] = set()
        self.deferred: list[Callable[[], object]] = []

    # ------------------------------------------------------------------
    # Top level

    def run(self, prog: ast.Program) -> ir.Program:
        """Check ``prog`` and return the elaborated program."""
        self.stmts.ctx = BlockCtx(None, "", self.exprs.root)
        main: ast.Instantiation | None = None
        for d in prog.declarations:
            if isinstance(d, ast.Instantiation) and d.name == "main":
                main = d
                continue
            self.top_decl(d)
        if main is None:
            self.exprs.fail(prog.loc, "the program declares no 'main' package instance")
        self.elaborate_main(main)
        check_unreached(self, prog)
        p = self.program
        p.errors = list(self.exprs.errors)
        p.types = dict(self.exprs.named_types)
        p.digests = list(self.stmts.digests.values())
        p.functions = list(self.stmts.functions.values())
        p.all_actions = list(self.stmts.all_actions)
        seen: dict[str, ir.Action] = {}
        for a in self.stmts.all_actions:
            seen.setdefault(a.name, a)
        p.actions = list(seen.values())
        p.controller_headers = [
            t
            for t in self.exprs.named_types.values()
            if isinstance(t, HeaderT) and ir.find_annotation(t.annotations, "controller_header")
        ]
        return p

    def top_decl(self, d: ast.Declaration) -> None:  # noqa: C901 - one case per kind of P4 construct
        """Enter one top-level declaration."""
        root = self.exprs.root
        if isinstance(d, ast.ErrorDeclaration):
            for m in d.members:
                if m.name not in self.exprs.errors:
                    self.exprs.errors.append(m.name)
            root.names.setdefault("error", TypeSym("error", ErrorT()))
        elif isinstance(d, ast.MatchKindDeclaration):
            for m in d.members:
                if m.name not in self.exprs.match_kinds:
                    self.exprs.match_kinds.append(m.name)
        elif isinstance(
            d,
            ast.HeaderDeclaration
            | ast.StructDeclaration
            | ast.HeaderUnionDeclaration
            | ast.EnumDeclaration
            | ast.TypedefDeclaration
            | ast.NewTypeDeclaration,
        ):
            self._check_fresh(d, getattr(d, "name", ""))
            self.exprs.declare_type(d, root)
        elif isinstance(d, ast.ConstantDeclaration):
            self.stmts.const_decl(d, root)
        elif isinstance(d, ast.ExternDeclaration):
            self._check_fresh(d, d.name)
            root.names[d.name] = DeclSym(d.name, d, root, "extern")
        elif isinstance(d, ast.ExternFunctionDeclaration | ast.FunctionDeclaration):
            kind = "extern_function" if isinstance(d, ast.ExternFunctionDeclaration) else "function"
            sym = DeclSym(d.name, d, root, kind)
            prev = root.names.get(d.name)
            if isinstance(prev, DeclSym) and prev.kind in ("parser", "control"):
                # p4c lets a parser or control share its name with a function
                self.exprs.shadow_blocks[d.name] = prev
                root.names[d.name] = sym
            elif isinstance(prev, DeclSym) and prev.kind == kind:
                root.names[d.name] = OverloadSym(d.name, [prev, sym])
            elif isinstance(prev, OverloadSym):
                prev.options.append(sym)
            else:
                self._check_fresh(d, d.name)
                root.names[d.name] = sym
        elif isinstance(d, ast.ActionDeclaration):
            self._check_fresh(d, d.name)
            root.names[d.name] = DeclSym(d.name, d, root, "action")
        elif isinstance(d, ast.ParserDeclaration | ast.ControlDeclaration):
            kind = "parser" if isinstance(d, ast.ParserDeclaration) else "control"
            prev = root.names.get(d.name)
            if isinstance(prev, OverloadSym) or (
                isinstance(prev, DeclSym) and prev.kind in ("extern_function", "function")
            ):
                # e.g. control verify_checksum(...) next to v1model's extern
                # function verify_checksum: p4c resolves each by its use
                self.exprs.shadow_blocks[d.name] = DeclSym(d.name, d, root, kind)
                return
            self._check_fresh(d, d.name)
            root.names[d.name] = DeclSym(d.name, d, root, kind)
        elif isinstance(d, ast.ParserTypeDeclaration | ast.ControlTypeDeclaration):
            self._check_fresh(d, d.name)
            kind = "parser_type" if isinstance(d, ast.ParserTypeDeclaration) else "control_type"
            root.names[d.name] = DeclSym(d.name, d, root, kind)
        elif isinstance(d, ast.PackageTypeDeclaration):
            self._check_fresh(d, d.name)
            root.names[d.name] = DeclSym(d.name, d, root, "package")
        elif isinstance(d, ast.Instantiation):
            root.names[d.name] = self.instantiate(d, root)
        else:
            self.exprs.unsupported(d.loc, f"top-level {type(d).__name__}")

    def _check_fresh(self, d: ast.Declaration, name: str) -> None:
        if name and name in self.exprs.root.names:
            self.exprs.fail(d.loc, f"duplicate declaration of '{name}'")

    def elaborate_main(self, main: ast.Instantiation) -> None:
        """Instantiate the package and its blocks."""
        t = main.type
        base = t.base if isinstance(t, ast.SpecializedType) else t
        if not isinstance(base, ast.TypeName):
            self.exprs.fail(main.loc, "main must instantiate a package")
        sym = self.exprs.lookup(base.path, self.exprs.root, base.loc)
        if not isinstance(sym, DeclSym) or sym.kind != "package":
            self.exprs.fail(main.loc, f"'{base.path.name}' is not a package")
        decl: ast.PackageTypeDeclaration = sym.decl
        self.program.package = decl.name
        if len(main.args) != len(decl.params):
            self.exprs.fail(
                main.loc, f"{decl.name} takes {len(decl.params)} arguments, got {len(main.args)}"
            )
        names = [p.name for p in decl.params]
        if any(a.name is not None for a in main.args):
            # V1Switch(p = ParserImpl(), ig = ingress(), ...) in any order
            for a in main.args:
                if a.name is None:
                    self.exprs.fail(a.loc, "cannot mix named and positional arguments")
                if a.name not in names:
                    close = did_you_mean(a.name, names)
                    self.exprs.fail(a.loc, f"{decl.name} has no parameter '{a.name}'{close}")
            given = {a.name: a for a in main.args}
            if len(given) != len(main.args):
                self.exprs.fail(main.loc, f"{decl.name}: an argument is given twice")
            args = [given[n] for n in names if n in given]
            if len(args) != len(names):
                self.exprs.fail(
                    main.loc, f"{decl.name} takes {len(names)} arguments, got {len(args)}"
                )
        else:
            args = list(main.args)
        # The package's parameter types, its type parameters as variables
        # (or main's explicit type arguments): the blocks that are not generic
        # bind them, and generic ones get their type arguments from them.
        inner = sym.scope.child()
        targs = self._type_args(t, self.exprs.root) or []
        for i, tp in enumerate(decl.type_params):
            bound = targs[i] if i < len(targs) else TypeVar(tp.name)
            inner.names[tp.name] = TypeSym(tp.name, bound)
        wanted = [self.exprs.param_of(p, inner).type for p in decl.params]
        binding: dict[str, P4Type] = {}
        generic: list[tuple[str, ast.ConstructorCall, P4Type, DeclSym]] = []
        for p, a, want in zip(decl.params, args, wanted, strict=True):
            block = self._generic_constructor(a.value)
            if block is not None:
                assert isinstance(a.value, ast.ConstructorCall)
                generic.append((p.name, a.value, want, block))
                continue
            inst = self.package_arg(a.value, self.exprs.root)
            self.program.pipeline[p.name] = inst
            self.exprs.unify(want, _block_type(inst), binding)
        for name, call, want, block in generic:
            inferred = self._infer_type_args(
                block, _substitute_params(self.exprs, want, binding), call
            )
            self.program.pipeline[name] = self.package_arg(
                call, self.exprs.root, type_args=inferred
            )

    def _generic_constructor(self, e: ast.Expression) -> DeclSym | None:
        """The generic parser/control ``e`` constructs without type arguments, if any."""
        if not isinstance(e, ast.ConstructorCall) or isinstance(e.type_ref, ast.SpecializedType):
            return None
        base = e.type_ref
        if not isinstance(base, ast.TypeName):
            return None
        sym = self.exprs.block_sym(
            self.exprs.lookup(base.path, self.exprs.root, base.loc), base.path.name
        )
        if isinstance(sym, DeclSym) and sym.kind in ("parser", "control") and sym.decl.type_params:
            return sym
        return None

    def _infer_type_args(
        self, sym: DeclSym, want: P4Type, call: ast.ConstructorCall
    ) -> list[P4Type]:
        """Type arguments of a generic block from the package parameter it fills."""
        own = self.exprs.specialise_decl(sym, [], call.loc)
        binding: dict[str, P4Type] = {}
        self.exprs.unify(own, want, binding)
        inferred: list[P4Type] = []
        for tp in sym.decl.type_params:
            found = binding.get(tp.name)
            if found is None or isinstance(found, TypeVar):
                self.exprs.fail(call.loc, f"cannot infer type argument '{tp.name}' of {sym.name}")
            inferred.append(found)
        return inferred

    def package_arg(
        self, e: ast.Expression, scope: Scope, type_args: list[P4Type] | None = None
    ) -> ir.BlockInstance:
        """One argument of the package: a constructor call or a top-level instance."""
        if isinstance(e, ast.ConstructorCall):
            base = e.type_ref.base if isinstance(e.type_ref, ast.SpecializedType) else e.type_ref
            if not isinstance(base, ast.TypeName):
                self.exprs.fail(e.loc, "expected a parser or control constructor")
            sym = self.exprs.block_sym(
                self.exprs.lookup(base.path, scope, base.loc), base.path.name
            )
            if not isinstance(sym, DeclSym) or sym.kind not in ("parser", "control"):
                self.exprs.fail(e.loc, f"'{base.path.name}' is not a parser or control")
            anns = self.exprs.annotations(sym.decl.annotations, self.exprs.root)
            prefix = self.stmts.cp_name(sym.decl.name, anns, "")
            return self.instantiate_block(
                sym,
                e.args,
                scope,
                prefix,
                loc=e.loc,
                type_args=type_args or self._type_args(e.type_ref, scope),
            )
        if isinstance(e, ast.NameExpression):
            found = self.exprs.lookup(e.path, scope, e.loc)
            if isinstance(found, InstanceSym) and isinstance(found.instance, ir.BlockInstance):
                return found.instance
        self.exprs.fail(e.loc, "expected a parser or control instance")

    # ------------------------------------------------------------------
    # Blocks

    def instantiate_block(
        self,
        sym: DeclSym,
        ctor_args: list[ast.Argument],
        arg_scope: Scope,
        prefix: str,
        *,
        loc: Loc,
        type_args: list[P4Type] | None = None,
    ) -> ir.BlockInstance:
        """Instantiate a parser or control declaration; a generic one needs
        ``type_args`` (type variables stay variables when checking it unused)."""
        decl = sym.decl
        self.instantiated.add(id(decl))
        scope = sym.scope.child()
        if decl.type_params:
            if type_args is None:
                self.exprs.unsupported(
                    loc, f"type arguments of generic {decl.name} left to inference"
                )
            if len(type_args) != len(decl.type_params):
                self.exprs.fail(
                    loc,
                    f"{decl.name} takes {len(decl.type_params)} type arguments, "
                    f"got {len(type_args)}",
                )
            for tp, ta in zip(decl.type_params, type_args, strict=True):
                scope.names[tp.name] = TypeSym(tp.name, ta)
        elif type_args:
            self.exprs.fail(loc, f"{decl.name} takes no type arguments")
        self.bind_ctor_params(
            decl.ctor_params, ctor_args, arg_scope, scope, loc=loc, what=decl.name
        )
        anns = self.exprs.annotations(decl.annotations, sym.scope)
        kind = "parser" if isinstance(decl, ast.ParserDeclaration) else "control"
        inst = ir.BlockInstance(
            kind,
            prefix,
            decl.name,
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            anns,
            decl.loc,
            self.stmts.uid("b"),
        )
        for p in decl.params:
            t = self.exprs.resolve_type(p.type, scope)
            v = self.exprs.fresh_var(p.name, t, p.loc)
            if p.name in scope.names:
                self.exprs.fail(p.loc, f"duplicate parameter '{p.name}'")
            scope.names[p.name] = ValueSym(p.name, t, v, p.direction or "", is_param=True)
            inst.params.append(v)
            inst.directions.append(p.direction or "")
            inst.param_names.append(p.name)
        saved, saved_f = self.stmts.ctx, self.stmts.fctx
        self.stmts.ctx = BlockCtx(inst, prefix, scope, in_parser=kind == "parser")
        self.stmts.fctx = FuncCtx(kind)
        try:
            for local in decl.locals:
                self.local_decl(local, scope)
            if isinstance(decl, ast.ControlDeclaration):
                inst.body = self.stmts.block(decl.body.items, scope)
            else:
                self.parser_states(decl, scope, inst)
            defer_unused_actions(self, decl.locals, scope, prefix)
        finally:
            self.stmts.ctx, self.stmts.fctx = saved, saved_f
        return inst

    def _type_args(self, t: ast.Type, scope: Scope) -> list[P4Type] | None:
        if isinstance(t, ast.SpecializedType):
            return [self.exprs.resolve_type(a, scope) for a in t.args]
        return None

    def bind_ctor_params(
        self,
        params: list[ast.Parameter],
        args: list[ast.Argument],
        arg_scope: Scope,
        scope: Scope,
        *,
        loc: Loc,
        what: str,
    ) -> None:
        """Bind constructor parameters to compile-time values or instances."""
        ps = [self.exprs.param_of(p, scope) for p in params]
        bound, _ = self.exprs.bind_args(
            ps, args, arg_scope, loc, what, defaults=[p.default for p in params]
        )
        for p, a in zip(params, bound, strict=True):
            v = a.expr
            if isinstance(v, ir.InstanceRef):
                scope.names[p.name] = InstanceSym(p.name, v.instance, v.type)
            elif v is not None and is_constant(v):
                scope.names[p.name] = ValueSym(
                    p.name, a.param.type, None, const_value=v, is_ctor_param=True
                )
            else:
                self.exprs.fail(
                    loc, f"constructor argument '{p.name}' must be a compile-time constant"
                )

    def call(self, e: ast.Call, scope: Scope) -> ir.Call:
        """Bind a call to its callee (for the expression checker)."""
        return self.stmts.call(e, scope)

    def constructor_value(self, e: ast.ConstructorCall, scope: Scope) -> ir.Expr:
        """``T(args)`` used as a value: a reference to a new instance."""
        inst = self.anonymous_instance(e, scope)
        return ir.InstanceRef(inst.type, e.loc, inst.instance)

    def anonymous_instance(self, e: ast.ConstructorCall, scope: Scope) -> InstanceSym:
        """``T(args)`` used as a value (a constructor argument)."""
        base = e.type_ref.base if isinstance(e.type_ref, ast.SpecializedType) else e.type_ref
        name = base.path.name if isinstance(base, ast.TypeName) else "anon"
        fake = ast.Instantiation(e.loc, e.type_ref, e.args, name)
        return self.instantiate(fake, scope)

    def direct_instance(self, sym: DeclSym, loc: Loc) -> ir.BlockInstance:
        """``C.apply()``: a fresh instance named after the type."""
        assert self.stmts.ctx is not None
        anns = self.exprs.annotations(sym.decl.annotations, sym.scope)
        prefix = self.stmts.cp_name(sym.decl.name, anns, self.stmts.ctx.prefix)
        inst = self.instantiate_block(sym, [], self.exprs.root, prefix, loc=loc)
        if self.stmts.ctx.inst is not None:
            self.stmts.ctx.inst.blocks.append(inst)
        return inst

    def local_decl(self, d: ast.Declaration, scope: Scope) -> None:
        """A declaration in a parser's or control's local area."""
        assert self.stmts.ctx is not None and self.stmts.ctx.inst is not None
        inst = self.stmts.ctx.inst
        name = getattr(d, "name", None)
        if name is not None and name in scope.names and not isinstance(d, ast.ActionDeclaration):
            self.exprs.fail(d.loc, f"duplicate declaration of '{name}'")
        if isinstance(d, ast.ConstantDeclaration):
            self.stmts.const_decl(d, scope)
        elif isinstance(d, ast.VariableDeclaration):
            inst.locals.extend(self.stmts.var_decl(d, scope))
        elif isinstance(d, ast.ActionDeclaration):
            scope.names[d.name] = DeclSym(d.name, d, scope, "action")
        elif isinstance(d, ast.FunctionDeclaration):
            scope.names[d.name] = DeclSym(d.name, d, scope, "function")
        elif isinstance(d, ast.TableDeclaration):
            table = self.lower_table(d, scope)
            scope.names[d.name] = InstanceSym(d.name, table, TableT(table.name))
        elif isinstance(d, ast.Instantiation):
            scope.names[d.name] = self.instantiate(d, scope)
        elif isinstance(d, ast.ValueSetDeclaration):
            et = self.exprs.resolve_type(d.element_type, scope)
            anns = self.exprs.annotations(d.annotations, scope)
            vs = ir.ValueSet(
                self.stmts.cp_name(d.name, anns, self.stmts.ctx.prefix),
                et,
                self.exprs.const_int(d.size, scope),
                anns,
                d.loc,
                self.stmts.uid("vs"),
            )
            vs.widths = _widths(et)
            inst.value_sets.append(vs)
            self.program.value_sets.append(vs)
            scope.names[d.name] = InstanceSym(d.name, vs, et)
        else:
            self.exprs.unsupported(d.loc, f"local declaration {type(d).__name__}")

    def instantiate(self, d: ast.Instantiation, scope: Scope) -> InstanceSym:
        """``T(args) name;``: an extern object or a nested parser/control."""
        assert self.stmts.ctx is not None
        t = d.type
        base = t.base if isinstance(t, ast.SpecializedType) else t
        if not isinstance(base, ast.TypeName):
            self.exprs.fail(d.loc, "only externs, parsers and controls can be instantiated")
        sym = self.exprs.block_sym(self.exprs.lookup(base.path, scope, base.loc), base.path.name)
        anns = self.exprs.annotations(d.annotations, scope)
        cp = self.stmts.cp_name(d.name, anns, self.stmts.ctx.prefix)
        if isinstance(sym, DeclSym) and sym.kind in ("parser", "control"):
            inst = self.instantiate_block(
                sym, d.args, scope, cp, loc=d.loc, type_args=self._type_args(t, scope)
            )
            if self.stmts.ctx.inst is not None:
                self.stmts.ctx.inst.blocks.append(inst)
            return InstanceSym(d.name, inst, self.exprs.specialise_decl(sym, [], d.loc))
        if not isinstance(sym, DeclSym) or sym.kind != "extern":
            self.exprs.fail(base.loc, f"'{base.path.name}' cannot be instantiated")
        if d.initializer:
            self.exprs.unsupported(d.loc, "abstract methods of extern instances")
        targs = (
            [self.exprs.resolve_type(a, scope) for a in t.args]
            if isinstance(t, ast.SpecializedType)
            else []
        )
        et = ExternT(sym.decl.name, tuple(targs), sym.decl)
        args = self.extern_ctor_args(sym.decl, et, d.args, scope, d.loc)
        ext = ir.ExternInstance(
            cp, d.name, sym.decl.name, et.type_args, args, anns, d.loc, self.stmts.uid("x")
        )
        if self.stmts.ctx.inst is not None:
            self.stmts.ctx.inst.externs.append(ext)
        self.program.externs.append(ext)
        return InstanceSym(d.name, ext, et)

    def extern_ctor_args(
        self,
        decl: ast.ExternDeclaration,
        et: ExternT,
        args: list[ast.Argument],
        scope: Scope,
        loc: Loc,
    ) -> list[Any]:
        """Constructor arguments of an extern, as Python values."""
        ctors = [m for m in decl.methods if m.return_type is None]
        if not ctors:
            if args:
                self.exprs.fail(loc, f"extern {decl.name} has no constructor taking arguments")
            return []
        ctor = self.stmts.pick_overload(ctors, len(args), loc, f"{decl.name} constructor")
        inner = self.exprs.root.child()
        for i, tp in enumerate(decl.type_params):
            inner.names[tp.name] = TypeSym(
                tp.name, et.type_args[i] if i < len(et.type_args) else TypeVar(tp.name)
            )
        for tp in ctor.type_params:
            inner.names[tp.name] = TypeSym(tp.name, TypeVar(tp.name))
        params = [self.exprs.param_of(p, inner) for p in ctor.params]
        bound, _ = self.exprs.bind_args(
            params,
            args,
            scope,
            loc,
            f"{decl.name} constructor",
            defaults=[p.default for p in ctor.params],
        )
        return [self.py_value(a.expr, loc) for a in bound]

    def py_value(self, v: ir.Expr | None, loc: Loc) -> Any:
        """A constant expression as a Python value (enum members by name)."""
        if v is None:
            return None
        if isinstance(v, ir.InstanceRef):
            return v.instance
        if isinstance(v, ir.StructLit):
            return [self.py_value(x, loc) for _, x in v.fields]
        if not isinstance(v, ir.Const):
            self.exprs.fail(loc, "expected a compile-time constant")
        t = strip_newtype(v.type)
        if isinstance(t, EnumT) and t.underlying is None:
            return next(n for n, i in t.members.items() if i == v.value)
        if isinstance(t, ErrorT):
            return self.exprs.errors[v.value]
        return v.value

    # ------------------------------------------------------------------
    # Parsers

    def parser_states(
        self, decl: ast.ParserDeclaration, scope: Scope, inst: ir.BlockInstance
    ) -> None:
        """Lower the states of a parser."""
        names = [s.name for s in decl.states]
        if "start" not in names:
            self.exprs.fail(decl.loc, f"parser {decl.name} has no 'start' state")
        for s in decl.states:
            if s.name in ("accept", "reject"):
                self.exprs.fail(s.loc, f"state '{s.name}' cannot be redefined")
            scope.names[s.name] = StateSym(s.name)
        known = [*names, "accept", "reject"]
        for s in decl.states:
            inner = scope.child()
            body: list[ir.Stmt] = []
            for item in s.statements:
                body.extend(self.stmts.stmt(item, inner))
            state = ir.ParserStateIR(s.name, body, [], [], s.loc)
            self.transition(s.transition, inner, state, known)
            inst.states.append(state)

    def transition(
        self, tr: ast.Transition | None, scope: Scope, state: ir.ParserStateIR, known: list[str]
    ) -> None:
        """Lower the transition of ``state``."""
        if tr is None:
            state.cases.append(ir.SelectCaseIR(None, "reject"))
            return
        target = tr.target
        if isinstance(target, ast.NameExpression):
            self._check_state(target.path.name, known, target.loc)
            state.cases.append(ir.SelectCaseIR(None, target.path.name))
            return
        if not isinstance(target, ast.SelectExpression):
            self.exprs.fail(tr.loc, "a transition needs a state name or a select expression")
        keys = [self.exprs.expr(k, scope) for k in target.exprs]
        for k in keys:
            if isinstance(k.type, InfInt):
                self.exprs.fail(k.loc, "select key needs a width: cast the int literal")
        state.select = keys
        for c in target.cases:
            self._check_state(c.state.name, known, c.state.loc)
            ks = c.keyset
            if isinstance(ks, ast.DefaultExpression | ast.DontCareExpression) and len(keys) != 1:
                state.cases.append(ir.SelectCaseIR(None, c.state.name))
                continue
            if isinstance(ks, ast.DefaultExpression):
                state.cases.append(ir.SelectCaseIR(None, c.state.name))
                continue
            vs = self._value_set(ks, scope)
            if vs is not None and len(keys) != 1:
                # a value_set of a struct (or tuple) type matches the whole key list
                if len(vs.widths) != len(keys):
                    self.exprs.fail(
                        ks.loc,
                        f"value_set {vs.name} has {len(vs.widths)} fields, "
                        f"the select has {len(keys)} keys",
                    )
                state.cases.append(ir.SelectCaseIR((("value_set", vs),), c.state.name))
                continue
            elems = ks.elements if isinstance(ks, ast.ListExpression) and len(keys) != 1 else [ks]
            if isinstance(ks, ast.ListExpression) and len(keys) == 1 and len(ks.elements) == 1:
                elems = ks.elements
            if len(elems) != len(keys):
                self.exprs.fail(ks.loc, f"select has {len(keys)} keys, this case has {len(elems)}")
            sets = tuple(
                self.keyset(x, k.type, "select", scope) for x, k in zip(elems, keys, strict=True)
            )
            state.cases.append(ir.SelectCaseIR(sets, c.state.name))

    def _check_state(self, name: str, known: list[str], loc: Loc) -> None:
        if name not in known:
            self.exprs.fail(loc, f"no parser state named '{name}'{did_you_mean(name, known)}")

    def _value_set(self, e: ast.Expression, scope: Scope) -> ir.ValueSet | None:
        if not isinstance(e, ast.NameExpression):
            return None
        sym = self.exprs.root.lookup(e.path.name) if e.path.absolute else scope.lookup(e.path.name)
        if isinstance(sym, InstanceSym) and isinstance(sym.instance, ir.ValueSet):
            return sym.instance
        return None

    def keyset(self, e: ast.Expression, t: P4Type, kind: str, scope: Scope) -> tuple[Any, ...]:
        """One keyset for a key of type ``t``: ``("exact", v)``, ``("ternary", v, m)``..."""
        if isinstance(e, ast.DefaultExpression | ast.DontCareExpression):
            return ("dontcare",)
        vs = self._value_set(e, scope)
        if vs is not None:
            return ("value_set", vs)
        if isinstance(e, ast.Binary) and e.op == "&&&":
            v = self._key_const(e.left, t, scope)
            m = self._key_const(e.right, t, scope)
            if kind == "lpm":
                return ("lpm", v & m, _prefix_len(m, bit_width(t), e.loc, self.exprs))
            # the value matters only under the mask (BMv2 stores value & mask)
            return ("ternary", v & m, m)
        if isinstance(e, ast.Binary) and e.op == "..":
            return ("range", self._key_const(e.left, t, scope), self._key_const(e.right, t, scope))
        v = self._key_const(e, t, scope)
        width = bit_width(t)
        if kind in ("exact", "select", "selector"):
            return ("exact", v)
        if kind == "ternary":
            return ("ternary", v, (1 << width) - 1)
        if kind == "lpm":
            return ("lpm", v, width)
        if kind == "range":
            return ("range", v, v)
        if kind == "optional":
            return ("optional", v)
        return ("exact", v)

    def _key_const(self, e: ast.Expression, t: P4Type, scope: Scope) -> int:
        st = strip_newtype(t)
        if isinstance(st, EnumT) and st.underlying is not None:
            e_type = self.exprs.expr(e, scope, t).type
            if not isinstance(strip_newtype(e_type), EnumT):
                # p4c takes a value of the underlying type for a
                # serializable-enum key (table-entries-ser-enum-bmv2)
                t = st.underlying
        v = self.exprs.const_value(e, scope, t)
        assert isinstance(v, ir.Const)
        if isinstance(v.value, bool):
            return int(v.value)
        return int(v.value)

    # ------------------------------------------------------------------
    # Tables

    def lower_table(self, d: ast.TableDeclaration, scope: Scope) -> ir.Table:
        """A table declaration in a control."""
        assert self.stmts.ctx is not None and self.stmts.ctx.inst is not None
        anns = self.exprs.annotations(d.annotations, scope)
        name = self.stmts.cp_name(d.name, anns, self.stmts.ctx.prefix)
        table = ir.Table(
            name,
            d.name,
            [],
            [],
            None,  # type: ignore[arg-type]  # set by table_default below
            [],
            False,
            [],
            False,
            1024,
            None,
            None,
            None,
            False,
            {},
            anns,
            d.loc,
            self.stmts.uid("t"),
        )
        seen: set[str] = set()
        for prop in d.properties:
            if prop.name in seen:
                self.exprs.fail(prop.loc, f"duplicate table property '{prop.name}'")
            seen.add(prop.name)
        key = d.property("key")
        if isinstance(key, ast.KeyProperty):
            for k in key.elements:
                table.keys.append(self.table_key(k, scope))
        acts = d.property("actions")
        if not isinstance(acts, ast.ActionsProperty):
            self.exprs.fail(d.loc, f"table {d.name} has no actions property")
        for ref in acts.actions:
            table.actions.append(self.table_action(ref, scope))
        self.table_default(d, table, scope)
        for prop in d.properties:
            self.table_property(prop, table, scope)
        self.stmts.ctx.inst.tables.append(table)
        self.program.tables.append(table)
        return table

    def table_key(self, k: ast.KeyElement, scope: Scope) -> ir.TableKey:
        """One key element."""
        e = self.exprs.expr(k.expr, scope)
        kind = k.match_kind.name
        if kind not in self.exprs.match_kinds:
            self.exprs.fail(
                k.match_kind.loc,
                f"no match_kind named '{kind}'{did_you_mean(kind, self.exprs.match_kinds)}",
            )
        anns = self.exprs.annotations(k.annotations, scope)
        ann = ir.find_annotation(anns, "name")
        name = (
            ann.args[0]
            if ann is not None and ann.args and isinstance(ann.args[0], str)
            else expr_text(k.expr)
        )
        t = strip_newtype(e.type)
        if isinstance(t, InfInt):
            self.exprs.fail(k.expr.loc, "a table key needs a width: cast the int literal")
        width = bit_width(t)
        if isinstance(t, Bool):
            width = 1
        if width == 0 and not isinstance(t, ErrorT | EnumT):
            self.exprs.fail(k.expr.loc, f"a value of type {e.type} cannot be a table key")
        return ir.TableKey(e, name, kind, width, anns)

    def table_action(self, ref: ast.ActionRef, scope: Scope) -> ir.TableActionRef:
        """An element of the ``actions`` list."""
        sym = self.exprs.lookup(ref.name, scope, ref.loc)
        if not isinstance(sym, DeclSym) or sym.kind != "action":
            self.exprs.fail(ref.loc, f"'{ref.name.name}' is not an action")
        action = self.stmts.lower_action(sym)
        anns = self.exprs.annotations(ref.annotations, scope)
        scope_kind = ""
        if ir.find_annotation(anns, "tableonly"):
            scope_kind = "tableonly"
        elif ir.find_annotation(anns, "defaultonly"):
            scope_kind = "defaultonly"
        bound: list[ir.Expr] = []
        directional = [
            (p, v, dr)
            for p, v, dr in zip(sym.decl.params, action.params, action.directions, strict=True)
            if dr
        ]
        given = ref.args or []
        if len(given) > len(action.params):
            self.exprs.fail(ref.loc, f"action {sym.name} takes {len(action.params)} arguments")
        if given:
            params = [Param(p.name, dr, v.type) for p, v, dr in directional]
            args, _ = self.exprs.bind_args(
                params, given[: len(params)], scope, ref.loc, f"action {sym.name}"
            )
            bound = [a.expr for a in args if a.expr is not None]
        elif directional:
            self.exprs.fail(
                ref.loc, f"action {sym.name} needs arguments for its directional parameters"
            )
        return ir.TableActionRef(action, scope_kind, anns, bound)

    def table_default(self, d: ast.TableDeclaration, table: ir.Table, scope: Scope) -> None:
        """The ``default_action`` property (NoAction when absent)."""
        prop = d.property("default_action")
        if prop is None:
            sym = self.exprs.root.lookup("NoAction")
            if not isinstance(sym, DeclSym):
                self.exprs.fail(
                    d.loc, f"table {d.name} has no default_action and NoAction is undeclared"
                )
            table.default_action = self.stmts.lower_action(sym)
            if not any(r.action is table.default_action for r in table.actions):
                table.actions.append(ir.TableActionRef(table.default_action, "defaultonly", []))
            return
        assert isinstance(prop, ast.ExpressionProperty) and prop.value is not None
        action, args = self.action_with_args(prop.value, table, scope)
        table.default_action = action
        table.default_args = args
        table.default_const = prop.const

    def action_with_args(
        self, v: ast.Expression, table: ir.Table, scope: Scope
    ) -> tuple[ir.Action, list[int]]:
        """``a`` or ``a(args)`` naming an action of ``table`` with constant arguments."""
        if isinstance(v, ast.Call):
            method, args = v.method, v.args
        else:
            method, args = v, []
        if not isinstance(method, ast.NameExpression):
            self.exprs.fail(v.loc, "expected an action name")
        sym = self.exprs.lookup(method.path, scope, method.loc)
        if not isinstance(sym, DeclSym) or sym.kind != "action":
            self.exprs.fail(method.loc, f"'{method.path.name}' is not an action")
        action = self.stmts.lower_action(sym)
        ref = next((r for r in table.actions if r.action is action), None)
        if ref is None:
            names = [r.action.local_name for r in table.actions]
            self.exprs.fail(
                method.loc,
                f"action '{method.path.name}' is not in the actions of table "
                f"{table.local_name}{did_you_mean(method.path.name, names)}",
            )
        ndir = len(ref.bound_args)
        cp = [
            (p, v)
            for p, v, dr in zip(sym.decl.params, action.params, action.directions, strict=True)
            if not dr
        ]
        given = args[ndir:] if len(args) > len(cp) else args
        if len(given) != len(cp):
            self.exprs.fail(
                v.loc,
                f"action {sym.name} takes {len(cp)} control-plane arguments, got {len(given)}",
            )
        values: list[int] = []
        for (p, var), a in zip(cp, given, strict=True):
            c = self.exprs.const_value(a.value, scope, var.type)
            assert isinstance(c, ir.Const)
            values.append(int(c.value))
            del p
        return action, values

    def table_property(self, prop: ast.TableProperty, table: ir.Table, scope: Scope) -> None:
        """size, entries, implementation, counters, meters, support_timeout, custom."""
        if prop.name in ("key", "actions", "default_action"):
            return
        if isinstance(prop, ast.EntriesProperty):
            table.entries_const = prop.const
            for i, entry in enumerate(prop.entries):
                table.entries.append(self.table_entry(entry, table, scope, i))
            return
        assert isinstance(prop, ast.ExpressionProperty)
        value = prop.value
        if value is None:
            return
        if prop.name == "size":
            table.size = self.exprs.const_int(value, scope)
            table.has_size = True
        elif prop.name == "support_timeout":
            c = self.exprs.const_value(value, scope, BOOL)
            table.support_timeout = bool(c.value) if isinstance(c, ir.Const) else False
        elif prop.name in ("implementation", "counters", "meters"):
            inst = self._property_instance(value, scope, table, prop)
            if prop.name == "implementation":
                table.implementation = inst
            elif prop.name == "counters":
                table.direct_counter = inst
            else:
                table.direct_meter = inst
            inst.table = table.name
        elif prop.name == "largest_priority_wins":
            c = self.exprs.const_value(value, scope, BOOL)
            table.priority_largest_wins = bool(c.value) if isinstance(c, ir.Const) else True
        else:
            try:
                table.custom[prop.name] = self.py_value(self.exprs.expr(value, scope), value.loc)
            except Exception:  # noqa: BLE001 - custom properties are opaque to the target
                table.custom[prop.name] = expr_text(value)

    def _property_instance(
        self, value: ast.Expression, scope: Scope, table: ir.Table, prop: ast.TableProperty
    ) -> ir.ExternInstance:
        assert self.stmts.ctx is not None
        what = prop.name
        if isinstance(value, ast.ConstructorCall):
            fake = ast.Instantiation(value.loc, value.type_ref, value.args, table.local_name)
            sym = self.instantiate(fake, scope)
            inst = sym.instance
            if what == "implementation" and isinstance(inst, ir.ExternInstance):
                # p4c names an action profile built in place after the property
                # itself: its @name used as written, or else "implementation";
                # the property's annotations (@max_group_size...) are the profile's
                anns = self.exprs.annotations(prop.annotations, scope)
                inst.name = self.stmts.cp_name(what, anns, "")
                inst.annotations = anns
        else:
            v = self.exprs.expr(value, scope)
            if not isinstance(v, ir.InstanceRef):
                self.exprs.fail(value.loc, f"table property '{what}' needs an extern instance")
            inst = v.instance
        if not isinstance(inst, ir.ExternInstance):
            self.exprs.fail(value.loc, f"table property '{what}' needs an extern instance")
        return inst

    def table_entry(
        self, entry: ast.TableEntry, table: ir.Table, scope: Scope, index: int
    ) -> ir.ConstEntry:
        """One row of ``entries``."""
        ks = entry.keyset
        if isinstance(ks, ast.ListExpression) and (len(table.keys) != 1 or len(ks.elements) == 1):
            elems = ks.elements
        else:
            elems = [ks]
        if len(elems) != len(table.keys):
            self.exprs.fail(
                ks.loc,
                f"table {table.local_name} has {len(table.keys)} keys, the entry has {len(elems)}",
            )
        keys = [
            self.keyset(x, k.expr.type, k.match_kind, scope)
            for x, k in zip(elems, table.keys, strict=True)
        ]
        action, args = self.action_with_args(
            ast.Call(
                entry.action.loc,
                ast.NameExpression(entry.action.loc, entry.action.name),
                [],
                entry.action.args or [],
            ),
            table,
            scope,
        )
        prio = None
        if entry.priority is not None:
            prio = self.exprs.const_int(entry.priority, scope)
        anns = self.exprs.annotations(entry.annotations, scope)
        return ir.ConstEntry(
            keys, action, args, prio, entry.const or table.entries_const, anns, entry.loc
        )


def _block_type(inst: ir.BlockInstance) -> BlockT:
    """The parser or control type of an instance, for unification."""
    params = tuple(
        Param(n, d, v.type)
        for n, v, d in zip(inst.param_names, inst.params, inst.directions, strict=True)
    )
    return BlockT(inst.kind, inst.type_name, params)


def _substitute_params(checker: ExprChecker, t: P4Type, binding: dict[str, P4Type]) -> P4Type:
    """``t`` with the bound type variables of its parameters replaced."""
    if not isinstance(t, BlockT):
        return checker.substitute(t, binding)
    params = tuple(
        Param(p.name, p.direction, checker.substitute(p.type, binding), p.has_default)
        for p in t.params
    )
    return BlockT(t.kind, t.name, params, t.type_args, t.decl)


def _widths(t: P4Type) -> list[int]:
    st = strip_newtype(t)
    if isinstance(st, TupleT):
        return [bit_width(e) for e in st.elements]
    from softswitch.frontend.types import StructT

    if isinstance(st, StructT):
        return [bit_width(f) for f in st.fields.values()]
    return [bit_width(st)]


def _prefix_len(mask: int, width: int, loc: Loc, checker: ExprChecker) -> int:
    plen = bin(mask).count("1")
    expected = ((1 << plen) - 1) << (width - plen) if plen else 0
    if mask != expected:
        checker.fail(loc, f"lpm mask 0x{mask:x} is not a prefix")
    return plen


__all__ = ["Elaborator", "expr_text"]

_KEEP = (Bits, ValueSym)
