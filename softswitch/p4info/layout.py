"""Where p4c's front-end leaves a block's declarations when it writes P4Info.

p4c generates P4Info after its front-end, which has already

- instantiated directly applied controls and parsers (``C.apply()`` becomes an
  instance appended to the caller's locals);
- *inlined* every nested control and parser instance: the callee's locals,
  renamed ``caller.instance.x``, take the place of the instance declaration in
  the caller's locals, and its apply body replaces the ``apply()`` call;
- inlined action calls made inside actions, then removed the declarations that
  nothing refers to any more (so an action that only other actions call is gone);
- *localized* top-level actions: each control gets its own copy of every
  top-level action it uses, all copies ahead of the control's own locals, in the
  order a walk over the control first meets them (its locals in order, tables'
  ``actions`` then ``default_action``, then its apply body).

So only the six blocks of ``V1Switch`` remain as parsers and controls, each
with a flat list of locals. This module computes, from the elaborated
``ir.Program`` (which keeps nested instances as nested blocks), those flat
lists and the order of the actions of a control.

Declaration order inside a block is taken from the IR's program-unique ``uid``
counter, which the elaborator advances as it meets declarations (a nested
instance is elaborated where it is declared; a directly applied one where it is
called, after every local, as p4c appends it); see docs/ir-requests.md item 6.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from softswitch.errors import Loc
from softswitch.frontend import ir

Local = ir.Table | ir.ExternInstance | ir.ValueSet


def calls(stmts: Sequence[ir.Stmt], *, into_actions: bool = True) -> Iterator[ir.Call]:
    """Every call in ``stmts``, statements and expressions alike, looking into the
    functions (and, if ``into_actions``, actions) they call: p4c's front-end
    inlines both before it generates P4Info."""
    yield from _Calls(into_actions).stmts(stmts)


def flat_locals(block: ir.BlockInstance) -> list[Local]:
    """The tables, extern instances and value sets of ``block`` after inlining."""
    out: list[Local] = []
    for item in _ordered([*block.tables, *block.externs, *block.value_sets, *block.blocks]):
        if isinstance(item, ir.BlockInstance):
            out.extend(flat_locals(item))
        else:
            out.append(item)
    return out


def body_calls(block: ir.BlockInstance) -> Iterator[ir.Call]:
    """The calls of ``block``'s apply body with the bodies of the controls it
    applies inlined in place (actions called from the body are not entered)."""
    for call in calls(block.body, into_actions=False):
        yield call
        if call.kind == "block" and isinstance(call.target, ir.BlockInstance):
            yield from body_calls(call.target)


def control_actions(block: ir.BlockInstance) -> list[ir.Action]:
    """The actions of a top-level control as p4c's front-end leaves them.

    Copies of top-level actions come first, in the order of first use; then the
    actions declared in the control and in the controls it instantiates, in
    declaration order with each instance's actions where the instance is.
    Unused actions, and actions only called by other actions, are not there.
    """
    copies: dict[str, ir.Action] = {}
    for action in _first_uses(block):
        if not _declared_in_a_control(action, block):
            copies.setdefault(action.name, action)
    return [*copies.values(), *_own_actions(block)]


# ---------------------------------------------------------------------------


def _order(item: Local | ir.Action | ir.BlockInstance) -> tuple[int, str, int, int]:
    """Elaboration order (the uid counter), then source position."""
    digits = re.sub(r"^\D*", "", item.uid)
    return (int(digits) if digits else 0, item.loc.file, item.loc.line, item.loc.col)


def _ordered(items: Sequence[Local | ir.BlockInstance]) -> list[Local | ir.BlockInstance]:
    return sorted(items, key=_order)


def _tables(block: ir.BlockInstance) -> list[ir.Table]:
    return [t for t in flat_locals(block) if isinstance(t, ir.Table)]


def _first_uses(block: ir.BlockInstance) -> Iterator[ir.Action]:
    """Actions in the order a walk over the inlined control meets them."""
    for table in _tables(block):
        for ref in table.actions:
            yield ref.action
        yield table.default_action
        for entry in table.entries:
            yield entry.action
    for call in body_calls(block):
        if call.kind == "action":
            yield call.target


def _used_here(block: ir.BlockInstance) -> dict[int, ir.Action]:
    """The actions that ``block`` itself (not its instances) refers to."""
    used: dict[int, ir.Action] = {}
    for table in block.tables:
        for ref in table.actions:
            used.setdefault(id(ref.action), ref.action)
        used.setdefault(id(table.default_action), table.default_action)
    for call in calls(block.body, into_actions=False):
        if call.kind == "action":
            used.setdefault(id(call.target), call.target)
    return used


def _own_actions(block: ir.BlockInstance) -> list[ir.Action]:
    """The used actions declared in ``block``, in declaration order, with each
    nested instance's own actions spliced in where the instance is declared."""
    keyed: list[tuple[tuple[str, int, int, int, int], ir.Action | ir.BlockInstance]] = []
    for action in _used_here(block).values():
        if _before(block.loc, action.loc):
            keyed.append(((action.loc.file, action.loc.line, action.loc.col, 0, 0), action))
    for nested in block.blocks:
        if nested.kind == "control":
            keyed.append((_instance_position(block, nested), nested))
    out: list[ir.Action] = []
    for _, item in sorted(keyed, key=lambda k: k[0]):
        if isinstance(item, ir.BlockInstance):
            out.extend(_own_actions(item))
        else:
            out.append(item)
    return out


