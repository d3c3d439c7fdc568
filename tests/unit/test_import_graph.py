"""Imports point down: the tests and tools on top, the command, the chain and its data below, no
module cycle.

Read from the source with ``ast`` (function-level imports included), so a lazy import that runs
back up is caught as well as a module-level one; so is a module named by a string literal to
``importlib.import_module`` or ``__import__``. core/registry.py's ``"module:Class"`` strings are
checked apart: each must name a class of a project module, and ``resolve`` may only be called from
a package allowed to import what it resolves.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path

from tests.helpers import parse_python

ROOT = Path(__file__).parents[2]
PACKAGES = ("medcite", "core", "rag", "corpora", "indexes", "evals", "api", "training")
TOOLS = ("bench", "scripts")  # scripts/ is no package: its files are named scripts.<stem> here
SCANNED = ("tests", *TOOLS, *PACKAGES)
# The floors, top to bottom: tests > bench, scripts (the tools: any package but the tests) >
# medcite (the command) > api, evals, training > rag > corpora > indexes > core (the shared
# vocabulary). What each package must never import: the floors above it (and, beside it, the
# packages named). Nothing outside tests/ imports tests; no product package imports a tool.
ABOVE_PRODUCT = {"tests", *TOOLS}
NEVER = {
    "bench": {"tests"},
    "scripts": {"tests"},
    "medcite": ABOVE_PRODUCT,
    "api": ABOVE_PRODUCT | {"medcite", "evals", "training"},
    "evals": ABOVE_PRODUCT | {"medcite", "api", "training"},
    "training": ABOVE_PRODUCT | {"medcite", "api"},
    "rag": ABOVE_PRODUCT | {"medcite", "api", "evals", "training"},
    "corpora": ABOVE_PRODUCT | {"medcite", "api", "evals", "training", "rag"},
    "indexes": ABOVE_PRODUCT | {"medcite", "api", "evals", "training", "rag", "corpora"},
    "core": ABOVE_PRODUCT | {"medcite", "api", "evals", "training", "rag", "corpora", "indexes"},
}
# The same rule between the parts of evals/ (and what training/ may read of it): datasets and
# metrics are below the engine, the leakage check and the studies; robustness below the engine and
# the leakage check; no study is imported by the engine or the leakage check. A key or a value is a
# module or a package with everything under it.
NEVER_INSIDE = {
    "evals.datasets": {"evals.engine", "evals.leakage", "evals.studies"},
    "evals.metrics": {"evals.engine", "evals.leakage", "evals.studies"},
    "evals.robustness": {"evals.engine", "evals.leakage", "evals.studies"},
    "evals.engine": {"evals.studies"},
    "evals.leakage": {"evals.studies"},
    "training": {"evals.engine", "evals.leakage", "evals.studies"},
}
# Calls that import the module named by their first argument.
DYNAMIC_IMPORTS = {"importlib.import_module", "import_module", "__import__"}


def module_files() -> dict[str, Path]:
    """Every scanned module (``rag.assemble``, ``scripts.screenshots``, ``tests.helpers``) -> its file."""
    files = {}
    for package in SCANNED:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            files[name] = path
    return files


def project_module(name: str, files: Collection[str]) -> str | None:
    """The longest dotted prefix of ``name`` that is a project module (``core.types.Chunk`` ->
    ``core.types``), or None for a module from elsewhere."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in files:
            return ".".join(parts[:n])
    return None


@cache
def parsed(path: Path) -> ast.Module:
    return parse_python(path.read_text(encoding="utf-8"))


