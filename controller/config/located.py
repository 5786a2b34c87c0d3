"""A located view of a YAML document, and the typed readers of its values.

PyYAML's ``safe_load`` returns plain dicts and forgets where things were. The
fabric loader instead composes the document into nodes (``yaml.compose``) and walks
them through :class:`Node`, which keeps the key path (``links[3].a.port``) and the
node's mark, so that every :class:`ConfigError` can say ``file:line:col: path: ...``.

Scalars are read two ways. Typed fields (integers, numbers) use YAML's own
resolution; textual fields (names, addresses, MACs, durations, capacities) use the
scalar's source text, so that YAML 1.1 surprises (``no`` as a boolean, a MAC such
as ``10:20:30:40:50:59`` as a base-60 integer) never reach the model.

The typed readers (``integer``, ``name``, ``duration``, ``capacity``...) each return a
Python value or raise a :class:`ConfigError` that says what was expected and what was
found; the fabric file, the lab's scenarios and its sweeps all read through them::

    >>> integer(node, 1, 510, "an integer 1..510")   # links[3].a.port: expected ..., got 'x'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import yaml

from controller.config.units import (
    UnitError,
    format_duration,
    parse_capacity,
    parse_duration,
    parse_fraction,
)
from controller.errors import ConfigError, LocatedError
from kvfabric.suggest import did_you_mean

_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_NULL_TAG = "tag:yaml.org,2002:null"


def read_file(path: str | Path, error: type[LocatedError] = ConfigError) -> str:
    """The UTF-8 text of the file at ``path``; ``error`` located at the file when it
    cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise error(str(path), "", f"cannot read the file: {reason}") from None


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


E = TypeVar("E", bound=StrEnum)
D = TypeVar("D")
T = TypeVar("T")
P = ParamSpec("P")

_MAC = re.compile(r"^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9\-.]*[A-Za-z0-9])?$")


def integer(node: Node, lo: int, hi: int | None = None) -> int:
    """An integer in ``lo..hi`` (``hi`` None: no upper bound)."""
    span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
    value = node.value() if node.is_scalar else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise node.error(f"expected an integer {span}, got {node.got()}")
    if value < lo or (hi is not None and value > hi):
        raise node.error(f"expected an integer {span}, got {value}")
    return value


def number(node: Node, lo: float, hi: float | None = None) -> float:
    """A number (int or float) in ``lo..hi``."""
    span = f"{lo:g}..{hi:g}" if hi is not None else f">= {lo:g}"
    value = node.value() if node.is_scalar else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise node.error(f"expected a number {span}, got {node.got()}")
    if not lo <= value or (hi is not None and value > hi):
        raise node.error(f"expected a number {span}, got {value:g}")
    return float(value)


def boolean(node: Node) -> bool:
    """``true`` or ``false`` (YAML 1.1's ``yes``/``no``/``on``/``off`` are refused)."""
    text = node.text("true or false")
    if text.lower() not in ("true", "false"):
        raise node.error(f"expected true or false, got {text!r}")
    return text.lower() == "true"


def name(node: Node) -> str:
    """An identifier: a letter or '_' first, then letters, digits, '_', '-' or '.'."""
    text = node.text("a name")
    if not _NAME.match(text):
        raise node.error(
            f"expected a name (a letter first, then letters, digits, '_', '-', '.'), got {text!r}"
        )
    return text


def string(node: Node) -> str:
    """Any non-empty string."""
    return node.text("a string")


def choice(node: Node, enum: type[E]) -> E:
    """One of an enum's values, with a guess when the text is close to one."""
    allowed = [str(member.value) for member in enum]
    text = node.text(f"one of {', '.join(allowed)}")
    for member in enum:
        if member.value == text:
            return member
    raise node.error(
        f"expected one of {', '.join(allowed)}, got {text!r}{did_you_mean(text, allowed)}"
    )


