"""The whole suite's one collection rule: a test marked ``root`` is skipped without root.

Tests that build networks (namespaces, veth pairs, tc, Mininet) carry the ``root``
marker (registered in pyproject.toml), and nothing else skips for want of root, so
``pytest -m "not root"`` is exactly the suite an unprivileged user can run.
"""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (namespaces, veth pairs, tc, Mininet)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
