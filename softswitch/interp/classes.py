"""Generated Python classes for header, header union and struct types.

For every :class:`~softswitch.frontend.types.StructLike` type the program
uses, :class:`ClassGen` writes a ``__slots__`` class with ``copy``,
``assign``, ``invalidate``, ``eq`` and ``make``, plus, for headers, an
extractor ``X<n>(pkt, h)`` and an emitter ``E<n>(out, h)`` specialised to the
header's layout (one ``int.from_bytes`` and a few shifts per header).
"""

from __future__ import annotations

from softswitch.frontend.types import (
    Bits,
    Bool,
    EnumT,
    HeaderT,
    P4Type,
    StackT,
    StructLike,
    StructT,
    TupleT,
    UnionT,
    Varbit,
    bit_width,
    strip_newtype,
)


def is_obj(t: P4Type) -> bool:
    """Whether values of ``t`` are mutable objects (headers, structs, stacks)."""
    return isinstance(strip_newtype(t), StructLike | StackT)


class ClassGen:
    """Writes the classes of a program's composite types into ``lines``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self._count = 0

    def name(self, t: StructLike) -> str:
        """The generated class name for ``t`` (generating it on first use)."""
        found = self.names.get(id(t))
        if found is not None:
            return found
        self._count += 1
        safe = "".join(c if c.isalnum() else "_" for c in t.name) or "anon"
        cls = f"C{self._count}_{safe}"
        self.names[id(t)] = cls
        for ft in t.fields.values():
            inner = strip_newtype(ft)
            if isinstance(inner, StructLike):
                self.name(inner)
            elif isinstance(inner, StackT):
                self.name(strip_newtype(inner.element))  # type: ignore[arg-type]
        self._write_class(t, cls)
        if isinstance(t, HeaderT):
            self._write_extract(t, cls)
            self._write_emit(t, cls)
        return cls

    def new(self, t: P4Type) -> str:
        """An expression creating a fresh (invalid / zero) value of ``t``."""
        t = strip_newtype(t)
        if isinstance(t, StructLike):
            return f"{self.name(t)}()"
        if isinstance(t, StackT):
            elem = strip_newtype(t.element)
            assert isinstance(elem, StructLike)
            return f"Stack([{self.name(elem)}() for _ in range({t.size})])"
        if isinstance(t, TupleT):
            return "[" + ", ".join(self.new(e) for e in t.elements) + "]"
        if isinstance(t, Bool):
            return "False"
        return "0"

    def _write_class(self, t: StructLike, cls: str) -> None:
        fields = list(t.fields.items())
        is_header = isinstance(t, HeaderT)
        slots = ["_v"] if is_header else []
        for f, ft in fields:
            slots.append(f"f_{f}")
            if isinstance(strip_newtype(ft), Varbit):
                slots.append(f"w_{f}")
        out = self.lines
        out.append(f"class {cls}:")
        out.append(f"    __slots__ = ({', '.join(repr(s) for s in slots)}{',' if slots else ''})")
        out.append("    def __init__(self):")
        if is_header:
            out.append("        self._v = False")
        for f, ft in fields:
            out.append(f"        self.f_{f} = {self.new(ft)}")
            if isinstance(strip_newtype(ft), Varbit):
                out.append(f"        self.w_{f} = 0")
        if not slots:
            out.append("        pass")
        # copy
        out.append("    def copy(self):")
        out.append(f"        n = {cls}.__new__({cls})")
        out.extend("        " + _SLOT_COPY[_slot_kind(t, s)][0].format(s=s) for s in slots)
        out.append("        return n")
        # assign
        out.append("    def assign(self, o):")
        out.extend("        " + _SLOT_COPY[_slot_kind(t, s)][1].format(s=s) for s in slots)
        if not slots:
            out.append("        pass")
        # invalidate
        out.append("    def invalidate(self):")
        body = ["        self._v = False"] if is_header else []
        for f, ft in fields:
            if _needs_copy(ft):
                body.append(f"        self.f_{f}.invalidate()")
        out.extend(body or ["        pass"])
        # eq
        out.append("    def eq(self, o):")
        if is_header:
            out.append("        if not self._v and not o._v:")
            out.append("            return True")
            out.append("        if self._v != o._v:")
            out.append("            return False")
        if isinstance(t, UnionT):
            conds = [f"self.f_{f}.eq(o.f_{f})" for f, _ in fields]
        else:
            conds = [
                f"self.f_{f}.eq(o.f_{f})"
                if _needs_copy(ft)
                else f"values_eq(self.f_{f}, o.f_{f})"
                if isinstance(strip_newtype(ft), TupleT)
                else f"self.f_{f} == o.f_{f}"
                for f, ft in fields
            ]
        out.append(f"        return {' and '.join(conds) if conds else 'True'}")
        # make
        params = ", ".join(f"a{i}" for i in range(len(fields)))
        out.append("    @staticmethod")
        out.append(f"    def make({params}):")
        out.append(f"        n = {cls}.__new__({cls})")
        if is_header:
            out.append("        n._v = True")
        for i, (f, ft) in enumerate(fields):
            out.append(f"        n.f_{f} = a{i}")
            if isinstance(strip_newtype(ft), Varbit):
                out.append(f"        n.w_{f} = 0")
        out.append("        return n")
        out.append("")

    def _layout(self, t: StructLike, prefix: str = "") -> list[tuple[str, P4Type, int]]:
        """The header's bit fields in wire order as (attribute path after ``f_``,
        type, width); a struct field of a header contributes its own fields."""
        out: list[tuple[str, P4Type, int]] = []
        for f, ft in t.fields.items():
            inner = strip_newtype(ft)
            if isinstance(inner, StructT):
                out.extend(self._layout(inner, f"{prefix}{f}.f_"))
            else:
                out.append((f"{prefix}{f}", ft, bit_width(ft)))
        return out

    def _write_extract(self, t: HeaderT, cls: str) -> None:
        layout = self._layout(t)
        out = self.lines
        n = cls[1:].split("_", 1)[0]
        has_varbit = any(isinstance(strip_newtype(ft), Varbit) for _, ft, _ in layout)
        total = sum(w for _, ft, w in layout if not isinstance(strip_newtype(ft), Varbit))
        if has_varbit:
            vmax = next(w for _, ft, w in layout if isinstance(strip_newtype(ft), Varbit))
            # BMv2's extract_VL: a width that is not whole bytes is
            # ParserInvalidArgument, then PacketTooShort, then HeaderTooShort.
            out.append(f"def X{n}(pkt, h, vw=0):")
            out.append("    if vw & 7:")
            out.append("        raise ParserReject(6)")
            out.append(f"    total = {total} + vw")
            out.append("    off = pkt.need(total)")
            out.append(f"    if vw > {vmax}:")
            out.append("        raise ParserReject(4)")
        else:
            out.append(f"def X{n}(pkt, h):")
            out.append(f"    total = {total}")
            out.append("    off = pkt.need(total)")
        if not has_varbit and total % 8 == 0 and total > 0:
            out.append("    if off & 7 == 0:")
            out.append(
                f"        v = int.from_bytes(pkt.data[off >> 3:(off >> 3) + {total // 8}], 'big')"
            )
            out.append("    else:")
            out.append("        v = pkt.bits(off, total)")
        else:
            out.append("    v = pkt.bits(off, total)")
        shift = "0"
        shift_const = 0
        for f, ft, w in reversed(layout):
            base = strip_newtype(ft)
            if isinstance(base, Varbit):
                sh = _shift_expr(shift, shift_const)
                out.append(f"    h.f_{f} = (v >> {sh}) & ((1 << vw) - 1)")
                out.append(f"    h.w_{f} = vw")
                shift = "vw"
                continue
            sh = _shift_expr(shift, shift_const)
            mask = (1 << w) - 1
            val = f"(v >> {sh}) & {mask}" if sh != "0" else f"v & {mask}"
            if isinstance(base, Bool):
                val = f"bool({val})"
            out.append(f"    h.f_{f} = {val}")
            shift_const += w
        out.append("    h._v = True")
        out.append("    pkt.off = off + total")
        out.append("")

    def _write_emit(self, t: HeaderT, cls: str) -> None:
        layout = self._layout(t)
        out = self.lines
        n = cls[1:].split("_", 1)[0]
        has_varbit = any(isinstance(strip_newtype(ft), Varbit) for _, ft, _ in layout)
        out.append(f"def E{n}(o, h):")
        out.append("    if not h._v:")
        out.append("        return")
        if has_varbit:
            for f, ft, w in layout:
                if isinstance(strip_newtype(ft), Varbit):
                    out.append(f"    o.put(h.f_{f}, h.w_{f})")
                else:
                    out.append(f"    o.put(int(h.f_{f}) & {(1 << w) - 1}, {w})")
            out.append("")
            return
        total = sum(w for _, _, w in layout)
        parts = []
        shift = total
        for f, ft, w in layout:
            shift -= w
            val = f"h.f_{f}"
            if isinstance(strip_newtype(ft), Bool | EnumT):
                val = f"int({val})"
            parts.append(f"({val} << {shift})" if shift else val)
        expr = " | ".join(parts) if parts else "0"
        out.append(f"    o.acc = (o.acc << {total}) | {expr}")
        out.append(f"    o.nbits += {total}")
        out.append("")


def _shift_expr(var: str, const: int) -> str:
    if var == "0":
        return str(const)
    return f"({var} + {const})" if const else var


# How a value class's copy() and assign() treat one slot, by kind: a nested
# header, struct or stack through its own method, a tuple through copy_value,
# anything else (an int, a bool, a validity or varbit-width slot) as it is.
_SLOT_COPY: dict[str, tuple[str, str]] = {
    "object": ("n.{s} = self.{s}.copy()", "self.{s}.assign(o.{s})"),
    "tuple": ("n.{s} = copy_value(self.{s})", "self.{s} = copy_value(o.{s})"),
    "plain": ("n.{s} = self.{s}", "self.{s} = o.{s}"),
}


def _slot_kind(t: StructLike, slot: str) -> str:
    """The :data:`_SLOT_COPY` kind of ``slot`` in the class of ``t``."""
    if not slot.startswith("f_"):
        return "plain"
    field_type = t.fields[slot[2:]]
    if _needs_copy(field_type):
        return "object"
    if isinstance(strip_newtype(field_type), TupleT):
        return "tuple"
    return "plain"


def _needs_copy(t: P4Type) -> bool:
    return isinstance(strip_newtype(t), StructLike | StackT)


__all__ = ["ClassGen", "is_obj"]

_KEEP = (Bits,)
