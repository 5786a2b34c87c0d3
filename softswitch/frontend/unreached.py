"""Type checking of the declarations that ``main`` never reaches.

p4c type-checks every declaration of a program, used or not, while the
elaborator lowers only what the package instantiates: a parser, control,
action or function that nothing uses would otherwise never be checked, and a
program p4c rejects would load here.

:func:`defer_unused_actions` records, while a block is lowered, its local
actions that nothing used.  :func:`check_unreached` runs after ``main`` is
elaborated and lowers, once more and only to check them, the top-level
parsers and controls that were never instantiated (generic ones with their
type parameters left as type variables), the actions and functions nobody
called, and those unused local actions.  Everything that lowering adds to
the program (tables, extern instances, actions, functions, digests) is taken
out again afterwards, so the elaborated program is unchanged.  Both are
functions over :class:`UnreachedHost`, the part of the elaborator they use.
A construct the target does not support is no reason to reject code that
never runs: :class:`UnsupportedError` is ignored there; type errors are not.

Declarations with constructor parameters are not checked when unused: their
bodies may need the parameters' compile-time values.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Protocol

from softswitch.errors import Loc, UnsupportedError
from softswitch.frontend import ast, ir
from softswitch.frontend.scope import DeclSym, OverloadSym, Scope
from softswitch.frontend.stmtcheck import BlockCtx, StmtChecker
from softswitch.frontend.types import P4Type, TypeVar


class UnreachedHost(Protocol):
    """What the check needs of the elaborator: what it instantiated, how it
    instantiates a block, the program it builds, and its statement checker
    (which lowers actions and functions and holds what they add)."""

    program: ir.Program
    stmts: StmtChecker
    # ids of the parser and control declarations instantiated so far
    instantiated: set[int]
    # the checks still to run (running one may add more)
    deferred: list[Callable[[], object]]

    def instantiate_block(
        self,
        sym: DeclSym,
        ctor_args: list[ast.Argument],
        arg_scope: Scope,
        prefix: str,
        *,
        loc: Loc,
        type_args: list[P4Type] | None = None,
    ) -> ir.BlockInstance: ...


def defer_unused_actions(
    elab: UnreachedHost, decls: list[ast.Declaration], scope: Scope, prefix: str
) -> None:
    """Remember the local actions of the block being lowered that nothing used."""
    assert elab.stmts.ctx is not None
    used = elab.stmts.ctx.actions
    in_parser = elab.stmts.ctx.in_parser
    for d in decls:
        if not isinstance(d, ast.ActionDeclaration) or id(d) in used:
            continue
        sym = scope.names.get(d.name)
        if isinstance(sym, DeclSym):
            ctx = BlockCtx(None, prefix, scope, in_parser=in_parser)
            elab.deferred.append(functools.partial(_check_action, elab, ctx, sym))


def _check_action(elab: UnreachedHost, ctx: BlockCtx, sym: DeclSym) -> None:
    saved = elab.stmts.ctx
    elab.stmts.ctx = ctx
    try:
        elab.stmts.lower_action(sym)
    finally:
        elab.stmts.ctx = saved


def check_unreached(elab: UnreachedHost, prog: ast.Program) -> None:
    """Type-check what ``main`` did not reach; the program stays as it was."""
    saved = _Snapshot(elab)
    elab.stmts.ctx = BlockCtx(None, "", elab.stmts.exprs.root)
    try:
        for d in prog.declarations:
            check = _check_for(elab, d)
            if check is not None:
                elab.deferred.append(check)
        done = 0
        while done < len(elab.deferred):
            with contextlib.suppress(UnsupportedError):
                elab.deferred[done]()
            done += 1
    finally:
        saved.restore(elab)


def _check_for(elab: UnreachedHost, d: ast.Declaration) -> Callable[[], object] | None:
    root = elab.stmts.exprs.root
    if isinstance(d, ast.ParserDeclaration | ast.ControlDeclaration):
        block = elab.stmts.exprs.block_sym(root.names.get(d.name), d.name)
        if id(d) in elab.instantiated or d.ctor_params or not isinstance(block, DeclSym):
            return None
        targs: list[P4Type] | None = [TypeVar(tp.name) for tp in d.type_params] or None
        return functools.partial(
            elab.instantiate_block, block, [], root, d.name, loc=d.loc, type_args=targs
        )
    if isinstance(d, ast.ActionDeclaration):
        action = root.names.get(d.name)
        if id(d) in elab.stmts.lowered_actions or not isinstance(action, DeclSym):
            return None
        return functools.partial(_check_action, elab, BlockCtx(None, "", root), action)
    if isinstance(d, ast.FunctionDeclaration):
        if any(key[0] == id(d) for key in elab.stmts.functions):
            return None
        fsym = _function_sym(root.names.get(d.name), d)
        if fsym is None:
            return None
        fargs = tuple(TypeVar(tp.name) for tp in d.type_params)
        return functools.partial(elab.stmts.lower_function, fsym, fargs)
    return None


def _function_sym(sym: object, d: ast.FunctionDeclaration) -> DeclSym | None:
    if isinstance(sym, DeclSym) and sym.decl is d:
        return sym
    if isinstance(sym, OverloadSym):
        return next((o for o in sym.options if o.decl is d), None)
    return None


class _Snapshot:
    """The parts of the elaborator's result that checking may add to."""

    def __init__(self, elab: UnreachedHost) -> None:
        p = elab.program
        self.tables = len(p.tables)
        self.externs = len(p.externs)
        self.value_sets = len(p.value_sets)
        self.actions = len(elab.stmts.all_actions)
        self.functions = set(elab.stmts.functions)
        self.digests = set(elab.stmts.digests)
        self.ctx = elab.stmts.ctx

    def restore(self, elab: UnreachedHost) -> None:
        p = elab.program
        del p.tables[self.tables :]
        del p.externs[self.externs :]
        del p.value_sets[self.value_sets :]
        del elab.stmts.all_actions[self.actions :]
        for key in set(elab.stmts.functions) - self.functions:
            del elab.stmts.functions[key]
        for name in set(elab.stmts.digests) - self.digests:
            del elab.stmts.digests[name]
        elab.stmts.ctx = self.ctx


__all__ = ["UnreachedHost", "check_unreached", "defer_unused_actions"]
