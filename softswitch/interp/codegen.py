"""Compile an :class:`ir.Program` into Python source, once per load.

The output is one Python module (compiled with :func:`compile` and run with
:func:`exec`) that holds:

* the value classes of :mod:`classes`;
* ``F<uid>`` for every function and ``B<uid>(pk, params...)`` for every parser
  and control instance; a control's actions (``a<uid>``) and tables
  (``t<uid>``) are closures inside its ``B`` function, so they read and
  write the control's parameters and locals directly (``nonlocal`` for the
  scalars they rebind);
* references to the runtime objects (tables ``T<uid>``, externs ``X<uid>``...)
  that :mod:`pipeline` supplies in the module namespace.

Calling convention: composite arguments (headers, structs, stacks) are passed
by reference, a copy for ``in`` parameters the callee writes; scalar
``out``/``inout`` parameters are returned (a tuple when there are several, the
return value first for functions) and the caller assigns them back.
``pk`` is the per-packet context (:class:`pipeline.PacketCtx`).

Evaluation order follows P4 (and p4c's side-effect ordering): operands left
to right, the target of an assignment located before its value, only the
chosen operand of ``&&``/``||``/``?:`` evaluated, and the scalar outs of a
callee copied back even when it ``exit``s (:class:`ExitSignal` carries them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from softswitch.errors import Loc, P4SourceError, UnsupportedError
from softswitch.frontend import ir, types
from softswitch.interp.analysis import (
    ActionReach,
    ExitAnalysis,
    aliased_args,
    has_runtime_stack_index,
)
from softswitch.interp.calls import CallGen
from softswitch.interp.classes import ClassGen, is_obj
from softswitch.interp.extern_funcs import CallSite


@dataclass
class FuncState:
    """What the code generator tracks for the function being written."""

    outs: list[ir.Var]
    ret_value: bool = False
    declared: set[str] = field(default_factory=set)
    stored: set[str] = field(default_factory=set)
    loop_updates: list[list[ir.Stmt]] = field(default_factory=list)


TRACE, DEBUG = 5, 10  # the logging levels of BMv2's trace and debug messages


class Codegen:
    """Builds the module source for one program.

    A traced build (``trace=True``, for a switch whose log shows packets) adds
    BMv2's per-packet messages: parser states and select keys, extracted
    headers, each table applied with its key, hit or miss and action entry, and
    each action run.  An untraced build has none of these lines.
    """

    def __init__(
        self, program: ir.Program, extern_functions: Iterable[str] = (), *, trace: bool = False
    ) -> None:
        self.program = program
        self.trace = trace
        # the user extern functions with an implementation, and every call of one
        self.extern_functions = frozenset(extern_functions)
        self.extern_sites: list[CallSite] = []
        self.classes = ClassGen()
        self.lines: list[str] = []
        self.indent = 0
        self.fs = FuncState([])
        self.tmp = 0
        self.field_lists: list[list[tuple[str, list[str]]]] = []
        self.block_params: dict[str, ir.BlockInstance] = {}
        self.roots: dict[str, str] = {}
        self.exits = ExitAnalysis()
        self.reach = ActionReach()
        self.in_parser = False

    def root_of(self, var: str) -> str | None:
        """ "meta" or "std" for the v1model metadata parameters, else None."""
        return self.roots.get(var)

    # ------------------------------------------------------------------
    # Output helpers

    def line(self, text: str) -> None:
        """Emit one line at the current indentation."""
        self.lines.append("    " * self.indent + text)

    def trace_line(self, level: int, message: str) -> None:
        """In a traced build, a line that logs ``message`` (a constant) for the packet."""
        if self.trace:
            self.line(f"pk.tr({level}, {message!r})")

    def fresh(self, base: str = "t") -> str:
        """A new temporary name."""
        self.tmp += 1
        return f"_{base}{self.tmp}"

    def source(self) -> str:
        """The whole module."""
        return "\n".join([*self.classes.lines, "", *self.lines]) + "\n"

    def capture(self, e: ir.Expr) -> tuple[str, list[str]]:
        """The value of ``e`` and the statements its evaluation needs, taken
        out of the output so that the caller decides where they run."""
        start = len(self.lines)
        value = self.expr(e)
        pre = self.lines[start:]
        del self.lines[start:]
        return value, pre

    def emit_nested(self, pre: list[str]) -> None:
        """Re-emit captured statements one level deeper."""
        self.lines.extend("    " + text for text in pre)

    def ordered(self, exprs: Sequence[ir.Expr], by_ref: Sequence[bool] = ()) -> list[str]:
        """Evaluate ``exprs`` left to right, as P4 does.

        A call with out arguments runs as statements before the expression
        that uses its value; when a later operand needs such statements, the
        earlier operands are saved in temporaries first so that they keep the
        values they had before the call."""
        parts = [self.capture(e) for e in exprs]
        values: list[str] = []
        for i, ((value, pre), e) in enumerate(zip(parts, exprs, strict=True)):
            self.lines.extend(pre)
            later = any(p for _, p in parts[i + 1 :])
            ref = i < len(by_ref) and by_ref[i]
            if later and not ref and not isinstance(e, ir.Const):
                tmp = self.fresh("o")
                copy = is_obj(e.type) or isinstance(types.strip_newtype(e.type), types.TupleT)
                self.line(f"{tmp} = {f'copy_value({value})' if copy else value}")
                values.append(tmp)
            else:
                values.append(value)
        return values

    # ------------------------------------------------------------------
    # Top level

    def generate(self) -> str:
        """Generate everything reachable from the pipeline."""
        for func in self.program.functions:
            self.function(func)
        done: set[str] = set()
        for inst in self.program.pipeline.values():
            self.block(inst, done)
        return self.source()

    def function(self, func: ir.Function) -> None:
        """``F<uid>``: a top-level function."""
        self.fs = FuncState(
            self._scalar_outs(func.params, func.directions),
            ret_value=types.bit_width(func.ret) >= 0 and str(func.ret) != "void",
        )
        params = ", ".join(v.name for v in func.params)
        self.line(f"def F{func.uid}({params}):")
        self.indent += 1
        self._param_prologue(func.params, func.directions)
        self.stmts(func.body)
        self.line(self._return_stmt(None if not self.fs.ret_value else "None"))
        self.indent -= 1
        self.line("")

    def _scalar_outs(self, params: list[ir.Var], dirs: list[str]) -> list[ir.Var]:
        return [
            v
            for v, d in zip(params, dirs, strict=True)
            if d in ("out", "inout") and not is_obj(v.type)
        ]

    def _param_prologue(self, params: list[ir.Var], dirs: list[str]) -> None:
        for v, d in zip(params, dirs, strict=True):
            self.fs.declared.add(v.name)
            if d == "out" and is_obj(v.type):
                self.line(f"{v.name}.invalidate()")

    def _return_stmt(self, value: str | None) -> str:
        return f"return {self._outs_value(value)}"

    def _outs_value(self, value: str | None) -> str:
        outs = [v.name for v in self.fs.outs]
        if self.fs.ret_value:
            outs.insert(0, value or "None")
        if not outs:
            return "None"
        if len(outs) == 1:
            return outs[0]
        return f"({', '.join(outs)})"

    def body_copying_out_on_exit(self, body: list[ir.Stmt], may_exit: bool) -> None:
        """Emit ``body``; when it may ``exit`` and has scalar out parameters,
        the exit carries their values up so that the caller still copies them out."""
        if not may_exit or not self.fs.outs:
            self.stmts(body)
            return
        self.line("try:")
        self.indent += 1
        self.stmts(body)
        self.indent -= 1
        self.line("except ExitSignal as _x:")
        self.line(f"    _x.outs = {self._outs_value(None)}")
        self.line("    raise")

    def block(self, inst: ir.BlockInstance, done: set[str]) -> None:
        """``B<uid>``: a parser or control instance (nested ones first)."""
        if inst.uid in done:
            return
        done.add(inst.uid)
        for sub in inst.blocks:
            self.block(sub, done)
        self.fs = FuncState(self._scalar_outs(inst.params, inst.directions))
        params = ", ".join(["pk", *[v.name for v in inst.params]])
        self.line(f"def B{inst.uid}({params}):")
        self.indent += 1
        self._param_prologue(inst.params, inst.directions)
        block_fs = self.fs
        self.stmts(inst.locals)
        for action in self._block_actions(inst):
            self.action(action, block_fs)
        for table in inst.tables:
            with _located(table.loc, "table"):
                self.table(table, block_fs)
        self.fs = block_fs
        if inst.kind == "control":
            self.body_copying_out_on_exit(inst.body, self.exits.block(inst))
        else:
            self.in_parser = True
            self.parser_body(inst)
            self.in_parser = False
        self.line(self._return_stmt(None))
        self.indent -= 1
        self.line("")

    def _block_actions(self, inst: ir.BlockInstance) -> list[ir.Action]:
        return list(inst.actions)

    def action(self, action: ir.Action, block_fs: FuncState) -> None:
        """``a<uid>``: an action as a closure of its control."""
        self.fs = FuncState(self._scalar_outs(action.params, action.directions))
        params = ", ".join(v.name for v in action.params)
        self.line(f"def a{action.uid}({params}):")
        start = len(self.lines)
        self.indent += 1
        self.trace_line(TRACE, f"Action {action.name}")
        self._param_prologue(action.params, action.directions)
        self.body_copying_out_on_exit(action.body, self.exits.action(action))
        self.line(self._return_stmt(None))
        nonlocals = sorted(self.fs.stored - self.fs.declared)
        if nonlocals:
            self.lines.insert(start, "    " * self.indent + f"nonlocal {', '.join(nonlocals)}")
        self.indent -= 1
        self.fs = block_fs

    # ------------------------------------------------------------------
    # Tables

    def table(self, table: ir.Table, block_fs: FuncState) -> None:
        """``t<uid>()``: look up, run the action, return ``(hit, action uid)``."""
        self.fs = FuncState([])
        self.line(f"def t{table.uid}():")
        start = len(self.lines)
        self.indent += 1
        keys = [k for k in table.keys if k.match_kind != "selector"]
        sel = [k for k in table.keys if k.match_kind == "selector"]
        key = self._key_tuple(keys)
        if self.trace:
            self.line(f"kv = {key}")
            key = "kv"
        if sel:
            self.line(f"r = T{table.uid}.lookup({key}, {self._key_tuple(sel)})")
        else:
            self.line(f"r = T{table.uid}.lookup({key})")
        if self.trace:
            names = tuple((k.name, k.width) for k in keys)
            self.line(f"pk.trace_table({table.name!r}, {names!r}, kv, r)")
        self.line("pk.entry = r.entry")
        if table.direct_counter is not None:
            self.line("if r.entry is not None:")
            self.line(f"    X{table.direct_counter.uid}.count(r.entry, pk.length)")
        self.line("ac = r.action_call")
        self.line("n = ac.name")
        first = True
        for ref in table.actions:
            kw = "if" if first else "elif"
            first = False
            self.line(f"{kw} n == {ref.action.name!r}:")
            self.indent += 1
            bound = [self.expr(e) for e in ref.bound_args]
            copies = self._copy_aliased(ref, bound)
            ncp = len(ref.action.cp_params)
            cp = [f"ac.args[{i}]" for i in range(ncp)]
            outs = self._scalar_outs(ref.action.params, ref.action.directions)
            call = f"a{ref.action.uid}({', '.join(bound + cp)})"
            if copies:
                self.line("try:")
                self.indent += 1
            if outs:
                dirs = [
                    (v, d)
                    for v, d in zip(ref.action.params, ref.action.directions, strict=True)
                    if d
                ]
                targets = [
                    e
                    for (v, d), e in zip(dirs, ref.bound_args, strict=False)
                    if d in ("out", "inout") and not is_obj(v.type)
                ]
                self.assign_outs(call, targets, may_exit=self.exits.action(ref.action))
            else:
                self.line(call)
            if copies:
                self.indent -= 1
                self.line("finally:")
                for place, copy in copies:
                    self.line(f"    {place}.assign({copy})")
            self.line(f"return (r.hit, {ref.action.uid!r})")
            self.indent -= 1
        self.line("return (r.hit, None)")
        nonlocals = sorted(self.fs.stored - self.fs.declared)
        if nonlocals:
            self.lines.insert(start, "    " * self.indent + f"nonlocal {', '.join(nonlocals)}")
        self.indent -= 1
        self.fs = block_fs

    def _copy_aliased(self, ref: ir.TableActionRef, bound: list[str]) -> list[tuple[str, str]]:
        """Pass copies of the bound header/struct arguments that the action also
        reaches directly (``bound`` is updated); returns (place, copy) pairs to
        copy back after the call, exit included."""
        action = ref.action
        directional = [(v, d) for v, d in zip(action.params, action.directions, strict=True) if d]
        reach = self.reach.names(action) - {v.name for v in action.params}
        aliased = aliased_args(
            list(ref.bound_args), [v for v, _ in directional], [d for _, d in directional], reach
        )
        copies: list[tuple[str, str]] = []
        for i in sorted(aliased):
            place, copy = self.fresh("p"), self.fresh("cp")
            self.line(f"{place} = {bound[i]}")
            self.line(f"{copy} = {place}.copy()")
            bound[i] = copy
            copies.append((place, copy))
        return copies

    def _key_tuple(self, keys: list[ir.TableKey]) -> str:
        parts = []
        for k in keys:
            if has_runtime_stack_index(k.expr):
                # p4c moves such a key into a temporary assigned before the
                # lookup: out of range, it keeps its undefined value (0)
                v = self.fresh("key")
                self.guarded_value(v, k.expr, self.classes.new(k.expr.type))
            else:
                v = self.expr(k.expr)
            if isinstance(types.value_type(k.expr.type), types.Bool):
                v = f"int({v})"
            parts.append(v)
        if len(parts) == 1:
            return f"({parts[0]},)"
        return "(" + ", ".join(parts) + ")"

    # ------------------------------------------------------------------
    # Parsers

    def parser_body(self, inst: ir.BlockInstance) -> None:
        """The state machine of a parser."""
        index = {s.name: i for i, s in enumerate(inst.states)}
        start = index["start"]
        self.line(f"st = {start}")
        self.line("while st >= 0:")
        self.indent += 1
        for i, state in enumerate(inst.states):
            self.line(f"{'if' if i == 0 else 'elif'} st == {i}:")
            self.indent += 1
            self.trace_line(DEBUG, f"Parser 'parser' entering state '{state.name}'")
            self.stmts(state.body)
            with _located(state.loc, "transition"):
                self.transition(state, index)
            self.indent -= 1
        self.indent -= 1

    def _goto(self, target: str, index: dict[str, int]) -> str:
        if target == "accept":
            return "st = -1"
        if target == "reject":
            # p4c-bm2-ss compiles an explicit reject like accept ("explicit
            # transition to reject not supported on this target"): parsing
            # ends, parser_error keeps its value (NoError), ingress runs.
            return "raise ParserReject(0)"
        return f"st = {index[target]}"

    def transition(self, state: ir.ParserStateIR, index: dict[str, int]) -> None:
        """The select (or plain transition) at the end of a state."""
        if not state.select:
            self.line(self._goto(state.cases[0].state, index))
            return
        keys = []
        for k in state.select:
            name = self.fresh("k")
            v = self.expr(k)
            if isinstance(types.value_type(k.type), types.Bool):
                v = f"int({v})"
            self.line(f"{name} = {v}")
            keys.append((name, k))
        if self.trace:
            fields = ", ".join(f"({n}, {types.bit_width(k.type)})" for n, k in keys)
            prefix = f"Parser state '{state.name}': key is "
            self.line(f"pk.tr({DEBUG}, {prefix!r} + _hexkey(({fields},)))")
        first = True
        for case in state.cases:
            cond = "True" if case.keysets is None else self._keyset_cond(case.keysets, keys)
            self.line(f"{'if' if first else 'elif'} {cond}:")
            self.line(f"    {self._goto(case.state, index)}")
            first = False
            if case.keysets is None:
                break
        else:
            # No case matched.  p4c-bm2-ss adds no NoMatch state for v1model
            # (its midend has no HandleNoMatch pass) and BMv2 takes a state's
            # missing default transition as "end of parsing": the packet goes
            # on to ingress with parser_error still NoError.
            self.line("else:")
            self.line("    raise ParserReject(0)")

    def _keyset_cond(
        self, keysets: tuple[tuple[Any, ...], ...], keys: list[tuple[str, ir.Expr]]
    ) -> str:
        conds = []
        if len(keysets) == 1 and keysets[0][0] == "value_set":
            vs = keysets[0][1]
            return f"VS{vs.uid}.match(({', '.join(n for n, _ in keys)},))"
        for ks, (name, k) in zip(keysets, keys, strict=True):
            kind = ks[0]
            if kind == "dontcare":
                continue
            if kind == "exact":
                conds.append(f"{name} == {int(ks[1])}")
            elif kind == "ternary":
                conds.append(f"({name} & {ks[2]}) == {ks[1] & ks[2]}")
            elif kind == "range":
                t = types.value_type(k.type)
                if isinstance(t, types.Bits) and t.signed:
                    conds.append(
                        f"{_sx_const(ks[1], t)} <= sx({name}, {t.width}) <= {_sx_const(ks[2], t)}"
                    )
                else:
                    conds.append(f"{ks[1]} <= {name} <= {ks[2]}")
            elif kind == "value_set":
                conds.append(f"VS{ks[1].uid}.match(({name},))")
            else:
                conds.append(f"{name} == {ks[1]}")
        return " and ".join(conds) if conds else "True"

    # ------------------------------------------------------------------
    # Statements

    def stmts(self, body: list[ir.Stmt]) -> None:
        """Emit a statement list (``pass`` when empty)."""
        before = len(self.lines)
        for s in body:
            self.stmt(s)
        if len(self.lines) == before:
            self.line("pass")

    def guarded(self, s: ir.Stmt) -> bool:
        """Emit ``s`` with p4c-bm2-ss's handling of run-time stack indices, if it has one.

        p4c's HSIndexSimplifier turns a control statement using ``hs[i]`` into
        one copy per in-range ``i`` chosen by an if-chain, so an index out of
        range runs no copy: a write, method call or switch does nothing, an if
        condition is false, and an assignment whose index is only on the
        right gets an undefined (zero, invalid) value.  Here the statement
        runs and :class:`StackError` from ``Stack.at`` selects that outcome.
        Parsers keep BMv2's own behaviour (the packet is dropped)."""
        if self.in_parser:
            return False
        if isinstance(s, ir.Assign) and has_runtime_stack_index(s.lhs, s.rhs):
            self.line("try:")
            self.indent += 1
            self.assign(s.lhs, s.rhs)
            self.indent -= 1
            self.line("except StackError:")
            self.indent += 1
            if has_runtime_stack_index(s.lhs):
                self.line("pass")
            else:
                self.assign(s.lhs, ir.InvalidHdr(s.lhs.type, s.loc))
            self.indent -= 1
            return True
        if isinstance(s, ir.CallStmt) and has_runtime_stack_index(s.call):
            self.line("try:")
            self.indent += 1
            self.call(s.call, want_value=False)
            self.line("pass")
            self.indent -= 1
            self.line("except StackError:")
            self.line("    pass")
            return True
        if isinstance(s, ir.VarDecl) and has_runtime_stack_index(s.init):
            self.stmt(ir.VarDecl(s.loc, s.var, None))
            self.guarded(ir.Assign(s.loc, s.var, s.init))  # type: ignore[arg-type]
            return True
        if isinstance(s, ir.If) and has_runtime_stack_index(s.cond):
            cond = self.fresh("g")
            self.guarded_value(cond, s.cond, "False")
            self.stmt(ir.If(s.loc, ir.Var(s.cond.type, s.loc, cond), s.then, s.else_))
            return True
        if isinstance(s, ir.Switch) and has_runtime_stack_index(s.expr):
            subject = self.fresh("s")
            self.guarded_value(subject, s.expr, "_NO_SUBJECT")
            self.line(f"if {subject} is not _NO_SUBJECT:")
            self.indent += 1
            self.switch(s, subject)
            self.indent -= 1
            return True
        if isinstance(s, ir.Return) and has_runtime_stack_index(s.value):
            assert s.value is not None
            value = self.fresh("v")
            self.guarded_value(value, s.value, self.classes.new(s.value.type))
            self.stmt(ir.Return(s.loc, ir.Var(s.value.type, s.loc, value)))
            return True
        return False

    def guarded_value(self, name: str, e: ir.Expr, fallback: str) -> None:
        """``name = e``, or ``fallback`` when a stack index in ``e`` is out of range."""
        self.line("try:")
        self.indent += 1
        self.line(f"{name} = {self._copy_if_list(e)}")
        self.indent -= 1
        self.line("except StackError:")
        self.line(f"    {name} = {fallback}")

    def stmt(self, s: ir.Stmt) -> None:
        """Emit one statement.

        A construct that slips past the checks of this generator ends in a
        located error rather than a Python traceback."""
        with _located(s.loc, "statement"):
            self._stmt(s)

    def _stmt(self, s: ir.Stmt) -> None:  # noqa: C901 - one case per kind of IR node
        if self.guarded(s):
            return
        if isinstance(s, ir.Assign):
            self.assign(s.lhs, s.rhs)
        elif isinstance(s, ir.CallStmt):
            self.call(s.call, want_value=False)
        elif isinstance(s, ir.VarDecl):
            self.fs.declared.add(s.var.name)
            if s.init is None:
                self.line(f"{s.var.name} = {self.classes.new(s.var.type)}")
            elif is_obj(s.var.type):
                self.line(f"{s.var.name} = {self.classes.new(s.var.type)}")
                self.line(f"{s.var.name}.assign({self.expr(s.init)})")
            else:
                self.line(f"{s.var.name} = {self._copy_if_list(s.init)}")
        elif isinstance(s, ir.If):
            self.line(f"if {self.expr(s.cond)}:")
            self.indent += 1
            self.stmts(s.then)
            self.indent -= 1
            if s.else_:
                self.line("else:")
                self.indent += 1
                self.stmts(s.else_)
                self.indent -= 1
        elif isinstance(s, ir.Switch):
            self.switch(s)
        elif isinstance(s, ir.Exit):
            self.line("raise ExitSignal()")
        elif isinstance(s, ir.Return):
            value = None
            if s.value is not None:
                value = self._copy_if_list(s.value)
                if is_obj(s.value.type):
                    value = f"{value}.copy()"
            self.line(self._return_stmt(value))
        elif isinstance(s, ir.Loop):
            self.loop(s)
        elif isinstance(s, ir.ForIn):
            coll = self.expr(s.collection)
            if isinstance(types.strip_newtype(s.collection.type), types.StackT):
                coll = f"{coll}.elems"
            self.fs.declared.add(s.var.name)
            self.line(f"for {s.var.name} in {coll}:")
            self.indent += 1
            self.fs.loop_updates.append([])
            self.stmts(s.body)
            self.fs.loop_updates.pop()
            self.indent -= 1
        elif isinstance(s, ir.Break):
            self.line("break")
        elif isinstance(s, ir.Continue):
            for u in self.fs.loop_updates[-1] if self.fs.loop_updates else []:
                self.stmt(u)
            self.line("continue")
        else:
            raise UnsupportedError(s.loc, f"statement {type(s).__name__}")

    def loop(self, s: ir.Loop) -> None:
        """A ``for`` loop."""
        for i in s.init:
            self.stmt(i)
        self.line("while True:")
        self.indent += 1
        if s.cond is not None:
            self.line(f"if not ({self.expr(s.cond)}):")
            self.line("    break")
        self.fs.loop_updates.append(s.updates)
        self.stmts(s.body)
        self.fs.loop_updates.pop()
        for u in s.updates:
            self.stmt(u)
        self.indent -= 1

    def switch(self, s: ir.Switch, subject: str | None = None) -> None:
        """``switch``: an if/elif chain on the subject (already in ``subject``)."""
        if subject is None:
            subject = self.fresh("s")
            self.line(f"{subject} = {self.expr(s.expr)}")
        first = True
        default: ir.SwitchCase | None = None
        for case in s.cases:
            if case.is_default:
                default = case
                if not case.labels:
                    continue
            labels = ", ".join(repr(x) for x in case.labels)
            self.line(f"{'if' if first else 'elif'} {subject} in ({labels},):")
            first = False
            self.indent += 1
            self.stmts(case.body)
            self.indent -= 1
        if default is not None:
            if first:
                self.stmts(default.body)
            else:
                self.line("else:")
                self.indent += 1
                self.stmts(default.body)
                self.indent -= 1

    def _copy_if_list(self, e: ir.Expr) -> str:
        v = self.expr(e)
        if isinstance(types.strip_newtype(e.type), types.TupleT) and not isinstance(
            e, ir.StructLit
        ):
            return f"copy_value({v})"
        return v

    def assign(self, lhs: ir.Expr, rhs: ir.Expr) -> None:
        """``lhs = rhs`` (composites are copied into the target).

        The target is located before the value is computed: when computing
        the value runs statements (a call with out arguments), run-time
        indices of the target are evaluated first, as p4c orders them."""
        start = len(self.lines)
        self._copy_if_list(rhs)
        needs_order = len(self.lines) > start
        del self.lines[start:]
        if needs_order:
            lhs = self._fix_places(lhs)
        if is_obj(lhs.type):
            value = self.expr(rhs)
            self.line(f"{self.expr(lhs)}.assign({value})")
            self.union_fix(lhs)
            return
        self.store(lhs, self._copy_if_list(rhs))

    def _fix_places(self, e: ir.Expr) -> ir.Expr:
        """``e`` with its run-time indices saved in temporaries (emitted now)."""
        if isinstance(e, ir.IndexRef):
            base = self._fix_places(e.base)
            index = e.index
            if not isinstance(index, ir.Const | ir.Var):
                tmp = self.fresh("i")
                self.line(f"{tmp} = {self.expr(index)}")
                index = ir.Var(index.type, index.loc, tmp)
            return ir.IndexRef(e.type, e.loc, base, index)
        if isinstance(e, ir.FieldRef):
            return ir.FieldRef(e.type, e.loc, self._fix_places(e.base), e.field)
        if isinstance(e, ir.StackRef):
            return ir.StackRef(e.type, e.loc, self._fix_places(e.base), e.which)
        if isinstance(e, ir.SliceE):
            lo = e.dyn_lo
            if lo is not None and not isinstance(lo, ir.Const | ir.Var):
                tmp = self.fresh("i")
                self.line(f"{tmp} = {self.expr(lo)}")
                lo = ir.Var(lo.type, lo.loc, tmp)
            return ir.SliceE(e.type, e.loc, self._fix_places(e.base), e.hi, e.lo, lo)
        return e

    def union_fix(self, lhs: ir.Expr) -> None:
        """After a write into a member of a header union through ``lhs``,
        invalidate the union's other members if that member is now valid."""
        if isinstance(lhs, ir.FieldRef) and isinstance(
            types.strip_newtype(lhs.base.type), types.UnionT
        ):
            u = types.strip_newtype(lhs.base.type)
            assert isinstance(u, types.UnionT)
            base = self.expr(lhs.base)
            others = [f for f in u.fields if f != lhs.field]
            if others:
                self.line(f"if {base}.f_{lhs.field}._v:")
                for o in others:
                    self.line(f"    {base}.f_{o}._v = False")

    def store_out(self, lhs: ir.Expr | None, value: str) -> None:
        """Store ``value`` into an out argument; for ``_`` (None) the value is
        still computed, for the effects of computing it, and thrown away."""
        if lhs is None:
            self.line(value)
        else:
            self.store(lhs, value)

    def store(self, lhs: ir.Expr, value: str) -> None:
        """Store a scalar ``value`` (Python source) into the l-value ``lhs``."""
        if isinstance(lhs, ir.Var):
            self.fs.stored.add(lhs.name)
            self.line(f"{lhs.name} = {value}")
        elif isinstance(lhs, ir.FieldRef):
            self.line(f"{self.expr(lhs.base)}.f_{lhs.field} = {value}")
            if isinstance(types.strip_newtype(lhs.type), types.Varbit):
                pass
        elif isinstance(lhs, ir.IndexRef):
            base = self.expr(lhs.base)
            if isinstance(types.strip_newtype(lhs.base.type), types.TupleT):
                self.line(f"{base}[{self.expr(lhs.index)}] = {value}")
            else:
                raise UnsupportedError(lhs.loc, "assignment to a scalar stack element")
        elif isinstance(lhs, ir.SliceE):
            base_t = types.value_type(lhs.base.type)
            assert isinstance(base_t, types.Bits)
            width = lhs.hi - lhs.lo + 1
            mask = (1 << width) - 1
            if lhs.dyn_lo is not None:
                lo = self.fresh("lo")
                self.line(f"{lo} = {self.expr(lhs.dyn_lo)}")
                cur = self.expr(lhs.base)
                new = (
                    f"(({cur}) & ~({mask} << {lo}) & {base_t.mask}) | "
                    f"((({value}) & {mask}) << {lo}) & {base_t.mask}"
                )
            else:
                keep = base_t.mask & ~(mask << lhs.lo)
                cur = self.expr(lhs.base)
                new = f"(({cur}) & {keep}) | ((({value}) & {mask}) << {lhs.lo})"
            self.store(lhs.base, new)
        else:
            raise UnsupportedError(lhs.loc, f"assignment to {type(lhs).__name__}")

    # ------------------------------------------------------------------
    # Expressions

    def expr(self, e: ir.Expr) -> str:  # noqa: C901 - one case per kind of IR node
        """Python source for the value of ``e``."""
        if isinstance(e, ir.Const):
            return self.const(e)
        if isinstance(e, ir.Var):
            return e.name
        if isinstance(e, ir.FieldRef):
            return f"{self.expr(e.base)}.f_{e.field}"
        if isinstance(e, ir.IndexRef):
            base = self.expr(e.base)
            if isinstance(e.index, ir.Const):
                i = int(e.index.value)
                if isinstance(types.strip_newtype(e.base.type), types.TupleT):
                    return f"{base}[{i}]"
                return f"{base}.elems[{i}]"
            return f"{base}.at({self.expr(e.index)})"
        if isinstance(e, ir.StackRef):
            base = self.expr(e.base)
            if e.which == "next":
                return f"{base}.nxt()"
            if e.which == "last":
                return f"{base}.last()"
            return f"{base}.last_index()"
        if isinstance(e, ir.SliceE):
            mask = (1 << (e.hi - e.lo + 1)) - 1
            if e.dyn_lo is not None:
                return f"(({self.expr(e.base)} >> {self.expr(e.dyn_lo)}) & {mask})"
            if e.lo == 0:
                return f"({self.expr(e.base)} & {mask})"
            return f"(({self.expr(e.base)} >> {e.lo}) & {mask})"
        if isinstance(e, ir.UnOp):
            return self.unop(e)
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.CastE):
            return self.cast(e)
        if isinstance(e, ir.Mux):
            return self.mux(e)
        if isinstance(e, ir.StructLit):
            return self.struct_lit(e)
        if isinstance(e, ir.InvalidHdr):
            return self.classes.new(e.type)
        if isinstance(e, ir.Call):
            return self.call(e, want_value=True)
        if isinstance(e, ir.TableResult):
            call = self.call(e.call, want_value=True)
            if e.which == "hit":
                return f"{call}[0]"
            if e.which == "miss":
                return f"(not {call}[0])"
            return f"{call}[1]"
        raise UnsupportedError(e.loc, f"expression {type(e).__name__}")

    def const(self, e: ir.Const) -> str:
        """A constant's Python literal."""
        t = types.strip_newtype(e.type)
        if isinstance(e.value, bool | str):
            return repr(e.value)
        if isinstance(t, types.InfInt) or isinstance(e.value, int):
            return repr(int(e.value))
        if isinstance(t, types.ErrorT | types.EnumT):
            return repr(e.value)
        return repr(e.value)

    def mux(self, e: ir.Mux) -> str:
        """``c ? a : b``: only the chosen branch is evaluated."""
        cond = self.expr(e.cond)
        then, then_pre = self.capture(e.then)
        other, other_pre = self.capture(e.else_)
        if not then_pre and not other_pre:
            return f"({then} if {cond} else {other})"
        tmp = self.fresh("m")
        self.line(f"if {cond}:")
        self.emit_nested(then_pre)
        self.line(f"    {tmp} = {then}")
        self.line("else:")
        self.emit_nested(other_pre)
        self.line(f"    {tmp} = {other}")
        return tmp

    def short_circuit(self, e: ir.BinOp) -> str:
        """``a && b`` / ``a || b``: ``b`` is evaluated only when it decides."""
        left = self.expr(e.left)
        right, pre = self.capture(e.right)
        op = "and" if e.op == "&&" else "or"
        if not pre:
            return f"({left} {op} {right})"
        tmp = self.fresh("c")
        self.line(f"{tmp} = {left}")
        self.line(f"if {'' if op == 'and' else 'not '}{tmp}:")
        self.emit_nested(pre)
        self.line(f"    {tmp} = {right}")
        return tmp

    def struct_lit(self, e: ir.StructLit) -> str:
        """A struct, header, tuple or stack value."""
        t = types.strip_newtype(e.type)
        vals = []
        for (_, v), s in zip(e.fields, self.ordered([v for _, v in e.fields]), strict=True):
            copy = is_obj(v.type) or isinstance(types.strip_newtype(v.type), types.TupleT)
            vals.append(f"copy_value({s})" if copy else s)
        if isinstance(t, types.StructLike) and t.name:
            return f"{self.classes.name(t)}.make({', '.join(vals)})"
        if isinstance(t, types.StackT):
            return f"_mkstack([{', '.join(vals)}])"
        return "[" + ", ".join(vals) + "]"

    def unop(self, e: ir.UnOp) -> str:
        """``! ~ -``."""
        v = self.expr(e.operand)
        t = types.value_type(e.type)
        if e.op == "!":
            return f"(not {v})"
        assert isinstance(t, types.Bits)
        if e.op == "~":
            return f"({v} ^ {t.mask})"
        return f"(-{v} & {t.mask})"

    def binop(self, e: ir.BinOp) -> str:  # noqa: C901 - one case per kind of IR node
        """Binary operators with P4 width semantics."""
        op = e.op
        if op in ("&&", "||"):
            return self.short_circuit(e)
        a, b = self.ordered([e.left, e.right])
        lt = types.value_type(e.left.type)
        if op in ("==", "!="):
            if is_obj(e.left.type) or isinstance(lt, types.TupleT):
                neg = "" if op == "==" else "not "
                return f"({neg}values_eq({a}, {b}))"
            return f"({a} {op} {b})"
        if op == "++":
            rt = types.value_type(e.right.type)
            assert isinstance(rt, types.Bits)
            return f"(({a} << {rt.width}) | {b})"
        if not isinstance(lt, types.Bits):
            raise UnsupportedError(e.loc, f"operator {op} on {e.left.type}")
        w, mask, signed = lt.width, lt.mask, lt.signed
        if op in ("<", ">", "<=", ">="):
            if signed:
                return f"(sx({a}, {w}) {op} sx({b}, {w}))"
            return f"({a} {op} {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return f"(({a} {op} {b}) & {mask})"
        if op == "/":
            return f"_div({a}, {b})"
        if op == "%":
            return f"_mod({a}, {b})"
        if op == "|+|":
            return f"sat_add_s({a}, {b}, {w})" if signed else f"min({a} + {b}, {mask})"
        if op == "|-|":
            return f"sat_sub_s({a}, {b}, {w})" if signed else f"max({a} - {b}, 0)"
        if op == "<<":
            if isinstance(e.right, ir.Const):
                n = int(e.right.value)
                return "0" if n >= w else f"(({a} << {n}) & {mask})"
            return f"shl({a}, {b}, {w})"
        if op == ">>":
            if signed:
                return f"((sx({a}, {w}) >> {b}) & {mask})"
            if isinstance(e.right, ir.Const):
                return f"({a} >> {int(e.right.value)})"
            return f"({a} >> {b})"
        raise UnsupportedError(e.loc, f"operator {op}")

    def cast(self, e: ir.CastE) -> str:
        """``(T) x``."""
        v = self.expr(e.expr)
        src, dst = types.value_type(e.expr.type), types.value_type(e.type)
        if isinstance(dst, types.Bool):
            return f"({v} != 0)" if not isinstance(src, types.Bool) else v
        if isinstance(src, types.Bool):
            return f"(1 if {v} else 0)"
        if isinstance(dst, types.Bits) and isinstance(src, types.Bits):
            if src.signed and dst.width > src.width:
                return f"(sx({v}, {src.width}) & {dst.mask})"
            if dst.width >= src.width:
                return v
            return f"({v} & {dst.mask})"
        if isinstance(dst, types.Bits):
            return f"({v} & {dst.mask})"
        return v

    # ------------------------------------------------------------------
    # Calls

    def call(self, c: ir.Call, want_value: bool) -> str:
        """Emit a call; returns the expression of its value ("" for void)."""
        return CallGen(self).call(c, want_value)

    def assign_outs(
        self, call: str, targets: Sequence[ir.Expr | None], *, may_exit: bool = False
    ) -> None:
        """Run ``call`` and store its returned scalar outs into ``targets``
        (also when the callee ``exit``s: the exit carries them in ``outs``)."""
        live = [t for t in targets if t is not None]
        if not live:
            self.line(call)
            return
        if len(targets) == 1 and not may_exit and not isinstance(targets[0], ir.SliceE):
            # (a slice is stored by reading its base: the call must run first,
            # as it may write that base)
            t = targets[0]
            assert t is not None
            self.store(t, call)
            return
        tmp = self.fresh("r")
        self.call_copying_back(
            tmp, call, functools.partial(self._store_outs, tmp, targets), may_exit=may_exit
        )

    def call_copying_back(
        self, tmp: str, call: str, copy_back: Callable[[], None], *, may_exit: bool
    ) -> None:
        """``tmp = call``, then ``copy_back()`` the outs it returned in ``tmp``; when
        the callee may ``exit``, also in the exit's way out, with the outs its
        ExitSignal carries, before the exit goes on."""
        if may_exit:
            self.line("try:")
            self.line(f"    {tmp} = {call}")
            self.line("except ExitSignal as _x:")
            self.indent += 1
            self.line(f"{tmp} = _x.outs")
            copy_back()
            self.line("raise")
            self.indent -= 1
        else:
            self.line(f"{tmp} = {call}")
        copy_back()

    def _store_outs(self, tmp: str, targets: Sequence[ir.Expr | None]) -> None:
        if len(targets) == 1:
            t = targets[0]
            assert t is not None
            self.store(t, tmp)
            return
        for i, t in enumerate(targets):
            if t is not None:
                self.store(t, f"{tmp}[{i}]")


@contextmanager
def _located(loc: Loc, what: str) -> Iterator[None]:
    """Turn a failure of this generator's own checks while it writes the
    ``what`` at ``loc`` into a located error (never a bare traceback)."""
    try:
        yield
    except (AssertionError, AttributeError, IndexError, KeyError, TypeError) as exc:
        raise P4SourceError(
            loc, f"internal error: this target cannot compile this {what} ({exc!r})"
        ) from exc


def _sx_const(v: int, t: types.Bits) -> int:
    sign = 1 << (t.width - 1)
    return (v ^ sign) - sign


__all__ = ["Codegen"]

_KEEP = (types.ExternT, types.HeaderT)
