"""No function or method in product code is longer than 60 lines.

How a function is counted: every ``def`` and ``async def`` in every .py file under the product
packages (nested functions and methods included, each on its own), from the line of its ``def``
keyword to its ``end_lineno`` (the last line of its body), both included. Decorators above the
``def`` are not counted; the docstring, comments and blank lines inside the body are. So a
function of 61 lines is ``end_lineno - lineno + 1 == 61`` and fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import parse_python

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("medcite", "core", "rag", "corpora", "indexes", "evals", "api", "training", "bench")
MAX_LINES = 60


def long_functions(source: str, name: str = "<string>") -> list[str]:
    """`name:qualified.function lines` for every function of `source` longer than MAX_LINES."""
    found: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualname = f"{prefix}{child.name}"
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > MAX_LINES:
                    found.append(f"{name}:{qualname} {lines}")
                visit(child, f"{qualname}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(parse_python(source), "")
    return found


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_the_scan_covers_the_code():
    assert len(sources()) > 100


def test_no_product_function_is_longer_than_60_lines():
    offenders = [
        hit
        for path in sources()
        for hit in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert offenders == [], "functions over 60 lines:\n" + "\n".join(offenders)


def test_the_checker_flags_a_61_line_function_and_passes_a_60_line_one():
    def function(lines: int, decorated: bool = False) -> str:
        body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
        return ("@decorator\n" if decorated else "") + "def f():\n" + body

    assert long_functions(function(61)) == ["<string>:f 61"]
    assert long_functions(function(60)) == []
    assert long_functions(function(60, decorated=True)) == []
    method = "class C:\n" + "".join("    " + line + "\n" for line in function(61).splitlines())
    assert long_functions(method) == ["<string>:C.f 61"]
