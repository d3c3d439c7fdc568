"""Markdown as plain text: the one Markdown-stripper (models read it; checks compare it).

The support model (``rag.gate.support_model``) learned from BioASQ snippets: plain sentences.
The guideline summaries of the default corpus are Markdown: bold runs (``**Target: SU < 6
mg/dL**``) and tables (``| G3a | 45–59 | ... |``). Read raw, a table row is a string of cells
with no words tying them to their column, and bold markers are noise the model never saw. So the
model reads a rendering where emphasis markers are gone and each table row becomes one line of
``column: cell`` pairs under the header's names. Measured on the ten questions of
``bench/answers/ask_questions.py``: the qSOFA criteria sentence against its bold numbered list rose from
0.31 to 0.43 (threshold 0.33); plain BioASQ text is unchanged.

Only what is read changes: citations keep the chunk's own text and character spans.
:func:`plain` is the same stripping without the table layout, on one line: what the support
verifier's rule checks compare (``rag/gate/support_signals.py``).
"""

from __future__ import annotations

import re

_INLINE = r"\*\*|__|`"  # emphasis and code marks, paired or not
_LINE_START = r"^[ \t]{0,3}#{1,6}[ \t]*|^[ \t]{0,3}>[ \t]*"  # heading and quote marks
_MARKS = re.compile(f"{_INLINE}|{_LINE_START}", re.MULTILINE)
_INLINE_MARKS = re.compile(_INLINE)
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
        cells = _cells(_INLINE_MARKS.sub("", line))
        if cells is not None:
            table.append(cells)
            continue
        if table:
            lines += _table_lines(table)
            table = []
        lines.append(_MARKS.sub("", line))
    if table:
        lines += _table_lines(table)
    return "\n".join(lines)


def plain(text: str) -> str:
    """``text`` on one line without any Markdown mark (emphasis, code, table pipes, heading and
    quote marks, paired or not), spaces collapsed."""
    return " ".join(_MARKS.sub("", text).replace("|", "").split())