def _instance_position(
    parent: ir.BlockInstance, nested: ir.BlockInstance
) -> tuple[str, int, int, int, int]:
    """Where ``nested`` is declared among ``parent``'s actions (a sort key).

    The IR does not keep the loc of an instantiation (docs/ir-requests.md item
    6), but tables, extern instances and nested instances are elaborated in
    declaration order, so their uids order them: the instance is placed right
    after the last table or extern instance declared before it. A directly
    applied control (named after its type) is appended after every local, as
    p4c's InstantiateDirectCalls does.
    """
    direct = nested.name.rsplit(".", 1)[-1] == nested.type_name
    if direct:
        return ("\U0010ffff", 0, 0, 1, _order(nested)[0])
    locals_: list[Local] = [*parent.tables, *parent.externs, *parent.value_sets]
    earlier = [local for local in locals_ if _order(local) < _order(nested)]
    if not earlier:
        return (parent.loc.file, parent.loc.line, parent.loc.col, 1, _order(nested)[0])
    last = max(earlier, key=_order)
    return (last.loc.file, last.loc.line, last.loc.col, 1, _order(nested)[0])


def _declared_in_a_control(action: ir.Action, block: ir.BlockInstance) -> bool:
    return any(_before(b.loc, action.loc) and id(action) in _used_here(b) for b in _blocks(block))


def _blocks(block: ir.BlockInstance) -> Iterator[ir.BlockInstance]:
    yield block
    for child in block.blocks:
        yield from _blocks(child)


def _before(a: Loc, b: Loc) -> bool:
    return a.file == b.file and (a.line, a.col) < (b.line, b.col)


# The operands of each kind of expression that holds other expressions by name.
_OPERANDS: dict[type[ir.Expr], tuple[str, ...]] = {
    ir.TableResult: ("call",),
    ir.FieldRef: ("base",),
    ir.StackRef: ("base",),
    ir.IndexRef: ("base", "index"),
    ir.SliceE: ("base", "dyn_lo"),
    ir.UnOp: ("operand",),
    ir.BinOp: ("left", "right"),
    ir.CastE: ("expr",),
    ir.Mux: ("cond", "then", "else_"),
}


class _Calls:
    """A walk over statements and expressions that yields the calls it meets."""

    def __init__(self, into_actions: bool) -> None:
        self.inline = ("function", "action") if into_actions else ("function",)
        self.entered: set[int] = set()

    def stmts(self, stmts: Sequence[ir.Stmt]) -> Iterator[ir.Call]:
        for stmt in stmts:
            yield from self.stmt(stmt)

    def stmt(self, stmt: ir.Stmt) -> Iterator[ir.Call]:
        if isinstance(stmt, ir.CallStmt):
            yield from self.expr(stmt.call)
        elif isinstance(stmt, ir.Assign):
            yield from self.exprs(stmt.lhs, stmt.rhs)
        elif isinstance(stmt, ir.VarDecl):
            yield from self.exprs(stmt.init)
        elif isinstance(stmt, ir.Return):
            yield from self.exprs(stmt.value)
        elif isinstance(stmt, ir.If):
            yield from self.expr(stmt.cond)
            yield from self.stmts(stmt.then)
            yield from self.stmts(stmt.else_)
        elif isinstance(stmt, ir.Switch):
            yield from self.expr(stmt.expr)
            for case in stmt.cases:
                yield from self.stmts(case.body)
        elif isinstance(stmt, ir.Loop):
            yield from self.stmts(stmt.init)
            yield from self.exprs(stmt.cond)
            yield from self.stmts(stmt.body)
            yield from self.stmts(stmt.updates)
        elif isinstance(stmt, ir.ForIn):
            yield from self.expr(stmt.collection)
            yield from self.stmts(stmt.body)

    def exprs(self, *exprs: ir.Expr | None) -> Iterator[ir.Call]:
        for e in exprs:
            if e is not None:
                yield from self.expr(e)

    def expr(self, e: ir.Expr) -> Iterator[ir.Call]:
        if isinstance(e, ir.Call):
            yield e
            for arg in e.args:
                yield from self.exprs(arg.expr)
            if e.kind in self.inline and id(e.target) not in self.entered:
                self.entered.add(id(e.target))
                yield from self.stmts(e.target.body)
        elif type(e) in _OPERANDS:
            yield from self.exprs(*(getattr(e, name) for name in _OPERANDS[type(e)]))
        elif isinstance(e, ir.StructLit):
            for _, value in e.fields:
                yield from self.expr(value)
