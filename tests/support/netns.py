"""Network namespaces and veth pairs for tests and benchmarks (root).

Every name carries this process's pid and a counter, so concurrent test runs never
collide, and stays within the kernel's 15-character interface-name limit. Everything
is created inside a context manager and removed by name when it exits, whether the
body passed or raised. IPv6 is disabled on every veth end so that no stray router
solicitations or neighbour discovery frames reach a switch port under test.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_ids = itertools.count()


def sh(*cmd: str) -> None:
    """Run ``cmd``; a failure raises with the command's stderr."""
    subprocess.run(cmd, check=True, capture_output=True)


def _quiet(*cmd: str) -> None:
    subprocess.run(cmd, check=False, capture_output=True)


def unique_name(prefix: str) -> str:
    """``prefix`` + this pid + a counter, at most 12 characters (suffixes fit in 15)."""
    name = f"{prefix}{os.getpid() % 100000}x{next(_ids)}"
    if len(name) > 12:
        raise ValueError(f"name {name!r} is too long for an interface (prefix {prefix!r})")
    return name


def _in(netns: str | None, *cmd: str) -> tuple[str, ...]:
    return ("ip", "netns", "exec", netns, *cmd) if netns else cmd


@dataclass(frozen=True)
class VethPair:
    """Two joined interfaces: ``outside`` in ``outside_ns``, ``inside`` in ``inside_ns``
    (None is the root namespace)."""

    outside: str
    inside: str
    outside_ns: str | None = None
    inside_ns: str | None = None


@contextmanager
def namespace(prefix: str = "kvt") -> Iterator[str]:
    """A new network namespace, deleted on exit."""
    name = f"{unique_name(prefix)}n"
    sh("ip", "netns", "add", name)
    try:
        yield name
    finally:
        _quiet("ip", "netns", "del", name)


def add_veth(
    prefix: str = "kvt", *, inside_ns: str | None = None, outside_ns: str | None = None
) -> VethPair:
    """Create a veth pair, its ends moved into the given namespaces, up and without IPv6.

    The caller removes it (:func:`delete_veth`); :func:`veth` does both."""
    base = unique_name(prefix)
    pair = VethPair(f"{base}o", f"{base}i", outside_ns, inside_ns)
    sh("ip", "link", "add", pair.outside, "type", "veth", "peer", "name", pair.inside)
    try:
        for end, ns in ((pair.outside, outside_ns), (pair.inside, inside_ns)):
            if ns:
                sh("ip", "link", "set", end, "netns", ns)
            sh(*_in(ns, "sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1"))
            sh(*_in(ns, "ip", "link", "set", end, "up"))
    except BaseException:
        delete_veth(pair)
        raise
    return pair


def delete_veth(pair: VethPair) -> None:
    """Remove a pair (deleting one end removes both); a pair already gone is fine."""
    _quiet(*_in(pair.outside_ns, "ip", "link", "del", pair.outside))


@contextmanager
def veth(
    prefix: str = "kvt", *, inside_ns: str | None = None, outside_ns: str | None = None
) -> Iterator[VethPair]:
    """:func:`add_veth` for the body of a ``with``; removed on exit."""
    pair = add_veth(prefix, inside_ns=inside_ns, outside_ns=outside_ns)
    try:
        yield pair
    finally:
        delete_veth(pair)


@contextmanager
def veths(netns: str, count: int, prefix: str = "kvt") -> Iterator[list[VethPair]]:
    """``count`` pairs, each with its ``inside`` end in ``netns``; all removed on exit."""
    pairs: list[VethPair] = []
    try:
        for _ in range(count):
            pairs.append(add_veth(prefix, inside_ns=netns))
        yield pairs
    finally:
        for pair in pairs:
            delete_veth(pair)


@contextmanager
def namespace_with_veths(count: int, prefix: str = "kvt") -> Iterator[tuple[str, list[VethPair]]]:
    """A namespace and ``count`` pairs whose ``inside`` ends live in it."""
    with namespace(prefix) as netns, veths(netns, count, prefix) as pairs:
        yield netns, pairs
