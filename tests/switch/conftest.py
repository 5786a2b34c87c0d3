"""Fixtures of the switch tests: root skipping and veth pairs in network namespaces.

Every namespace and link a test creates has a name unique to this process and is
removed by name in teardown; nothing else on the machine is touched.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

_counter = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces, veth pairs)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


def run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@dataclass
class VethPair:
    """``inside`` lives in namespace ``netns``; ``outside`` stays in the root namespace."""

    netns: str
    inside: str
    outside: str


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"kvsw{os.getpid()}n{next(_counter)}"
    run("ip", "netns", "add", name)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def make_veth(netns: str, tag: str) -> VethPair:
    """A veth pair: one end moved into ``netns`` and up, the other up in the root namespace."""
    base = f"k{os.getpid() % 100000}{tag}{next(_counter)}"
    outside, inside = f"{base}o", f"{base}i"
    run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
    run("ip", "link", "set", inside, "netns", netns)
    run("ip", "link", "set", outside, "up")
    run("ip", "netns", "exec", netns, "ip", "link", "set", inside, "up")
    run("ip", "netns", "exec", netns, "sysctl", "-qw", f"net.ipv6.conf.{inside}.disable_ipv6=1")
    run("sysctl", "-qw", f"net.ipv6.conf.{outside}.disable_ipv6=1")
    return VethPair(netns, inside, outside)


@pytest.fixture
def veth_pairs(netns: str) -> Iterator[list[VethPair]]:
    pairs: list[VethPair] = []
    try:
        pairs.extend(make_veth(netns, tag) for tag in ("a", "b", "c"))
        yield pairs
    finally:
        for pair in pairs:
            subprocess.run(["ip", "link", "del", pair.outside], check=False, capture_output=True)
