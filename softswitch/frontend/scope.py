"""Lexical scopes and the symbols the checker binds names to.

A :class:`Scope` maps names to symbols and chains to its parent; the root is
the program's top level.  Symbols are small records:

* :class:`ValueSym` -- a variable, parameter or constant (``const_value``
  set for compile-time constants, including constructor parameters);
* :class:`TypeSym` -- a resolved type, or a generic declaration that needs
  type arguments (``decl`` set, ``type`` None);
* :class:`DeclSym` -- an action, function, extern, parser, control or package
  declaration, with the scope it was declared in;
* :class:`OverloadSym` -- several same-named functions or extern functions;
* :class:`InstanceSym` -- an instantiated object (extern, table, block).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softswitch.frontend import ir
from softswitch.frontend.types import P4Type


@dataclass(slots=True)
class ValueSym:
    """A value: variable, parameter or constant."""

    name: str
    type: P4Type
    var: ir.Var | None = None
    direction: str = ""
    const_value: ir.Expr | None = None
    is_param: bool = False
    is_ctor_param: bool = False


@dataclass(slots=True)
class TypeSym:
    """A type name; ``decl`` is set for a generic declaration."""

    name: str
    type: P4Type | None = None
    decl: Any = None
    scope: Scope | None = None


@dataclass(slots=True)
class DeclSym:
    """A declaration that is not a type by itself (action, function, block...)."""

    name: str
    decl: Any
    scope: Scope
    kind: str


@dataclass(slots=True)
class OverloadSym:
    """Same-named declarations distinguished by their number of parameters."""

    name: str
    options: list[DeclSym] = field(default_factory=list)


@dataclass(slots=True)
class InstanceSym:
    """An instance: extern object, table, parser or control."""

    name: str
    instance: Any
    type: P4Type


@dataclass(slots=True)
class StateSym:
    """A parser state."""

    name: str


Symbol = ValueSym | TypeSym | DeclSym | OverloadSym | InstanceSym | StateSym


class Scope:
    """A map from names to symbols, chained to an enclosing scope."""

    __slots__ = ("names", "parent")

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, Symbol] = {}

    def lookup(self, name: str) -> Symbol | None:
        """The innermost symbol called ``name``."""
        scope: Scope | None = self
        while scope is not None:
            sym = scope.names.get(name)
            if sym is not None:
                return sym
            scope = scope.parent
        return None

    def root(self) -> Scope:
        """The top-level scope."""
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def all_names(self) -> list[str]:
        """Every name visible from here (for suggestions)."""
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            names.extend(scope.names)
            scope = scope.parent
        return names

    def child(self) -> Scope:
        """A new scope nested in this one."""
        return Scope(self)
