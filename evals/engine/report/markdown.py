"""A Markdown table as ``report.md`` writes them: the first two columns left, the rest right-aligned."""

from __future__ import annotations


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    """The table's lines, then a blank one."""
    aligns = ["---" if i < 2 else "---:" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    return [*out, *("| " + " | ".join(str(c) for c in row) + " |" for row in rows), ""]
