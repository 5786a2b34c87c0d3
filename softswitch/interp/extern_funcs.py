"""Extern functions that a program declares and the target implements.

A P4 program may declare an extern function of its own
(``extern void f(out bit<32> d, bit<32> s);``) and call it.  BMv2 runs such a
program when ``simple_switch --load-modules LIB.so`` loads a C++ library that
registers ``f`` (``BM_REGISTER_EXTERN_FUNCTION``); p4c's ``extern-funcs``
test does just that.  This target loads Python files instead::

    # my_externs.py
    def set_from(d: int, s: int) -> int:
        return s

    EXTERN_FUNCTIONS = {"f": set_from}

A module names its functions in ``EXTERN_FUNCTIONS`` (P4 name -> callable);
there is no registry behind it, so two pipelines may load different modules.

Calling convention, P4's copy-in/copy-out made explicit:

* the callable gets one positional argument per parameter, in declaration
  order: the value of an ``in`` or ``inout`` argument, 0 (``False`` for a
  bool) for an ``out`` one.  A ``bit<N>`` is an ``int`` in ``[0, 2**N)``, an
  ``int<N>`` a signed ``int``, a ``bool`` a ``bool``;
* it returns the final values of the ``out`` and ``inout`` parameters in
  order, preceded by the return value when the function is not ``void``:
  nothing (``None``) when there are none, the value itself when there is one,
  else a tuple.  Integers are cut to the parameter's width (two's complement
  for ``int<N>``).

Parameters of other types (headers, structs, strings...) are refused when the
program is loaded, located at the call.  A callable that raises or returns
something of the wrong shape ends the packet with :class:`ExternFunctionError`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softswitch.errors import Loc, SoftswitchError, UnsupportedError
from softswitch.frontend import ir
from softswitch.frontend.types import Bits, Bool, P4Type, Void, strip_newtype

TABLE_NAME = "EXTERN_FUNCTIONS"


class ExternModuleError(SoftswitchError):
    """A module of extern functions that cannot be loaded: ``file: error: message``."""

    def __init__(self, file: str, message: str) -> None:
        super().__init__(f"{file}: error: {message}")


class ExternFunctionError(SoftswitchError):
    """An extern function that failed while processing a packet."""


@dataclass(frozen=True, slots=True)
class ExternFunction:
    """One implementation: the P4 name, the callable and the file it came from."""

    name: str
    impl: Callable[..., Any]
    origin: str


@dataclass(frozen=True, slots=True)
class Scalar:
    """How a value crosses the boundary: a bool, or an integer of ``width`` bits."""

    width: int
    signed: bool = False
    is_bool: bool = False

    def to_python(self, value: Any) -> Any:
        """The generated code's value (unsigned bits, bool) as the callable sees it."""
        if self.is_bool:
            return bool(value)
        if self.signed and value >> (self.width - 1):
            return value - (1 << self.width)
        return value

    def from_python(self, value: Any, where: str) -> Any:
        """A value the callable returned, as the generated code keeps it."""
        if self.is_bool:
            if not isinstance(value, bool | int):
                raise ExternFunctionError(f"{where}: expected a bool, got {value!r}")
            return bool(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ExternFunctionError(f"{where}: expected an int, got {value!r}")
        return value & ((1 << self.width) - 1)


def scalar_of(t: P4Type) -> Scalar | None:
    """The :class:`Scalar` of a parameter type, None for types that cannot cross."""
    st = strip_newtype(t)
    if isinstance(st, Bool):
        return Scalar(1, is_bool=True)
    if isinstance(st, Bits):
        return Scalar(st.width, signed=st.signed)
    return None


@dataclass(frozen=True, slots=True)
class CallSite:
    """What the generated code of one call needs: the directions and kinds of
    the parameters, and the kind of the result (None for ``void``)."""

    name: str
    loc: Loc
    directions: tuple[str, ...]
    params: tuple[Scalar, ...]
    result: Scalar | None

    @classmethod
    def of(cls, c: ir.Call) -> CallSite:
        """The call site of ``c``; UnsupportedError for a type that cannot cross."""
        kinds: list[Scalar] = []
        for arg in c.args:
            kind = scalar_of(arg.param.type)
            if kind is None:
                raise UnsupportedError(
                    c.loc,
                    f"parameter '{arg.param.name}' of type {arg.param.type} of extern function "
                    f"{c.target}: only bit<N>, int<N> and bool cross to an implementation",
                )
            kinds.append(kind)
        result = None
        if not isinstance(strip_newtype(c.type), Void):
            result = scalar_of(c.type)
            if result is None:
                raise UnsupportedError(
                    c.loc,
                    f"extern function {c.target} returns {c.type}: only bit<N>, int<N> "
                    "and bool cross from an implementation",
                )
        directions = tuple(arg.param.direction for arg in c.args)
        return cls(str(c.target), c.loc, directions, tuple(kinds), result)

    @property
    def outs(self) -> list[Scalar]:
        """The kinds of the values the callable returns, in order."""
        found = [k for k, d in zip(self.params, self.directions, strict=True) if d != "in" and d]
        return ([self.result] if self.result is not None else []) + found


def bind(site: CallSite, fn: ExternFunction) -> Callable[..., Any]:
    """The function the generated code calls at ``site``: it converts the
    arguments, calls ``fn`` and returns its outs as generated functions do
    (a bare value for one, a tuple for several)."""
    outs = site.outs
    params = site.params
    where = f"{site.loc}: extern function {site.name} ({fn.origin})"

    def call(*args: Any) -> Any:
        given = [kind.to_python(a) for kind, a in zip(params, args, strict=True)]
        try:
            got = fn.impl(*given)
        except Exception as exc:
            raise ExternFunctionError(f"{where} failed: {exc!r}") from exc
        if not outs:
            return None
        values = (got,) if len(outs) == 1 else got
        if not isinstance(values, tuple) or len(values) != len(outs):
            raise ExternFunctionError(f"{where}: returned {got!r}, expected {_shape(len(outs))}")
        converted = [kind.from_python(v, where) for kind, v in zip(outs, values, strict=True)]
        return converted[0] if len(converted) == 1 else tuple(converted)

    return call


def _shape(n: int) -> str:
    return "one value" if n == 1 else f"a tuple of {n} values"


def load_module(path: str | Path) -> list[ExternFunction]:
    """The extern functions of one Python file (its ``EXTERN_FUNCTIONS``)."""
    file = str(path)
    if not Path(file).is_file():
        raise ExternModuleError(file, "no such file")
    spec = importlib.util.spec_from_file_location(f"kvfabric_externs_{Path(file).stem}", file)
    if spec is None or spec.loader is None:
        raise ExternModuleError(file, "not a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ExternModuleError(file, f"loading it failed: {exc!r}") from exc
    table = getattr(module, TABLE_NAME, None)
    if not isinstance(table, Mapping):
        raise ExternModuleError(file, f"it defines no {TABLE_NAME} mapping of names to functions")
    found: list[ExternFunction] = []
    for name, impl in table.items():
        if not isinstance(name, str) or not callable(impl):
            raise ExternModuleError(file, f"{TABLE_NAME}[{name!r}] is not a name and a function")
        found.append(ExternFunction(name, impl, file))
    return found


def load_modules(paths: Iterable[str | Path]) -> dict[str, ExternFunction]:
    """The extern functions of every file, by P4 name; a name twice is an error."""
    out: dict[str, ExternFunction] = {}
    for path in paths:
        for fn in load_module(path):
            if fn.name in out:
                raise ExternModuleError(
                    fn.origin,
                    f"extern function {fn.name} is already defined by {out[fn.name].origin}",
                )
            out[fn.name] = fn
    return out


__all__ = [
    "CallSite",
    "ExternFunction",
    "ExternFunctionError",
    "ExternModuleError",
    "Scalar",
    "bind",
    "load_module",
    "load_modules",
]
