"""Markdown passages as the plain prose the support model was trained on.

The support model (``rag.check.support_model``) learned from BioASQ snippets: plain sentences.
The guideline summaries of the default corpus are Markdown: bold runs (``**Target: SU < 6
mg/dL**``) and tables (``| G3a | 45–59 | ... |``). Read raw, a table row is a string of cells
with no words tying them to their column, and bold markers are noise the model never saw. So the
model reads a rendering where emphasis markers are gone and each table row becomes one line of
``column: cell`` pairs under the header's names. Measured on the ten questions of
``bench/answers/ask_questions.py``: the qSOFA criteria sentence against its bold numbered list rose from
0.31 to 0.43 (threshold 0.33); plain BioASQ text is unchanged.

Only what the model reads changes: citations, quotes and every rule check keep the chunk's own
text and character spans.
"""

from __future__ import annotations

import re

_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_CODE = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_QUOTE = re.compile(r"^\s{0,3}>\s?")
_SEPARATOR_CELL = re.compile(r"^:?-{3,}:?$")


def _cells(line: str) -> list[str] | None:
    """The cells of a Markdown table row (``| a | b |``), or None for any other line."""
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1):
        return None
    return [cell.strip() for cell in stripped[1:-1].split("|")]


def _table_lines(rows: list[list[str]]) -> list[str]:
    """A header row, a separator row and body rows -> one ``header: cell; ...`` line per body row."""
    if len(rows) < 2 or not all(_SEPARATOR_CELL.match(c.replace(" ", "")) for c in rows[1] if c):
        return [" ".join(c for c in row if c) for row in rows]  # not a table: keep the words
    header, body = rows[0], rows[2:]
    out = []
    for row in body:
        pairs = [f"{h}: {c}" if h else c for h, c in zip(header, row, strict=False) if c]
        if pairs:
            out.append("; ".join(pairs) + ".")
    return out


def plain_text(markdown: str) -> str:
    """``markdown`` without emphasis, code, heading and quote markers, tables as lines of
    ``column: cell`` pairs. Text without Markdown comes back unchanged."""
    lines: list[str] = []
    table: list[list[str]] = []
    for line in markdown.split("\n"):
        cells = _cells(line)
        if cells is not None:
            table.append(cells)
            continue
        if table:
            lines += _table_lines(table)
            table = []
        lines.append(_QUOTE.sub("", _HEADING.sub("", line)))
    if table:
        lines += _table_lines(table)
    text = "\n".join(lines)
    text = _CODE.sub(r"\1", text)
    return _EMPHASIS.sub(r"\2", text)
