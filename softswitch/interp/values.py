"""Run-time values and packet buffers of the interpreter.

The generated code (see :mod:`softswitch.interp.codegen`) represents

* ``bit<w>``/``int<w>`` as Python ints holding the unsigned pattern, ``bool``
  as bool, enum members and errors as their codes;
* each header, header union and struct type as a generated ``__slots__``
  class whose instances have ``_v`` (validity, headers only) and one
  ``f_<name>`` attribute per field (``w_<name>`` holds a varbit's width);
* header stacks as :class:`Stack`, tuples as lists.

Composite values are mutable objects; assignment copies into the target in
place (``dst.assign(src)``), so a variable never changes identity and
``inout`` arguments can be passed by reference.
"""

from __future__ import annotations

from typing import Any

ERR_NO_ERROR = 0
ERR_PACKET_TOO_SHORT = 1
ERR_NO_MATCH = 2
ERR_STACK_OUT_OF_BOUNDS = 3
ERR_HEADER_TOO_SHORT = 4
ERR_PARSER_INVALID_ARGUMENT = 6


class ParserReject(Exception):
    """The parser transitions to ``reject`` with ``code`` as the parser error."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitSignal(Exception):
    """``exit``: leave the current top-level control.

    On its way up, each callee with scalar ``out``/``inout`` parameters puts
    their values in ``outs`` (shaped like its return value) so that the
    caller still copies them back, as the P4_16 spec requires."""

    outs: Any = None


class StackError(Exception):
    """A run-time header stack index out of bounds outside a parser.

    BMv2 evaluates ``hs[i]`` with ``std::vector::at``, so an index past the
    end throws an exception nobody catches and simple_switch terminates.  A
    packet must not stop this target: :class:`~softswitch.interp.pipeline.Pipeline`
    drops the packet that did it and logs why."""


class PacketIn:
    """The packet being parsed: ``data`` and the bit offset ``off``."""

    __slots__ = ("data", "nbits", "off")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.nbits = len(data) * 8
        self.off = 0

    def bits(self, off: int, n: int) -> int:
        """``n`` bits at bit offset ``off`` (the caller checked the length)."""
        if n == 0:
            return 0
        end = off + n
        first, last = off >> 3, (end + 7) >> 3
        v = int.from_bytes(self.data[first:last], "big")
        return (v >> ((last << 3) - end)) & ((1 << n) - 1)

    def need(self, n: int) -> int:
        """Check that ``n`` more bits are there; returns the current offset."""
        off = self.off
        if off + n > self.nbits:
            raise ParserReject(ERR_PACKET_TOO_SHORT)
        return off

    def advance(self, n: int) -> None:
        """``advance(n)``: BMv2 moves by whole bytes only (ParserInvalidArgument)."""
        if n & 7:
            raise ParserReject(ERR_PARSER_INVALID_ARGUMENT)
        self.need(n)
        self.off += n

    def payload(self) -> bytes:
        """The bytes not consumed by the parser."""
        return self.data[(self.off + 7) >> 3 :]


class PacketOut:
    """The deparser's output: every emitted bit accumulated in one integer."""

    __slots__ = ("acc", "nbits")

    def __init__(self) -> None:
        self.acc = 0
        self.nbits = 0

    def put(self, value: int, width: int) -> None:
        """Append ``width`` bits."""
        self.acc = (self.acc << width) | value
        self.nbits += width

    def to_bytes(self) -> bytes:
        """The emitted bits, zero-padded to a whole byte."""
        pad = -self.nbits % 8
        return (self.acc << pad).to_bytes((self.nbits + pad) // 8, "big")


class Stack:
    """A header stack: ``elems`` and ``next`` (nextIndex)."""

    __slots__ = ("elems", "next")

    def __init__(self, elems: list[Any]) -> None:
        self.elems = elems
        self.next = 0

    def copy(self) -> Stack:
        """A deep copy."""
        s = Stack([e.copy() for e in self.elems])
        s.next = self.next
        return s

    def assign(self, other: Stack) -> None:
        """Copy ``other`` into this stack."""
        for a, b in zip(self.elems, other.elems, strict=True):
            a.assign(b)
        self.next = other.next

    def eq(self, other: Stack) -> bool:
        """P4 equality: element-wise."""
        return all(a.eq(b) for a, b in zip(self.elems, other.elems, strict=True))

    def invalidate(self) -> None:
        """Every element invalid, nextIndex 0."""
        for e in self.elems:
            e.invalidate()
        self.next = 0

    def nxt(self) -> Any:
        """``stack.next`` in a parser (StackOutOfBounds when full)."""
        if self.next >= len(self.elems):
            raise ParserReject(ERR_STACK_OUT_OF_BOUNDS)
        return self.elems[self.next]

    def last(self) -> Any:
        """``stack.last`` (StackOutOfBounds when empty)."""
        if self.next == 0:
            raise ParserReject(ERR_STACK_OUT_OF_BOUNDS)
        return self.elems[self.next - 1]

    def last_index(self) -> int:
        """``stack.lastIndex`` (bit<32>)."""
        return (self.next - 1) & 0xFFFFFFFF

    def at(self, index: int) -> Any:
        """``stack[i]`` with a run-time index."""
        if 0 <= index < len(self.elems):
            return self.elems[index]
        raise StackError(f"header stack index {index} out of bounds")

    def push_front(self, count: int) -> None:
        """Shift elements up by ``count``; the first ``count`` become invalid."""
        n = len(self.elems)
        for i in range(n - 1, -1, -1):
            if i >= count:
                self.elems[i].assign(self.elems[i - count])
            else:
                self.elems[i].invalidate()
        self.next = min(self.next + count, n)

    def pop_front(self, count: int) -> None:
        """Shift elements down by ``count``; the last ``count`` become invalid."""
        n = len(self.elems)
        for i in range(n):
            if i + count < n:
                self.elems[i].assign(self.elems[i + count])
            else:
                self.elems[i].invalidate()
        self.next = max(self.next - count, 0)


def sx(value: int, width: int) -> int:
    """The signed value of a ``width``-bit two's complement pattern."""
    sign = 1 << (width - 1)
    return (value ^ sign) - sign


def shl(value: int, amount: int, width: int) -> int:
    """``value << amount`` in ``width`` bits."""
    return (value << amount) & ((1 << width) - 1) if amount < width else 0


def sat_add_s(a: int, b: int, width: int) -> int:
    """Signed saturating ``a |+| b``."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    return max(lo, min(hi, sx(a, width) + sx(b, width))) & ((1 << width) - 1)


def sat_sub_s(a: int, b: int, width: int) -> int:
    """Signed saturating ``a |-| b``."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    return max(lo, min(hi, sx(a, width) - sx(b, width))) & ((1 << width) - 1)


def values_eq(a: Any, b: Any) -> bool:
    """P4 equality of two values of the same type (composites compare deeply)."""
    if isinstance(a, list):
        return len(a) == len(b) and all(values_eq(x, y) for x, y in zip(a, b, strict=True))
    eq = getattr(a, "eq", None)
    if eq is not None:
        return bool(eq(b))
    return bool(a == b)


def copy_value(v: Any) -> Any:
    """A deep copy of a value (scalars are returned as they are)."""
    if isinstance(v, list):
        return [copy_value(x) for x in v]
    c = getattr(v, "copy", None)
    return c() if c is not None else v
