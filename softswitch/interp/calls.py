"""Code generation of calls: actions, functions, blocks, built-in methods, externs.

:class:`CallGen` writes the Python for one :class:`ir.Call` through its
code generator, seen as a :class:`CallHost` (the members of
:class:`~softswitch.interp.codegen.Codegen` it uses): argument passing (copy-in,
and copy-out of scalar ``out``/``inout`` arguments), the ``packet_in`` /
``packet_out`` methods, header and stack methods, and the v1model externs.
An extern the target cannot run raises :class:`UnsupportedError` here, at
load time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from softswitch.errors import UnsupportedError
from softswitch.frontend import ir, types
from softswitch.interp.analysis import ActionReach, ExitAnalysis, aliased_args
from softswitch.interp.classes import ClassGen, is_obj
from softswitch.interp.extern_funcs import CallSite

PRESERVE_EXTERNS = {
    "resubmit": "resubmit",
    "recirculate": "recirculate",
    "resubmit_preserving_field_list": "resubmit",
    "recirculate_preserving_field_list": "recirculate",
}


def _fixed_width(t: types.P4Type) -> bool:
    """Whether ``t`` is built of bits, bools and serializable enums only, in
    structs and headers: what lookahead can read."""
    st = types.strip_newtype(t)
    if isinstance(st, types.Bits | types.Bool):
        return True
    if isinstance(st, types.EnumT):
        return st.underlying is not None
    if isinstance(st, types.HeaderT | types.StructT):
        return all(_fixed_width(f) for f in st.fields.values())
    return False


def _header_name(e: ir.Expr) -> str:
    """A header's name in trace messages: its path without the parameter (``ethernet``)."""
    parts: list[str] = []
    while True:
        if isinstance(e, ir.FieldRef):
            parts.insert(0, e.field)
            e = e.base
        elif isinstance(e, ir.StackRef):
            parts.insert(0, f"[{e.which}]")
            e = e.base
        else:
            return ".".join(parts).replace(".[", "[") or "header"


def _enum_name(e: ir.Expr | None) -> str:
    if isinstance(e, ir.Const):
        t = types.strip_newtype(e.type)
        if isinstance(t, types.EnumT):
            return next(n for n, v in t.members.items() if v == e.value)
    raise UnsupportedError(e.loc if e is not None else ir.TRUE.loc, "non-constant enum argument")


