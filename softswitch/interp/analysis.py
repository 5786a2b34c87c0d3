"""Facts about the IR that code generation needs before it writes a body.

:class:`ExitAnalysis` answers "can calling this run an ``exit``?" for
actions, tables and parser/control instances.  The answer decides whether a
call site must catch the exit on its way up to copy scalar ``out``/``inout``
arguments back (the P4_16 spec performs copy-out even when ``exit`` runs).

:class:`ActionReach` answers "which variables can this action touch?", and
:func:`root_var` names the variable an argument lives in: together they tell
a call site when passing a header or struct by reference would let the
callee see its own writes through another name, so that it must copy in and
copy out as P4 prescribes.

:func:`has_runtime_stack_index` finds ``hs[i]`` with a run-time ``i``, whose
statements get p4c-bm2-ss's out-of-range behaviour (see ``Codegen.guarded``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from softswitch.frontend import ir
from softswitch.frontend.types import StackT, strip_newtype
from softswitch.interp.classes import is_obj


def calls_in(node: Any) -> Iterator[ir.Call]:
    """Every call in an IR statement, expression or list of them (not in the callees)."""
    if isinstance(node, list | tuple):
        for item in node:
            yield from calls_in(item)
        return
    if isinstance(node, ir.Call):
        yield node
        for arg in node.args:
            if arg.expr is not None:
                yield from calls_in(arg.expr)
        target = node.target
        if node.kind == "method" and isinstance(target, tuple) and isinstance(target[0], ir.Expr):
            yield from calls_in(target[0])
        return
    if isinstance(node, ir.Expr | ir.Stmt | ir.SwitchCase):
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, ir.Expr | ir.Stmt | ir.SwitchCase | list | tuple):
                yield from calls_in(value)


def expressions_in(node: Any) -> Iterator[ir.Expr]:
    """Every expression inside the expression ``node`` (itself included),
    through call arguments and method receivers."""
    if isinstance(node, list | tuple):
        for item in node:
            yield from expressions_in(item)
        return
    if not isinstance(node, ir.Expr):
        return
    yield node
    if isinstance(node, ir.Call):
        for arg in node.args:
            if arg.expr is not None:
                yield from expressions_in(arg.expr)
        if node.kind == "method" and isinstance(node.target, tuple):
            yield from expressions_in(node.target[0])
        return
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, ir.Expr):
            yield from expressions_in(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, tuple) and len(item) == 2:
                    yield from expressions_in(item[1])
                else:
                    yield from expressions_in(item)


def root_var(e: ir.Expr) -> str | None:
    """The variable an l-value lives in (``hdr`` for ``hdr.h.a[3:0]``), if any."""
    while isinstance(e, ir.FieldRef | ir.IndexRef | ir.StackRef | ir.SliceE):
        e = e.base
    return e.name if isinstance(e, ir.Var) else None


def aliased_args(
    args: Sequence[ir.Expr | None],
    params: Sequence[ir.Var],
    dirs: Sequence[str],
    reach: frozenset[str],
) -> set[int]:
    """The positions of header/struct/stack ``out``/``inout`` arguments that the
    callee could also reach under another name: their variable is in ``reach``
    or holds another argument of the same call."""
    roots: dict[str, int] = {}
    for e in args:
        if e is not None and (r := root_var(e)) is not None:
            roots[r] = roots.get(r, 0) + 1
    out: set[int] = set()
    for i, (e, var, d) in enumerate(zip(args, params, dirs, strict=False)):
        if e is None or d not in ("out", "inout") or not is_obj(var.type):
            continue
        r = root_var(e)
        if r is not None and (r in reach or roots[r] > 1):
            out.add(i)
    return out


def _names_in(node: Any, out: set[str], actions: list[ir.Action]) -> None:
    if isinstance(node, list | tuple):
        for item in node:
            _names_in(item, out, actions)
        return
    if isinstance(node, ir.Var):
        out.add(node.name)
        return
    if isinstance(node, ir.Call):
        if node.kind == "action":
            actions.append(node.target)
        for arg in node.args:
            if arg.expr is not None:
                _names_in(arg.expr, out, actions)
        if node.kind == "method" and isinstance(node.target, tuple):
            _names_in(node.target[0], out, actions)
        return
    if isinstance(node, ir.Expr | ir.Stmt | ir.SwitchCase):
        for f in dataclasses.fields(node):
            _names_in(getattr(node, f.name), out, actions)


class ActionReach:
    """Memoised "which variables may running this action read or write?":
    the names its body mentions and those of the actions it calls."""

    def __init__(self) -> None:
        self._memo: dict[int, frozenset[str]] = {}

    def names(self, action: ir.Action) -> frozenset[str]:
        """Every variable name ``action`` may touch, its own parameters included."""
        k = id(action)
        if k in self._memo:
            return self._memo[k]
        self._memo[k] = frozenset()  # recursion is impossible in P4; be safe anyway
        found: set[str] = set()
        callees: list[ir.Action] = []
        _names_in(action.body, found, callees)
        for callee in callees:
            found |= self.names(callee)
        result = frozenset(found)
        self._memo[k] = result
        return result


def has_runtime_stack_index(*exprs: ir.Expr | None) -> bool:
    """Whether a header stack is indexed with a run-time value in ``exprs``."""
    return any(
        isinstance(e, ir.IndexRef)
        and not isinstance(e.index, ir.Const)
        and isinstance(strip_newtype(e.base.type), StackT)
        for e in expressions_in([x for x in exprs if x is not None])
    )


def has_exit(node: Any) -> bool:
    """Whether an ``exit`` statement appears in ``node`` itself."""
    if isinstance(node, list | tuple):
        return any(has_exit(item) for item in node)
    if isinstance(node, ir.Exit):
        return True
    if isinstance(node, ir.Stmt | ir.SwitchCase):
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, ir.Stmt | ir.SwitchCase | list) and has_exit(value):
                return True
    return False


class ExitAnalysis:
    """Memoised "may this callee execute ``exit``?" over the call graph."""

    def __init__(self) -> None:
        self._memo: dict[int, bool] = {}

    def call(self, c: ir.Call) -> bool:
        """Whether the call ``c`` may execute ``exit``."""
        if c.kind == "action":
            return self.action(c.target)
        if c.kind == "table":
            return self.table(c.target)
        if c.kind == "block":
            return self.block(c.target)
        return False

    def _body(self, key: object, body: list[ir.Stmt]) -> bool:
        k = id(key)
        if k in self._memo:
            return self._memo[k]
        self._memo[k] = False  # recursion is impossible in P4; be safe anyway
        result = has_exit(body) or any(self.call(c) for c in calls_in(body))
        self._memo[k] = result
        return result

    def action(self, action: ir.Action) -> bool:
        """Whether running ``action`` may execute ``exit``."""
        return self._body(action, action.body)

    def table(self, table: ir.Table) -> bool:
        """Whether applying ``table`` may execute ``exit`` (in one of its actions)."""
        k = id(table)
        if k not in self._memo:
            self._memo[k] = any(self.action(r.action) for r in table.actions)
        return self._memo[k]

    def block(self, inst: ir.BlockInstance) -> bool:
        """Whether applying a control instance may execute ``exit``."""
        if inst.kind != "control":
            return False
        return self._body(inst, inst.body)


__all__ = [
    "ActionReach",
    "ExitAnalysis",
    "aliased_args",
    "calls_in",
    "expressions_in",
    "has_exit",
    "has_runtime_stack_index",
    "root_var",
]