def optional(
    fields: Mapping[str, Node],
    key: str,
    default: D,
    parse: Callable[Concatenate[Node, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T | D:
    """``parse(fields[key], *args)`` when the optional ``key`` is there, else ``default``."""
    return parse(fields[key], *args, **kwargs) if key in fields else default


def capacity(node: Node) -> int:
    """A positive capacity in bit/s: ``20Mbps``, ``400Gbps`` or an integer of bit/s."""
    return positive_amount(node, "capacity", "'20Mbps' or '400Gbps'", parse_capacity)


def positive_amount(node: Node, noun: str, example: str, parse: Callable[[str], int]) -> int:
    """A positive integer amount: an integer, or text that ``parse`` reads (it raises
    ValueError on bad text); ``noun`` and ``example`` name it in errors."""
    value = node.value() if node.is_scalar else None
    if isinstance(value, int) and not isinstance(value, bool):
        amount = value
    else:
        text = node.text(f"a {noun} such as {example}")
        try:
            amount = parse(text)
        except ValueError as exc:
            raise node.error(f"{exc}, got {text!r}") from None
    if amount <= 0:
        raise node.error(f"expected a positive {noun}, got {node.got()}")
    return amount


def duration(node: Node, lo: float, hi: float) -> float:
    """Seconds of a duration with a unit, in ``lo..hi`` seconds."""
    text, seconds = _with_unit(node, "a duration such as '100ms' or '2s'", parse_duration)
    if not lo <= seconds <= hi:
        raise node.error(
            f"expected a duration between {format_duration(lo)} and "
            f"{format_duration(hi)}, got {text!r}"
        )
    return seconds


def fraction(node: Node, lo: float = 0.0, hi: float = 1.0) -> float:
    """A fraction in ``lo..hi`` written as ``10%`` or ``0.1``."""
    text, value = _with_unit(node, "a percentage such as '10%'", parse_fraction)
    if not lo <= value <= hi:
        raise node.error(f"expected a percentage {lo:.0%}..{hi:.0%}, got {text!r}")
    return value


def _with_unit(node: Node, what: str, parse: Callable[[str], float]) -> tuple[str, float]:
    """The node's text and what ``parse`` reads in it; a located error otherwise."""
    text = node.text(what)
    try:
        return text, parse(text)
    except UnitError as exc:
        raise node.error(f"{exc}, got {node.got()}") from None


def ipv4_interface(node: Node) -> ipaddress.IPv4Interface:
    """An IPv4 address, optionally with a prefix length (``10.0.1.1/24``); default /32."""
    text = node.text("an IPv4 address such as '10.0.1.1' or '10.0.1.1/24'")
    try:
        iface = ipaddress.IPv4Interface(text)
    except ValueError:
        raise node.error(
            f"expected an IPv4 address such as '10.0.1.1' or '10.0.1.1/24', got {text!r}"
        ) from None
    if iface.ip.is_multicast or iface.ip.is_unspecified or str(iface.ip) == "255.255.255.255":
        raise node.error(f"expected a unicast IPv4 address, got {text!r}")
    return iface


def ipv4_network(node: Node) -> ipaddress.IPv4Network:
    """An IPv4 prefix such as ``10.0.1.0/24`` (host bits must be zero)."""
    text = node.text("an IPv4 prefix such as '10.0.1.0/24'")
    try:
        return ipaddress.IPv4Network(text)
    except ValueError:
        raise node.error(f"expected an IPv4 prefix such as '10.0.1.0/24', got {text!r}") from None


def mac(node: Node) -> str:
    """A unicast MAC address, returned lower-case: ``08:00:00:00:01:11``."""
    text = node.text("a MAC address such as '08:00:00:00:01:11'")
    if not _MAC.match(text):
        raise node.error(f"expected a MAC address such as '08:00:00:00:01:11', got {text!r}")
    if int(text[:2], 16) & 1:
        raise node.error(f"expected a unicast MAC address (first octet even), got {text!r}")
    return text.lower()


def address(node: Node, allow_port_zero: bool = False) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) as (host, port)."""
    text = node.text("an address such as '127.0.0.1:9559'")
    expected = "an address host:port such as '127.0.0.1:9559'"
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise node.error(f"expected {expected}, got {text!r}")
    if host.startswith("["):
        if not host.endswith("]"):
            raise node.error(f"expected {expected}, got {text!r}")
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise node.error(f"expected {expected}, got {text!r}") from None
    elif not _HOSTNAME.match(host):
        raise node.error(f"expected {expected}, got {text!r}")
    port = int(port_text)
    lo = 0 if allow_port_zero else 1
    if not lo <= port <= 65535:
        raise node.error(f"expected a TCP port {lo}..65535 in {text!r}, got {port}")
    return host, port


def one_of_keys(node: Node, fields: dict[str, Node], exclusive: Sequence[str]) -> None:
    """Fail when more than one of the mutually ``exclusive`` keys is given."""
    given = [k for k in exclusive if k in fields]
    if len(given) > 1:
        raise fields[given[1]].error(f"give only one of {', '.join(repr(k) for k in given)}")
