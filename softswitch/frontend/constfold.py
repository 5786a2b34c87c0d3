"""The arithmetic of P4_16 values, shared by constant folding and the interpreter.

Every ``bit<w>`` and ``int<w>`` value is a Python ``int`` holding the unsigned
``w``-bit pattern (``int<w>`` in two's complement); ``int`` (infinite
precision) values are plain Python ints; ``bool`` values are Python bools.
These functions are the reference semantics: the code generator emits inline
Python that must agree with them, and the tests check both.

* ``+ - *`` wrap modulo 2^w; ``|+|`` and ``|-|`` saturate (signed saturation
  for ``int<w>``);
* ``<<`` by ``w`` or more gives 0; ``>>`` of ``int<w>`` is arithmetic;
* ``/`` and ``%`` are defined on non-negative operands only (the checker
  rejects the rest);
* comparisons of ``int<w>`` compare the signed values.
"""

from __future__ import annotations

from softswitch.frontend.types import Bits, Bool, EnumT, InfInt, NewType, P4Type, to_signed

ARITH_OPS = frozenset({"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"})
SHIFT_OPS = frozenset({"<<", ">>"})
COMPARE_OPS = frozenset({"<", ">", "<=", ">="})
EQUALITY_OPS = frozenset({"==", "!="})


class FoldError(ArithmeticError):
    """An operation that has no value (division by zero, negative operand)."""


def _signed_range(width: int) -> tuple[int, int]:
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def arith(op: str, a: int, b: int, t: P4Type) -> int:  # noqa: C901 - one case per kind of P4 construct
    """``a op b`` for one of :data:`ARITH_OPS` (and shifts) on values of type ``t``."""
    if isinstance(t, InfInt):
        return _arith_inf(op, a, b)
    assert isinstance(t, Bits)
    w = t.width
    mask = (1 << w) - 1
    if op == "+":
        return (a + b) & mask
    if op == "-":
        return (a - b) & mask
    if op == "*":
        return (a * b) & mask
    if op in ("&", "|", "^"):
        return _bitwise(op, a, b) & mask
    if op in ("/", "%"):
        if b == 0:
            raise FoldError("division by zero")
        if t.signed:
            sa, sb = to_signed(a, w), to_signed(b, w)
            if sa < 0 or sb < 0:
                raise FoldError("division of negative values")
        return (a // b if op == "/" else a % b) & mask
    if op == "|+|":
        if t.signed:
            lo, hi = _signed_range(w)
            return max(lo, min(hi, to_signed(a, w) + to_signed(b, w))) & mask
        return min(a + b, mask)
    if op == "|-|":
        if t.signed:
            lo, hi = _signed_range(w)
            return max(lo, min(hi, to_signed(a, w) - to_signed(b, w))) & mask
        return max(a - b, 0)
    if op == "<<":
        return (a << b) & mask if b < w else 0
    if op == ">>":
        if t.signed:
            return (to_signed(a, w) >> min(b, w)) & mask
        return a >> b
    raise FoldError(f"unknown operator {op}")


def _bitwise(op: str, a: int, b: int) -> int:
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    return a ^ b


def _arith_inf(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("&", "|", "^"):
        return _bitwise(op, a, b)
    if op in ("/", "%"):
        if b == 0:
            raise FoldError("division by zero")
        if a < 0 or b < 0:
            raise FoldError("division of negative values")
        return a // b if op == "/" else a % b
    if op == "<<":
        if b < 0:
            raise FoldError("negative shift amount")
        return a << b
    if op == ">>":
        if b < 0:
            raise FoldError("negative shift amount")
        return a >> b
    raise FoldError(f"operator {op} needs a width")


def compare(op: str, a: int, b: int, t: P4Type) -> bool:
    """``a op b`` for ``< > <= >=`` (signed comparison for ``int<w>``)."""
    if isinstance(t, Bits) and t.signed:
        a, b = to_signed(a, t.width), to_signed(b, t.width)
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op == "<=":
        return a <= b
    return a >= b


def negate(a: int, t: P4Type) -> int:
    """Unary ``-``."""
    if isinstance(t, Bits):
        return (-a) & t.mask
    return -a


def complement(a: int, t: P4Type) -> int:
    """Unary ``~`` (only on fixed-width values)."""
    if isinstance(t, Bits):
        return a ^ t.mask
    return ~a


def concat(a: int, b: int, tb: Bits) -> int:
    """``a ++ b``."""
    return (a << tb.width) | b


def slice_bits(a: int, hi: int, lo: int) -> int:
    """``a[hi:lo]``."""
    return (a >> lo) & ((1 << (hi - lo + 1)) - 1)


def cast(value: int | bool, src: P4Type, dst: P4Type) -> int | bool:
    """``(dst) value`` where ``value`` has type ``src``."""
    while isinstance(src, NewType):
        src = src.base
    while isinstance(dst, NewType):
        dst = dst.base
    if isinstance(src, EnumT) and src.underlying is not None:
        src = src.underlying
    if isinstance(dst, EnumT) and dst.underlying is not None:
        dst = dst.underlying
    if isinstance(dst, Bool):
        return bool(value)
    if isinstance(src, Bool):
        value = int(bool(value))
    assert isinstance(value, int)
    if isinstance(dst, InfInt):
        if isinstance(src, Bits) and src.signed:
            return to_signed(value, src.width)
        return value
    if isinstance(dst, Bits):
        if isinstance(src, Bits) and src.signed and dst.width > src.width:
            return to_signed(value, src.width) & dst.mask
        return value & dst.mask
    return value


def to_value(value: int, t: P4Type) -> int:
    """An integer constant converted to the representation of ``t``."""
    if isinstance(t, Bits):
        return value & t.mask
    return value
