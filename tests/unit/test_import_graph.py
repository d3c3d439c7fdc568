"""Imports point down: the command on top, the chain and its data below, no module cycle.

Read from the source with ``ast`` (function-level imports included), so a lazy import that runs
back up is caught as well as a module-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGES = ("medcite", "core", "rag", "corpora", "indexes", "evals", "api", "training")
# The floors, top to bottom: medcite (the command) > api, evals, training > rag > corpora >
# indexes > core (the shared vocabulary). What each package must never import: the floors above it.
NEVER = {
    "core": {"medcite", "api", "evals", "training", "rag", "corpora", "indexes"},
    "indexes": {"medcite", "api", "evals", "training", "rag", "corpora"},
    "corpora": {"medcite", "api", "evals", "training", "rag"},
    "rag": {"medcite", "api", "evals", "training"},
    "api": {"medcite", "evals", "training"},
    "evals": {"medcite", "api", "training"},
    "training": {"medcite", "api"},
}


def module_imports() -> dict[str, set[str]]:
    """Every project module -> the project modules it imports (a name imported from a package
    counts as the submodule when there is one)."""
    files = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            files[name] = path
    edges: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = full if full in files else node.module
                    if target in files:
                        edges[name].add(target)
            elif isinstance(node, ast.Import):
                edges[name] |= {a.name for a in node.names if a.name in files}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(module_imports()) == []


def test_cycles_are_found() -> None:  # the check above can fail
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_package_imports_a_floor_above_it() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in module_imports().items()
        for target in targets
        if target.split(".")[0] in NEVER.get(name.split(".")[0], set())
    )
    assert upward == []


def package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the other packages its modules import."""
    out: dict[str, set[str]] = {}
    for name, targets in edges.items():
        here = name.split(".")[0]
        out.setdefault(here, set()).update(t.split(".")[0] for t in targets if t.split(".")[0] != here)
    return out


def test_no_package_imports_one_that_imports_it_back() -> None:
    # rag <-> corpora and rag <-> indexes were such pairs while the vocabulary lived in rag
    assert cycles(package_edges(module_imports())) == []


def test_package_edges_see_a_pair_of_packages_importing_each_other() -> None:
    assert cycles(package_edges({"a.x": {"b.y"}, "b.y": {"a.z"}, "a.z": set()})) == [["a", "b"]]
