"""Comments and docstrings stay short: what and why, the measurement history in docs/results/.

A profile's comment block (consecutive ``#`` lines in ``rag/profiles/*.toml``) is at most 4 lines;
a product module's docstring at most 25, counted from its opening to its closing quotes. The dated
measurements behind a value live in docs/results/profile_history.md and the results pages.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import parse_python

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "rag" / "profiles"
PACKAGES = ("medcite", "core", "rag", "corpora", "indexes", "evals", "api", "training", "bench")
MAX_COMMENT_LINES = 4
MAX_DOCSTRING_LINES = 25


def long_comment_blocks(text: str, name: str = "<string>") -> list[str]:
    """`name:first line (n lines)` for every run of whole-line comments longer than the limit."""
    found: list[str] = []
    run: list[int] = []
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.lstrip().startswith("#"):
            run.append(number)
            continue
        if len(run) > MAX_COMMENT_LINES:
            found.append(f"{name}:{run[0]} ({len(run)} lines)")
        run = []
    return found


def docstring_lines(source: str) -> int:
    """Lines the module docstring spans, quotes included; 0 without one."""
    module = parse_python(source)
    if not module.body or ast.get_docstring(module, clean=False) is None:
        return 0
    node = module.body[0]
    return (node.end_lineno or node.lineno) - node.lineno + 1


def test_the_scans_cover_the_profiles_and_the_code():
    assert len(list(PROFILES.glob("*.toml"))) >= 4
    assert len([p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]) > 100


def test_no_profile_comment_block_is_longer_than_4_lines():
    offenders = [
        hit
        for path in sorted(PROFILES.glob("*.toml"))
        for hit in long_comment_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert offenders == [], "comment blocks over 4 lines (history goes to docs/results/):\n" + "\n".join(
        offenders
    )


def test_no_product_module_docstring_is_longer_than_25_lines():
    offenders = []
    for path in sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")):
        lines = docstring_lines(path.read_text(encoding="utf-8"))
        if lines > MAX_DOCSTRING_LINES:
            offenders.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert offenders == [], "module docstrings over 25 lines:\n" + "\n".join(offenders)


def test_the_checkers_count_as_documented():
    assert long_comment_blocks("# a\n# b\n# c\n# d\nx = 1\n") == []
    assert long_comment_blocks("x = 1\n# a\n# b\n  # c\n# d\n# e\n") == ["<string>:2 (5 lines)"]
    assert long_comment_blocks("# a\n# b\n\n# c\n# d\n# e\n") == []
    assert docstring_lines('"""One line."""\nx = 1\n') == 1
    assert docstring_lines('"""First.\n\nLast.\n"""\n') == 4
    assert docstring_lines("x = 1\n") == 0
