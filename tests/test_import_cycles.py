"""No import cycle among the product's modules.

Every ``import`` of a product module counts, at module level or inside a function
(a function-level import only hides a cycle, it does not end one). Imports under
``if TYPE_CHECKING:`` do not count: they never run. ``from pkg import name`` counts
as an import of ``pkg.name`` when that is a module, else of ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kvfabric", "softswitch", "controller", "experiment", "lab", "simulator")

ALLOWED: set[frozenset[str]] = set()
"""Cycles accepted on purpose, each with a comment saying why (none today)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The product modules ``module`` imports (see the module docstring)."""
    found: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package[: len(package) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    found.add(full)
                elif base in known:
                    found.add(base)
    found.discard(module)
    return found


def _walk(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def import_graph() -> nx.DiGraph:
    known = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for module, path in known.items():
        graph.add_edges_from((module, dep) for dep in _imports(module, path, known))
    return graph


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = import_graph()
    assert graph.number_of_nodes() > 150
    assert graph.has_edge("controller.config.load", "controller.config.sections")
    assert graph.has_edge("kvfabric.cli", "kvfabric.commands")
    # a function-level import counts too
    assert graph.has_edge("lab.command", "lab.run")


def test_no_import_cycle_among_product_modules() -> None:
    cycles = [
        sorted(c)
        for c in nx.strongly_connected_components(import_graph())
        if len(c) > 1 and frozenset(c) not in ALLOWED
    ]
    assert cycles == []