class Signature(Protocol):
    """What :meth:`CallGen.invoke` needs of a callee (an action, a function, a block
    instance, an extern function's call site): its parameters and their directions."""

    @property
    def params(self) -> list[ir.Var]: ...

    @property
    def directions(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class _ExternSignature:
    """The parameters an extern function's call binds, as its arguments give them."""

    params: list[ir.Var]
    directions: list[str]


class CallHost(Protocol):
    """What :class:`CallGen` uses of the code generator that owns it
    (:class:`~softswitch.interp.codegen.Codegen`): its output, its value
    classes, its analyses, its extern-function table, and how it evaluates
    and stores expressions."""

    indent: int
    classes: ClassGen
    exits: ExitAnalysis
    reach: ActionReach
    extern_functions: frozenset[str]
    extern_sites: list[CallSite]

    def line(self, text: str) -> None: ...

    def fresh(self, base: str = "t") -> str: ...

    def root_of(self, var: str) -> str | None: ...

    def expr(self, e: ir.Expr) -> str: ...

    def ordered(self, exprs: Sequence[ir.Expr], by_ref: Sequence[bool] = ()) -> list[str]: ...

    def store(self, lhs: ir.Expr, value: str) -> None: ...

    def store_out(self, lhs: ir.Expr | None, value: str) -> None: ...

    def assign_outs(
        self, call: str, targets: Sequence[ir.Expr | None], *, may_exit: bool = False
    ) -> None: ...

    def call_copying_back(
        self, tmp: str, call: str, copy_back: Callable[[], None], *, may_exit: bool
    ) -> None: ...

    def union_fix(self, lhs: ir.Expr) -> None: ...

    def trace_line(self, level: int, message: str) -> None: ...


class CallGen:
    """Writes one call."""

    def __init__(self, g: CallHost) -> None:
        self.g = g

    def call(self, c: ir.Call, want_value: bool) -> str:
        """Emit the call; returns its value expression ("" for void)."""
        if c.kind == "action":
            action: ir.Action = c.target
            reach = self.g.reach.names(action) - {v.name for v in action.params}
            may_exit = self.g.exits.action(action)
            name = f"a{action.uid}"
            return self.invoke(name, c.args, action, want_value, may_exit=may_exit, reach=reach)
        if c.kind == "function":
            func: ir.Function = c.target
            has_ret = str(func.ret) != "void"
            return self.invoke(f"F{func.uid}", c.args, func, want_value, has_ret=has_ret)
        if c.kind == "block":
            inst: ir.BlockInstance = c.target
            may_exit = self.g.exits.block(inst)
            name = f"B{inst.uid}"
            return self.invoke(name, c.args, inst, want_value, prefix=["pk"], may_exit=may_exit)
        if c.kind == "table":
            table: ir.Table = c.target
            if want_value:
                return f"t{table.uid}()"
            self.g.line(f"t{table.uid}()")
            return ""
        if c.kind == "const":
            return repr(c.target)
        if c.kind == "extern_func":
            return self.extern_func(c, want_value)
        if c.kind == "method":
            return self.method(c, want_value)
        raise UnsupportedError(c.loc, f"call of kind {c.kind}")

    # ------------------------------------------------------------------

    def invoke(
        self,
        fname: str,
        args: list[ir.Arg],
        callee: Signature,
        want_value: bool,
        *,
        has_ret: bool = False,
        prefix: list[str] | None = None,
        may_exit: bool = False,
        reach: frozenset[str] = frozenset(),
    ) -> str:
        """Call a generated function with copy-in/copy-out.

        Headers, structs and stacks given to ``out``/``inout`` parameters go
        by reference, unless the callee could also reach them under another
        name (``reach``: the variables an action sees, or another argument
        living in the same variable): those are copied in and copied back
        after the call, in parameter order with the scalar outs."""
        g = self.g
        params, dirs = callee.params, callee.directions
        values = list(prefix or [])
        targets: list[ir.Expr | None] = []
        evaluated = [
            (arg.expr, d in ("inout", "out") and is_obj(var.type))
            for arg, var, d in zip(args, params, dirs, strict=True)
            if arg.expr is not None and (d != "out" or is_obj(var.type))
        ]
        given = iter(g.ordered([e for e, _ in evaluated], by_ref=[ref for _, ref in evaluated]))
        aliased = aliased_args([a.expr for a in args], params, dirs, reach)
        # copy-back plan in parameter order: ("scalar", target) or ("obj", place, copy)
        plan: list[tuple[str, ir.Expr | None, str]] = []
        for i, (arg, var, d) in enumerate(zip(args, params, dirs, strict=True)):
            e = arg.expr
            obj = is_obj(var.type)
            if d in ("", "in"):
                assert e is not None
                s = next(given)
                if obj or isinstance(types.strip_newtype(var.type), types.TupleT):
                    s = f"copy_value({s})"
                values.append(s)
            elif obj and e is not None and i in aliased:
                place, copy = g.fresh("p"), g.fresh("cp")
                g.line(f"{place} = {next(given)}")
                g.line(f"{copy} = {place}.copy()")
                values.append(copy)
                plan.append(("obj", None, f"{place}.assign({copy})"))
            elif d == "inout":
                assert e is not None
                values.append(next(given))
                if not obj:
                    targets.append(e)
                    plan.append(("scalar", e, ""))
            elif obj:
                values.append(next(given) if e is not None else g.classes.new(var.type))
            else:
                values.append(g.classes.new(var.type))
                targets.append(e)
                plan.append(("scalar", e, ""))
        call = f"{fname}({', '.join(values)})"
        if aliased:
            return self._call_copying_back(call, plan, has_ret=has_ret, may_exit=may_exit)
        if has_ret:
            # functions cannot exit (P4 rejects exit in a function)
            if not targets:
                if want_value:
                    return call
                g.line(call)
                return ""
            tmp = g.fresh("r")
            g.line(f"{tmp} = {call}")
            for i, t in enumerate(targets):
                if t is not None:
                    g.store(t, f"{tmp}[{i + 1}]")
            return f"{tmp}[0]"
        g.assign_outs(call, targets, may_exit=may_exit)
        return ""

    def _call_copying_back(
        self,
        call: str,
        plan: list[tuple[str, ir.Expr | None, str]],
        *,
        has_ret: bool,
        may_exit: bool,
    ) -> str:
        """Run ``call`` and copy every out argument back in parameter order,
        also when the callee ``exit``s."""
        g = self.g
        tmp = g.fresh("r")
        scalars = sum(1 for kind, _, _ in plan if kind == "scalar") + (1 if has_ret else 0)

        def copy_back() -> None:
            k = 1 if has_ret else 0
            for kind, target, line in plan:
                if kind == "obj":
                    g.line(line)
                    continue
                if target is not None:
                    g.store(target, tmp if scalars == 1 else f"{tmp}[{k}]")
                k += 1

        g.call_copying_back(tmp, call, copy_back, may_exit=may_exit)
        if has_ret:
            return tmp if scalars == 1 else f"{tmp}[0]"
        return ""

    # ------------------------------------------------------------------
    # Flattening values into (value, width) lists for hashes and checksums

    def flatten(self, e: ir.Expr) -> list[tuple[str, int]]:
        """The scalar components of ``e`` in order, as (Python source, width)."""
        if isinstance(e, ir.StructLit):
            out: list[tuple[str, int]] = []
            for _, v in e.fields:
                out.extend(self.flatten(v))
            return out
        return self._flatten_value(self.g.expr(e), e.type)

    def _flatten_value(self, src: str, t: types.P4Type) -> list[tuple[str, int]]:
        st = types.strip_newtype(t)
        if isinstance(st, types.StructLike):
            out: list[tuple[str, int]] = []
            for f, ft in st.fields.items():
                out.extend(self._flatten_value(f"{src}.f_{f}", ft))
            return out
        if isinstance(st, types.StackT):
            out = []
            for i in range(st.size):
                out.extend(self._flatten_value(f"{src}.elems[{i}]", st.element))
            return out
        if isinstance(st, types.TupleT):
            out = []
            for i, et in enumerate(st.elements):
                out.extend(self._flatten_value(f"{src}[{i}]", et))
            return out
        if isinstance(st, types.Bool):
            return [(f"int({src})", 1)]
        if isinstance(st, types.Varbit):
            return [(src, st.max_width)]
        return [(src, types.bit_width(st))]

    def _fields_src(self, e: ir.Expr) -> str:
        parts = ", ".join(f"({v}, {w})" for v, w in self.flatten(e))
        return f"[{parts}]"

    # ------------------------------------------------------------------
    # Extern functions

    def extern_func(self, c: ir.Call, want_value: bool) -> str:  # noqa: C901 - one case per kind of IR node
        """v1model and core extern functions."""
        g = self.g
        name = c.target
        a = [x.expr for x in c.args]
        if name == "mark_to_drop":
            std = g.expr(a[0]) if a and a[0] is not None else "pk.std"
            g.line(f"_drop(pk, {std})")
        elif name == "hash":
            result = a[0]
            assert a[1] is not None and a[2] is not None and a[3] is not None
            algo = _enum_name(a[1])
            width = types.bit_width(c.args[0].param.type)
            g.store_out(
                result,
                f"_hash({algo!r}, {g.expr(a[2])}, {self._fields_src(a[3])}, "
                f"{g.expr(a[4]) if a[4] is not None else 0}, {width})",
            )
        elif name in ("verify_checksum", "verify_checksum_with_payload"):
            cond, data, ck = a[0], a[1], a[2]
            assert cond is not None and data is not None and ck is not None
            algo = _enum_name(a[3])
            pay = "pk.payload" if name.endswith("payload") else "b''"
            g.line(
                f"if {g.expr(cond)} and _csum(pk, {algo!r}, {self._fields_src(data)}, {pay}, "
                f"{types.bit_width(ck.type)}) != {g.expr(ck)}:"
            )
            g.line("    pk.checksum_error = 1")
        elif name in ("update_checksum", "update_checksum_with_payload"):
            cond, data, ck = a[0], a[1], a[2]
            assert cond is not None and data is not None and ck is not None
            algo = _enum_name(a[3])
            pay = "pk.payload" if name.endswith("payload") else "b''"
            g.line(f"if {g.expr(cond)}:")
            g.indent += 1
            g.store(
                ck,
                f"_csum(pk, {algo!r}, {self._fields_src(data)}, {pay}, {types.bit_width(ck.type)})",
            )
            g.indent -= 1
        elif name == "random":
            assert a[1] is not None and a[2] is not None
            g.store_out(a[0], f"pk.random({g.expr(a[1])}, {g.expr(a[2])})")
        elif name == "digest":
            assert a[0] is not None and a[1] is not None
            dname = str(c.type_args[0]) if c.type_args else "digest"
            vals = ", ".join(v for v, _ in self.flatten(a[1]))
            g.line(f"pk.digest({dname!r}, {g.expr(a[0])}, ({vals}{',' if vals else ''}))")
        elif name in ("clone", "clone3", "clone_preserving_field_list"):
            assert a[1] is not None
            fl = "None"
            if name == "clone3" and a[2] is not None:
                fl = repr(self.field_list(a[2]))
            elif name == "clone_preserving_field_list" and a[2] is not None:
                fl = f"('index', {g.expr(a[2])})"
            g.line(f"pk.clone({g.expr(a[1])}, {fl})")
        elif name in PRESERVE_EXTERNS:
            kind = PRESERVE_EXTERNS[name]
            if name.endswith("field_list"):
                assert a[0] is not None
                fl = f"('index', {g.expr(a[0])})"
            else:
                fl = repr(self.field_list(a[0])) if a and a[0] is not None else "None"
            g.line(f"pk.{kind} = {fl} or ('index', -1)")
        elif name == "truncate":
            assert a[0] is not None
            g.line(f"pk.truncate = {g.expr(a[0])}")
        elif name in ("assert", "assume"):
            assert a[0] is not None
            g.line(f"if not {g.expr(a[0])}:")
            g.line(f"    pk.assert_failed({str(c.loc)!r}, {name!r})")
        elif name == "log_msg":
            msg = g.expr(a[0]) if a and a[0] is not None else "''"
            vals = ", ".join(v for v, _ in self.flatten(a[1])) if len(a) > 1 and a[1] else ""
            g.line(f"pk.log({msg}, ({vals}{',' if vals else ''}))")
        elif name == "verify":
            assert a[0] is not None and a[1] is not None
            g.line(f"if not {g.expr(a[0])}:")
            g.line(f"    raise ParserReject({g.expr(a[1])})")
        else:
            return self.user_extern(c, want_value)
        del want_value
        return ""

    def user_extern(self, c: ir.Call, want_value: bool) -> str:
        """An extern function the program declares, run by the implementation
        loaded for it (see :mod:`softswitch.interp.extern_funcs`)."""
        g = self.g
        name = str(c.target)
        if name not in g.extern_functions:
            raise UnsupportedError(
                c.loc,
                f"extern function {name}: no implementation is loaded "
                "(give one with --load-modules FILE.py)",
            )
        site = CallSite.of(c)
        g.extern_sites.append(site)
        fname = f"EXTF[{len(g.extern_sites) - 1}]"
        params = [ir.Var(arg.param.type, c.loc, arg.param.name) for arg in c.args]
        dirs = [arg.param.direction for arg in c.args]
        has_ret = site.result is not None
        return self.invoke(
            fname, c.args, _ExternSignature(params, dirs), want_value, has_ret=has_ret
        )

    def field_list(self, e: ir.Expr) -> list[tuple[str, list[str]]]:
        """The l-values named by a deprecated field-list argument, as (root, path)."""
        items = [v for _, v in e.fields] if isinstance(e, ir.StructLit) else [e]
        out: list[tuple[str, list[str]]] = []
        for item in items:
            path: list[str] = []
            node = item
            while isinstance(node, ir.FieldRef):
                path.insert(0, f"f_{node.field}")
                node = node.base
            if isinstance(node, ir.Var):
                root = self.g.root_of(node.name)
                if root is not None:
                    out.append((root, path))
        return out

    # ------------------------------------------------------------------
    # Methods

    def method(self, c: ir.Call, want_value: bool) -> str:
        """Methods of extern instances, packets, headers and stacks."""
        g = self.g
        receiver, name = c.target
        if isinstance(receiver, ir.InstanceRef):
            return self.instance_method(c, receiver.instance, name, want_value)
        rt = types.strip_newtype(receiver.type)
        a = [x.expr for x in c.args]
        if isinstance(rt, types.HeaderT):
            h = g.expr(receiver)
            if name == "isValid":
                return f"{h}._v"
            if name == "setValid":
                g.line(f"{h}._v = True")
                g.union_fix(receiver)
            else:
                g.line(f"{h}._v = False")
            return ""
        if isinstance(rt, types.UnionT):
            u = g.expr(receiver)
            return "(" + " or ".join(f"{u}.f_{f}._v" for f in rt.fields) + ")"
        if isinstance(rt, types.StackT):
            assert a[0] is not None
            g.line(f"{g.expr(receiver)}.{name}({g.expr(a[0])})")
            return ""
        tname = getattr(rt, "name", "")
        if tname == "packet_in":
            return self.packet_in(receiver, name, c, want_value)
        if tname == "packet_out" and name == "emit":
            assert a[0] is not None
            self.emit(g.expr(receiver), g.expr(a[0]), a[0].type)
            return ""
        raise UnsupportedError(c.loc, f"method {tname}.{name}")

    def packet_in(self, receiver: ir.Expr, name: str, c: ir.Call, want_value: bool) -> str:
        """extract, lookahead, advance, length."""
        g = self.g
        pkt = g.expr(receiver)
        a = [x.expr for x in c.args]
        if name == "extract":
            target = a[0]
            ht = types.strip_newtype(c.args[0].param.type)
            if not isinstance(ht, types.HeaderT):
                raise UnsupportedError(c.loc, f"extract into {c.args[0].param.type}")
            n = g.classes.name(ht)[1:].split("_", 1)[0]
            extra = f", {g.expr(a[1])}" if len(a) > 1 and a[1] is not None else ""
            if target is None:
                # extract<H>(_): the bits are consumed into a header thrown away
                g.line(f"X{n}({pkt}, {g.classes.new(ht)}{extra})")
            elif isinstance(target, ir.StackRef) and target.which == "next":
                stack = g.expr(target.base)
                g.line(f"X{n}({pkt}, {stack}.nxt(){extra})")
                g.line(f"{stack}.next += 1")
            elif (
                isinstance(target, ir.FieldRef)
                and isinstance(target.base, ir.StackRef)
                and target.base.which == "next"
            ):
                # a member of the next union of a stack of unions: as BMv2's
                # union-stack extract, the union is filled and nextIndex moves on
                stack = g.expr(target.base.base)
                u = g.fresh("u")
                g.line(f"{u} = {stack}.nxt()")
                member = ir.Var(target.base.type, target.loc, u)
                member_ref = ir.FieldRef(target.type, target.loc, member, target.field)
                g.line(f"X{n}({pkt}, {u}.f_{target.field}{extra})")
                g.union_fix(member_ref)
                g.line(f"{stack}.next += 1")
            else:
                g.line(f"X{n}({pkt}, {g.expr(target)}{extra})")
                g.union_fix(target)
            if target is not None:
                g.trace_line(10, f"Extracting header '{_header_name(target)}'")
            return ""
        if name == "lookahead":
            t = c.type
            st = types.strip_newtype(t)
            if isinstance(st, types.HeaderT):
                n = g.classes.name(st)[1:].split("_", 1)[0]
                h = g.fresh("la")
                o = g.fresh("o")
                g.line(f"{h} = {g.classes.new(st)}")
                g.line(f"{o} = {pkt}.off")
                g.line(f"X{n}({pkt}, {h})")
                g.line(f"{pkt}.off = {o}")
                return h
            w = types.bit_width(t)
            v = f"{pkt}.bits({pkt}.need({w}), {w})"
            if isinstance(st, types.Bool):
                return f"({v} != 0)"
            if isinstance(st, types.Bits | types.EnumT | types.ErrorT):
                return v
            if not _fixed_width(st):
                raise UnsupportedError(c.loc, f"lookahead of {t}")
            bits = g.fresh("la")
            g.line(f"{bits} = {v}")
            return self._unpack(bits, st, w)
        if name == "advance":
            assert a[0] is not None
            g.line(f"{pkt}.advance({g.expr(a[0])})")
            return ""
        if name == "length":
            return f"({pkt}.nbits >> 3)"
        del want_value
        raise UnsupportedError(c.loc, f"packet_in.{name}")

    def _unpack(self, bits: str, t: types.P4Type, shift: int) -> str:
        """A value of the fixed-width type ``t`` made of the bits of ``bits``
        that end ``shift`` bits from its least significant end (the first
        field in the most significant bits); a header comes out valid."""
        st = types.strip_newtype(t)
        if isinstance(st, types.StructLike):
            parts = []
            for ft in st.fields.values():
                parts.append(self._unpack(bits, ft, shift))
                shift -= types.bit_width(ft)
            return f"{self.g.classes.name(st)}.make({', '.join(parts)})"
        w = types.bit_width(st)
        v = f"(({bits} >> {shift - w}) & {(1 << w) - 1})"
        return f"({v} != 0)" if isinstance(st, types.Bool) else v

    def emit(self, out: str, src: str, t: types.P4Type) -> None:
        """packet_out.emit of a header, union, stack or struct of them."""
        g = self.g
        st = types.strip_newtype(t)
        if isinstance(st, types.HeaderT):
            n = g.classes.name(st)[1:].split("_", 1)[0]
            g.line(f"E{n}({out}, {src})")
        elif isinstance(st, types.UnionT | types.StructLike):
            for f, ft in st.fields.items():
                self.emit(out, f"{src}.f_{f}", ft)
        elif isinstance(st, types.StackT):
            for i in range(st.size):
                self.emit(out, f"{src}.elems[{i}]", st.element)
        else:
            raise UnsupportedError(ir.TRUE.loc, f"emit of {t}")

    def instance_method(self, c: ir.Call, inst: object, name: str, want_value: bool) -> str:
        """Methods of counters, meters, registers and other extern instances."""
        g = self.g
        if not isinstance(inst, ir.ExternInstance):
            raise UnsupportedError(c.loc, f"method {name}")
        x = f"X{inst.uid}"
        a = [arg.expr for arg in c.args]
        kind = inst.type_name
        if kind == "counter" and name == "count":
            assert a[0] is not None
            g.line(f"{x}.count({g.expr(a[0])}, pk.length)")
        elif kind == "direct_counter" and name == "count":
            pass
        elif kind == "meter" and name == "execute_meter":
            assert a[0] is not None
            g.store_out(a[1], f"_meter({x}.execute({g.expr(a[0])}, pk.length, pk.now_us))")
        elif kind == "direct_meter" and name == "read":
            g.store_out(a[0], f"_dmeter({x}, pk)")
        elif kind == "register" and name == "read":
            assert a[1] is not None
            tmp = g.fresh("rv")
            g.line(f"{tmp} = {x}.read({g.expr(a[1])})")
            if a[0] is not None:
                g.line(f"if {tmp} is not None:")
                g.indent += 1
                g.store(a[0], tmp)
                g.indent -= 1
        elif kind == "register" and name == "write":
            assert a[0] is not None and a[1] is not None
            g.line(f"{x}.write({g.expr(a[0])}, {g.expr(a[1])})")
        elif kind == "Checksum16" and name == "get":
            assert a[0] is not None
            return f"_csum(pk, 'csum16', {self._fields_src(a[0])}, b'', 16)"
        else:
            raise UnsupportedError(c.loc, f"method {kind}.{name}")
        del want_value
        return ""


__all__ = ["CallGen", "CallHost"]