def string_literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or a chain of attributes on a name, None for any other expression."""
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return node.id if isinstance(node, ast.Name) else None


def imports_of(tree: ast.AST, files: Collection[str]) -> set[str]:
    """The project modules ``tree`` imports: ``import`` and ``from`` statements at any depth (a
    name imported from a package counts as the submodule when there is one), and the calls of
    ``DYNAMIC_IMPORTS`` with a string literal."""
    named: list[str | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            named += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            named += [alias.name for alias in node.names]
        elif isinstance(node, ast.Call) and dotted(node.func) in DYNAMIC_IMPORTS and node.args:
            named.append(string_literal(node.args[0]))
    return {module for n in named if n and (module := project_module(n, files))}


def module_imports() -> dict[str, set[str]]:
    """Every scanned module -> the scanned modules it imports."""
    files = module_files()
    return {name: imports_of(parsed(path), files) for name, path in files.items()}


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


def under(name: str, package: str) -> bool:
    """``name`` is ``package`` or a module inside it."""
    return name == package or name.startswith(package + ".")


def never_inside(name: str, target: str) -> bool:
    """``NEVER_INSIDE`` forbids ``name`` to import ``target``."""
    return any(
        under(name, part) and any(under(target, never) for never in nevers)
        for part, nevers in NEVER_INSIDE.items()
    )


def upward(edges: Mapping[str, Collection[str]]) -> list[str]:
    """``module -> target`` for each import of a package that the module's package must never
    import (``NEVER``, and ``NEVER_INSIDE`` between the parts of evals/)."""
    return sorted(
        f"{name} -> {target}"
        for name, targets in edges.items()
        for target in targets
        if target.split(".")[0] in NEVER.get(name.split(".")[0], set()) or never_inside(name, target)
    )


def test_no_package_imports_a_floor_above_it() -> None:
    assert upward(module_imports()) == []


def test_an_import_of_a_floor_above_is_flagged() -> None:  # the check above can fail
    edges = {
        "indexes.x": {"rag.y", "core.z"},  # rag is above indexes; core is below
        "rag.y": {"indexes.x"},
        "rag.q": {"bench.b"},  # no product package imports a tool
        "bench.b": {"tests.t", "medcite.m"},  # a tool imports any package but the tests
        "scripts.s": {"bench.b", "core.z"},
        "tests.t": {"bench.b", "scripts.s"},
    }
    assert upward(edges) == ["bench.b -> tests.t", "indexes.x -> rag.y", "rag.q -> bench.b"]


def test_an_import_between_the_parts_of_evals_against_the_floors_is_flagged() -> None:
    edges = {
        "evals.datasets.x": {"evals.engine.y", "evals.types", "evals.robustness", "evals.engineering"},
        "evals.metrics": {"evals.records"},
        "evals.engine.y": {"evals.studies.z.w", "evals.leakage.run", "evals.metrics"},
        "evals.leakage.run": {"evals.engine.y"},
        "evals.studies.z.w": {"evals.engine.y", "evals.datasets.x"},
        "training.t": {"evals.studies.z.w", "evals.datasets.x", "evals.metrics"},
    }
    assert upward(edges) == [  # evals.engineering starts with evals.engine but is not inside it
        "evals.datasets.x -> evals.engine.y",
        "evals.engine.y -> evals.studies.z.w",
        "training.t -> evals.studies.z.w",
    ]


def test_string_imports_through_importlib_are_seen() -> None:
    source = """
import importlib
from importlib import import_module


def load(name):
    importlib.import_module("rag.y")
    import_module("rag.z.Thing")
    __import__("corpora.w")
    return importlib.import_module(name), importlib.import_module("numpy")
"""
    files = {"rag.y", "rag.z", "corpora.w", "indexes.x"}
    assert imports_of(parse_python(source), files) == {"rag.y", "rag.z", "corpora.w"}
    assert upward({"indexes.x": imports_of(parse_python(source), files)}) == [
        "indexes.x -> corpora.w",
        "indexes.x -> rag.y",
        "indexes.x -> rag.z",
    ]


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


def registry_kinds(tree: ast.Module) -> dict[str, dict[str, str]]:
    """Kind -> {name: "module:Class"}, read from the registry's syntax tree: the module-level dict
    literals of strings, each kind's through the ``KINDS`` literal that names them."""
    tables: dict[str, dict[str, str]] = {}
    kinds: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
            continue
        keys = [string_literal(k) for k in value.keys]
        strings = [string_literal(v) for v in value.values]
        names = [v.id if isinstance(v, ast.Name) else None for v in value.values]
        if None not in keys and None not in strings:
            tables[target.id] = dict(zip(keys, strings, strict=True))  # type: ignore[arg-type]
        elif target.id == "KINDS" and None not in keys and None not in names:
            kinds = dict(zip(keys, names, strict=True))  # type: ignore[arg-type]
    return {kind: tables[table] for kind, table in kinds.items()}


