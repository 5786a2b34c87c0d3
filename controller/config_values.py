"""Typed readers of located YAML values: each returns a Python value or raises a
:class:`ConfigError` that says what was expected and what was found.

    >>> integer(node, 1, 510, "an integer 1..510")   # links[3].a.port: expected ..., got 'x'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TypeVar

from controller.config_units import (
    UnitError,
    format_duration,
    parse_capacity,
    parse_duration,
    parse_fraction,
)
from controller.config_yaml import Node
from kvfabric.suggest import did_you_mean

E = TypeVar("E", bound=StrEnum)

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


def capacity(node: Node) -> int:
    """A positive capacity in bit/s: ``20Mbps``, ``400Gbps`` or an integer of bit/s."""
    value = node.value() if node.is_scalar else None
    if isinstance(value, int) and not isinstance(value, bool):
        bps = value
    else:
        text = node.text("a capacity such as '20Mbps' or '400Gbps'")
        try:
            bps = parse_capacity(text)
        except UnitError as exc:
            raise node.error(f"{exc}, got {text!r}") from None
    if bps <= 0:
        raise node.error(f"expected a positive capacity, got {node.got()}")
    return bps


def duration(node: Node, lo: float, hi: float) -> float:
    """Seconds of a duration with a unit, in ``lo..hi`` seconds."""
    text = node.text("a duration such as '100ms' or '2s'")
    try:
        seconds = parse_duration(text)
    except UnitError as exc:
        raise node.error(f"{exc}, got {node.got()}") from None
    if not lo <= seconds <= hi:
        raise node.error(
            f"expected a duration between {format_duration(lo)} and "
            f"{format_duration(hi)}, got {text!r}"
        )
    return seconds


def fraction(node: Node, lo: float = 0.0, hi: float = 1.0) -> float:
    """A fraction in ``lo..hi`` written as ``10%`` or ``0.1``."""
    text = node.text("a percentage such as '10%'")
    try:
        value = parse_fraction(text)
    except UnitError as exc:
        raise node.error(f"{exc}, got {node.got()}") from None
    if not lo <= value <= hi:
        raise node.error(f"expected a percentage {lo:.0%}..{hi:.0%}, got {text!r}")
    return value


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
