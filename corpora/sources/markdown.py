"""Split Markdown into heading-delimited sections whose spans point into the original text.

Used by the open-medicine guidelines and by user documents. The headings are the ones a
CommonMark reader sees, found by markdown-it-py (extra ``corpora``): ATX (``#`` .. ``######``,
indented by up to three spaces) and setext (a paragraph underlined with ``===`` or ``---``), but
nothing inside fenced or indented code, HTML blocks, block quotes or list items. A YAML front
matter block (``---`` on the first line, up to the next ``---`` or ``...`` line) is body text,
never a heading. The heading path is the chain of enclosing headings; each section's span covers
its body: the lines after its heading (after a setext heading's underline) up to the next heading.

markdown-it reports where each block is as line numbers (``token.map``); a line ends at ``\\r\\n``,
``\\r`` or ``\\n`` (its own rule, used here too), so character offsets are exact in the text as
given, whatever its line endings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from itertools import pairwise
from typing import Any

from core.errors import require
from core.types import Section

_LINE_END = re.compile(r"\r\n|\r|\n")
_FRONT_MATTER_CLOSE = {"---", "..."}


def _strip_inline(title: str) -> str:
    """A heading's source text as a title: emphasis and code marks dropped, one line."""
    return " ".join(re.sub(r"[*_`]+", "", title).split())


@lru_cache(maxsize=1)
def _parser() -> Any:
    markdown_it = require("markdown_it", package="markdown-it-py", extra="corpora")
    return markdown_it.MarkdownIt("commonmark")


def _line_starts(text: str) -> list[int]:
    """Offset of the first character of every line, plus ``len(text)`` at the end."""
    return [0, *(m.end() for m in _LINE_END.finditer(text)), len(text)]


def _front_matter_lines(text: str) -> int:
    """How many lines a leading YAML front matter block takes (0 when there is none)."""
    lines = _LINE_END.split(text)
    if not lines or lines[0].rstrip() != "---":
        return 0
    for n, line in enumerate(lines[1:], start=1):
        if line.rstrip() in _FRONT_MATTER_CLOSE:
            return n + 1
    return 0


def _headings(text: str) -> Iterator[tuple[int, int, int, str]]:
    """(first line, first body line, level, title) of every top-level heading, in order."""
    skip = _front_matter_lines(text)
    tokens = _parser().parse(text)
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open" or opening.level != 0 or opening.map is None:
            continue
        first, after = opening.map
        title = _strip_inline(inline.content)
        if first >= skip and title:
            yield first, after, int(opening.tag[1]), title


def markdown_sections(text: str, *, root: tuple[str, ...] = ()) -> tuple[Section, ...]:
    """Return body spans under each heading; text before the first heading gets path ``root``.

    Sections whose body is only whitespace are dropped. Spans are trimmed of surrounding
    whitespace so that ``text[s.start:s.end]`` is the body as written.
    """
    starts = _line_starts(text)
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []  # (level, title)
    path, body_start = root, 0

    def close(end: int) -> None:
        start, stop = body_start, end
        while start < stop and text[start].isspace():
            start += 1
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        if stop > start:
            sections.append(Section(path=path, start=start, end=stop))

    for first, after, level, title in _headings(text):
        close(starts[first])
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        path = root + tuple(t for _, t in stack)
        body_start = starts[min(after, len(starts) - 1)]
    close(len(text))
    return tuple(sections)


def first_heading(text: str) -> str | None:
    """The first heading's title, used as a document title when none is given."""
    return next((title for _, _, _, title in _headings(text)), None)
