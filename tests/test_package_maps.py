"""Every package's map names every module it holds.

A package's *map* is the docstring of its ``__init__.py``: the design essay that says
which module does what, in the order data flows. A module added and left out of the
map is one a reader of the map never finds, so every package of the product (each
directory of the repository's root that holds an ``__init__.py``, but ``tests`` and
``benchmarks``, and every package below it, as found on disk: a new package is
checked the day it appears) is one case here.

The rule. A package ``p`` holds the modules ``m.py`` and the subpackages ``m/`` (with an
``__init__.py``) in its directory, but the dunder modules (``__init__``,
``__main__``). Its map names ``m`` when the docstring has one of:

- ``m`` in backticks, single or double (```m```, ````m````), also as ``m.py`` or ``m/``;
- the module's dotted path in backticks or in any Sphinx role, alone or followed by a
  name it holds (````p.m````, ``:mod:`~p.m```, ``:class:`p.m.Thing```, the target of
  ``:meth:`title <p.m.Thing.run>```);
- inside a literal block (the indented lines after a line ending in ``::``), the bare
  word ``m``, ``m/``, ``m.py`` or ``p.m`` (the diagrams of the data's flow).

A word in running prose does not count: "the engine" is not ``engine``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_PRODUCT = frozenset({"tests", "benchmarks"})

_SPAN = re.compile(r"(?::[\w:]+:)?``?([^`]+?)``?")
_WORD = re.compile(r"[A-Za-z_][\w.]*/?")


def product_packages() -> list[Path]:
    """Every product package's directory, as found on disk (see the module docstring)."""
    tops = [
        d
        for d in sorted(ROOT.iterdir())
        if d.is_dir() and (d / "__init__.py").is_file() and d.name not in NOT_PRODUCT
    ]
    return [init.parent for top in tops for init in sorted(top.rglob("__init__.py"))]


def dotted(package: Path) -> str:
    return ".".join(package.relative_to(ROOT).parts)


def held(package: Path) -> list[str]:
    """The modules and subpackages ``package`` holds (dunder modules left out)."""
    out = []
    for p in sorted(package.iterdir()):
        if p.suffix == ".py" and not (p.stem.startswith("__") and p.stem.endswith("__")):
            out.append(p.stem)
        elif p.is_dir() and (p / "__init__.py").is_file():
            out.append(p.name)
    return out


def named(doc: str, package: str) -> set[str]:
    """The names of ``package``'s modules its map names (see the module docstring)."""
    found: set[str] = set()
    for span in _SPAN.findall(doc):
        target = span.rsplit("<", 1)[-1].rstrip(">").lstrip("~").strip()
        found |= _module_of(target, package)
    for line in _literal_lines(doc):
        for word in _WORD.findall(line):
            found |= _module_of(word, package)
    return found


def _module_of(text: str, package: str) -> set[str]:
    """The module a backticked span or a literal block's word names, if any."""
    text = text.removesuffix("/").removesuffix(".py")
    if text.startswith(package + "."):
        return {text[len(package) + 1 :].split(".")[0]}
    return {text} if text.isidentifier() else set()


def _literal_lines(doc: str) -> list[str]:
    """The lines of the docstring's literal blocks (indented, after a ``::`` line)."""
    out: list[str] = []
    inside, indent = False, 0
    for line in doc.splitlines():
        stripped = line.strip()
        if inside:
            if not stripped:
                continue
            depth = len(line) - len(line.lstrip())
            if depth > indent:
                out.append(line)
                continue
            inside = False
        if stripped.endswith("::"):
            inside, indent = True, len(line) - len(line.lstrip())
    return out


@pytest.mark.parametrize("package", product_packages(), ids=dotted)
def test_the_package_map_names_every_module(package: Path) -> None:
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    missing = [m for m in held(package) if m not in named(doc, dotted(package))]
    assert not missing, (
        f"{package.relative_to(ROOT)}/__init__.py's docstring does not name "
        f"{', '.join(missing)} (see tests/test_package_maps.py for how to name one)"
    )