def resolve_calls(tree: ast.AST) -> list[str | None]:
    """The kind of each call of core.registry's ``resolve`` in ``tree`` (None where the kind is not
    a string literal)."""
    callees = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "core.registry" and node.level == 0:
            callees |= {alias.asname or alias.name for alias in node.names if alias.name == "resolve"}
        elif isinstance(node, ast.ImportFrom) and node.module == "core" and node.level == 0:
            callees |= {f"{a.asname or a.name}.resolve" for a in node.names if a.name == "registry"}
        elif isinstance(node, ast.Import):
            callees |= {f"{a.asname or a.name}.resolve" for a in node.names if a.name == "core.registry"}
    kinds: list[str | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and dotted(node.func) in callees:
            given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "kind")]
            kinds.append(string_literal(given[0]) if given else None)
    return kinds


def resolved_upward(kinds: dict[str, dict[str, str]], calls: Mapping[str, list[str | None]]) -> list[str]:
    """``module resolves module:Class`` for each registry entry a module's ``resolve`` call may
    return (every kind's when the kind is not a literal) whose package its package must never import."""
    every = {name: target for table in kinds.values() for name, target in table.items()}
    return sorted(
        {
            f"{name} resolves {target}"
            for name, called in calls.items()
            for kind in called
            for target in (kinds.get(kind, every) if kind else every).values()
            if target.split(".")[0] in NEVER.get(name.split(".")[0], set())
        }
    )


def test_registry_names_classes_of_project_modules() -> None:
    files = module_files()
    kinds = registry_kinds(parsed(files["core.registry"]))
    assert {"source", "reranker", "generator"} <= kinds.keys()
    missing = []
    for kind, table in kinds.items():
        for name, target in table.items():
            module, _, cls = target.partition(":")
            body = parsed(files[module]).body if module in files else []
            if cls not in {node.name for node in body if isinstance(node, ast.ClassDef)}:
                missing.append(f"{kind} {name}: {target}")
    assert missing == []


def test_the_registry_is_resolved_only_from_floors_at_or_above_its_targets() -> None:
    files = module_files()
    kinds = registry_kinds(parsed(files["core.registry"]))
    calls = {name: resolve_calls(parsed(path)) for name, path in files.items()}
    assert calls["rag.assemble"] and calls["corpora.catalog"]  # the scan sees the callers
    assert resolved_upward(kinds, calls) == []


def test_a_resolve_of_a_floor_above_is_flagged() -> None:  # the check above can fail
    registry = """
SOURCES: dict[str, str] = {"s": "corpora.sources.s:S"}
GENERATORS = {"g": "rag.generate.g:G"}
KINDS: dict[str, dict[str, str]] = {"source": SOURCES, "generator": GENERATORS}
"""
    kinds = registry_kinds(parse_python(registry))
    assert kinds == {"source": {"s": "corpora.sources.s:S"}, "generator": {"g": "rag.generate.g:G"}}
    caller = """
from core import registry
from core.registry import resolve as lookup


def make(kind):
    return lookup("source", "s"), registry.resolve(kind, "g")
"""
    assert resolve_calls(parse_python(caller)) == ["source", None]
    calls = {
        "indexes.x": resolve_calls(parse_python(caller)),
        "rag.y": ["source", "generator"],
        "corpora.z": ["source"],
    }
    assert resolved_upward(kinds, calls) == [
        "indexes.x resolves corpora.sources.s:S",
        "indexes.x resolves rag.generate.g:G",
    ]
