"""Docstrings name only modules, names and files that exist.

A docstring that points at a module that was moved or renamed sends its reader
nowhere. Every docstring of the product (module, class, function and attribute
docstrings: every string statement, read with :mod:`ast`, nothing imported) is
checked, one case per package (the packages of ``tests/test_package_maps.py``, so a new
package is checked the day it appears), for three kinds of reference:

- ``:mod:`target``` (also ``:mod:`~target``` and ``:mod:`title <target>```): a module
  of the repository by its dotted path; or, written bare or with a leading dot, a
  module of the referencing module's own package (``:mod:`readiness``` beside
  ``readiness.py``); or a module outside the repository that Python finds
  (``:mod:`secrets```);
- any other role (``:class:``, ``:func:``, ``:meth:``, ``:data:``, ``:attr:``,
  ``:exc:``) whose target is a dotted path into the repository's packages: the
  longest prefix that is a module must exist, and the next name must be defined at
  its top level (a class, function, assignment or import);
- a path of the repository written out (``controller/service/http/lane.py``,
  ``docs/api.md``): the file must exist.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from tests.test_package_maps import ROOT, dotted, product_packages

_ROLE = re.compile(r":(\w+):`([^`]+)`")
_TOPS = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("."))
_PATH = re.compile(
    rf"(?<![\w./-])((?:{'|'.join(map(re.escape, _TOPS))})/[\w./-]*\w\."
    r"(?:py|p4|md|yaml|yml|json|html|cpp|stf|txtpb|toml))(?![\w/])"
)


def _module_path(name: str) -> Path | None:
    """The file of the repository's module ``name`` (None: there is none)."""
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _in_repo(name: str) -> bool:
    return (ROOT / name.split(".", maxsplit=1)[0] / "__init__.py").is_file()


def _top_names(path: Path) -> set[str]:
    """The names a module defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _module_exists(target: str, package: str) -> bool:
    """Whether ``:mod:`target``` names a module (see the module docstring)."""
    bare = target.lstrip(".")
    if _module_path(f"{package}.{bare}") is not None:
        return True
    if target.startswith(".") or _in_repo(bare):
        return _module_path(bare) is not None
    try:
        return importlib.util.find_spec(bare) is not None
    except (ImportError, ValueError):
        return False


def _name_exists(target: str) -> bool:
    """Whether a dotted path into the repository names a module or a top-level name."""
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        path = _module_path(".".join(parts[:k]))
        if path is not None:
            return k == len(parts) or parts[k] in _top_names(path)
    return False


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """Every string statement of a module, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]


def broken_references(path: Path, package: str) -> list[str]:
    """The references of ``path``'s docstrings that lead nowhere, as ``file:line: ...``."""
    where = path.relative_to(ROOT)
    out: list[str] = []
    for line, text in _docstrings(path):
        for role, body in _ROLE.findall(text):
            target = body.rsplit("<", 1)[-1].rstrip(">").lstrip("~").strip()
            if role == "mod":
                if not _module_exists(target, package):
                    out.append(f"{where}:{line}: no module {target!r}")
            elif _in_repo(target) and "." in target and not _name_exists(target):
                out.append(f"{where}:{line}: nothing named {target!r}")
        out += [
            f"{where}:{line}: no file {found!r}"
            for found in _PATH.findall(text)
            if not (ROOT / found).exists()
        ]
    return out


@pytest.mark.parametrize("package", product_packages(), ids=dotted)
def test_docstrings_reference_what_exists(package: Path) -> None:
    name = dotted(package)
    broken = [
        problem
        for path in sorted(package.glob("*.py"))
        for problem in broken_references(path, name)
    ]
    assert not broken, "\n".join(broken)
