"""The house's shape, checked on the source (ast): layers, import cycles, node size.

Every ``.py`` file of the top-level packages is parsed; every import (also inside functions and
``TYPE_CHECKING`` blocks) counts as a dependency of its package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contracts", "knowledge", "tools", "shop", "strategies", "nodes", "graph", "csagent",
            "eval")
# Layers from the bottom; a package may import only packages of a lower layer (and itself).
LAYERS: dict[str, int] = {"contracts": 0, "knowledge": 1, "tools": 1, "shop": 2, "strategies": 3,
                          "nodes": 4, "graph": 5, "csagent": 6, "eval": 7}
MAX_NODE_LINES = 40


def _imports(path: Path) -> set[str]:
    """Return the top-level packages of this project that ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(PACKAGES)


def _package_graph() -> dict[str, dict[str, list[str]]]:
    """Return package → imported package → the files that import it."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "datasets" in path.parts:
                continue
            for imported in _imports(path) - {package}:
                graph[package][imported].append(str(path.relative_to(ROOT)))
    return graph


def _cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """Return one import cycle between packages, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(package: str) -> list[str] | None:
        state[package] = 1
        stack.append(package)
        for nxt in sorted(graph.get(package, {})):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[package] = 2
        return None

    for package in sorted(graph):
        if package not in state and (found := visit(package)):
            return found
    return None


def test_no_import_cycle_between_packages():
    assert _cycle(_package_graph()) is None


def test_imports_point_down_the_layers():
    graph = _package_graph()
    upward = [f"{pkg} → {dep} ({', '.join(files[:3])})" for pkg, deps in graph.items()
              for dep, files in deps.items() if LAYERS[dep] >= LAYERS[pkg]]
    assert upward == []


def test_the_product_never_imports_eval():
    graph = _package_graph()
    offenders = [f"{pkg}: {', '.join(graph[pkg]['eval'])}" for pkg in PACKAGES
                 if pkg != "eval" and "eval" in graph.get(pkg, {})]
    assert offenders == []


def test_the_checker_finds_a_cycle():
    assert _cycle({"a": {"b": ["x"]}, "b": {"a": ["y"]}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b": ["x"]}, "b": {}}) is None


def _functions(path: Path) -> list[ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


@pytest.mark.parametrize("path", sorted((ROOT / "nodes").glob("*.py")), ids=lambda p: p.name)
def test_node_functions_are_short(path: Path):
    long = [f"{fn.name}: {fn.end_lineno - fn.lineno + 1} lines" for fn in _functions(path)
            if fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 > MAX_NODE_LINES]
    assert long == []


def test_nodes_hold_only_nodes():
    """Every public function of a node module takes the state (a node) or builds an interrupt payload.

    Private modules (``nodes/_common.py``: reading the run's context and profile) are adapters.
    """
    for path in sorted((ROOT / "nodes").glob("[!_]*.py")):
        for fn in _functions(path):
            if fn.name.startswith("_"):
                continue
            first = fn.args.args[0].arg if fn.args.args else ""
            assert first in ("state", "action", "deps"), f"{path.name}:{fn.name} is not a node"
