"""A located view of a YAML document: every value knows its key path and line.

PyYAML's ``safe_load`` returns plain dicts and forgets where things were. The
fabric loader instead composes the document into nodes (``yaml.compose``) and walks
them through :class:`Node`, which keeps the key path (``links[3].a.port``) and the
node's mark, so that every :class:`ConfigError` can say ``file:line:col: path: ...``.

Scalars are read two ways. Typed fields (integers, numbers) use YAML's own
resolution; textual fields (names, addresses, MACs, durations, capacities) use the
scalar's source text, so that YAML 1.1 surprises (``no`` as a boolean, a MAC such
as ``10:20:30:40:50:59`` as a base-60 integer) never reach the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import yaml

from controller.errors import ConfigError
from kvfabric.suggest import did_you_mean

_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_NULL_TAG = "tag:yaml.org,2002:null"


def compose(file: str, text: str) -> Node:
    """The root node of ``text``; a syntax error becomes a located :class:`ConfigError`."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        line = mark.line + 1 if mark is not None else None
        col = mark.column + 1 if mark is not None else None
        raise ConfigError(file, "", f"invalid YAML: {problem}", line, col) from None
    except yaml.YAMLError as exc:
        raise ConfigError(file, "", f"invalid YAML: {exc}") from None
    return Node(file, "", root)


@dataclass(frozen=True, slots=True)
class Node:
    """One value of the document with its key path; ``raw`` is None for an empty file."""

    file: str
    path: str
    raw: yaml.Node | None

    # -- locating -----------------------------------------------------------------

    def error(self, message: str) -> ConfigError:
        """A :class:`ConfigError` located at this node."""
        if self.raw is None:
            return ConfigError(self.file, self.path, message)
        mark = self.raw.start_mark
        return ConfigError(self.file, self.path, message, mark.line + 1, mark.column + 1)

    def key(self, name: str) -> str:
        """The path of key ``name`` below this node."""
        return f"{self.path}.{name}" if self.path else name

    def got(self) -> str:
        """How the value reads in an error message: ``'x'``, ``600``, ``a list``..."""
        if self.raw is None or self.is_null:
            return "nothing"
        if isinstance(self.raw, yaml.MappingNode):
            return "a mapping"
        if isinstance(self.raw, yaml.SequenceNode):
            return "a list"
        return repr(self.value())

    # -- shapes -------------------------------------------------------------------

    @property
    def is_null(self) -> bool:
        """True for an absent value (``key:`` with nothing after it, ``~``, ``null``)."""
        return isinstance(self.raw, yaml.ScalarNode) and self.raw.tag == _NULL_TAG

    @property
    def is_scalar(self) -> bool:
        """True for a scalar that is not null."""
        return isinstance(self.raw, yaml.ScalarNode) and not self.is_null

    @property
    def is_mapping(self) -> bool:
        """True for a mapping."""
        return isinstance(self.raw, yaml.MappingNode)

    def value(self) -> object:
        """The scalar as YAML resolves it (int, float, bool, str or None)."""
        if not isinstance(self.raw, yaml.ScalarNode):
            raise self.error(f"expected a single value, got {self.got()}")
        return _CONSTRUCTOR.construct_object(self.raw, deep=True)

    def text(self, what: str = "a string") -> str:
        """The scalar's source text; anything else is an error that says ``what``."""
        if not self.is_scalar:
            raise self.error(f"expected {what}, got {self.got()}")
        assert isinstance(self.raw, yaml.ScalarNode)
        return str(self.raw.value)

    def entries(self) -> list[tuple[str, Node]]:
        """The (key, value) pairs of a mapping in file order; keys must be unique strings."""
        return [(name, value) for name, _, value in self._pairs()]

    def _pairs(self) -> list[tuple[str, Node, Node]]:
        """(name, key node, value node) of each mapping entry, keys checked."""
        if not isinstance(self.raw, yaml.MappingNode):
            raise self.error(f"expected a mapping, got {self.got()}")
        seen: dict[str, Node] = {}
        out: list[tuple[str, Node, Node]] = []
        for key_node, value_node in self.raw.value:
            key = Node(self.file, self.path, key_node)
            if not key.is_scalar:
                raise key.error(f"expected a key name, got {key.got()}")
            name = key.text()
            if name in seen:
                first = seen[name].raw
                assert first is not None
                line = first.start_mark.line + 1
                raise key.error(f"duplicate key {name!r} (first given on line {line})")
            seen[name] = key
            out.append((name, key, Node(self.file, self.key(name), value_node)))
        return out

    def fields(self, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, Node]:
        """A mapping with exactly these keys: unknown keys and missing required ones fail."""
        allowed = [*required, *optional]
        out: dict[str, Node] = {}
        for name, key, value in self._pairs():
            if name not in allowed:
                raise Node(self.file, self.key(name), key.raw).error(
                    f"unknown key{did_you_mean(name, allowed)} (expected {_one_of(allowed)})"
                )
            out[name] = value
        missing = [name for name in required if name not in out]
        if missing:
            keys = ", ".join(repr(m) for m in missing)
            plural = "s" if len(missing) > 1 else ""
            raise self.error(f"missing required key{plural} {keys}")
        return out

    def items(self) -> list[Node]:
        """The elements of a list, each with its index in the path."""
        if not isinstance(self.raw, yaml.SequenceNode):
            raise self.error(f"expected a list, got {self.got()}")
        return [Node(self.file, f"{self.path}[{i}]", n) for i, n in enumerate(self.raw.value)]


def _one_of(names: Iterable[str]) -> str:
    listed = list(names)
    if len(listed) == 1:
        return repr(listed[0])
    return "one of " + ", ".join(listed)
