"""Split Markdown into heading-delimited sections whose spans point into the original text.

Used by the open-medicine guidelines and by user documents. ATX headings (``#`` .. ``######``)
outside fenced code blocks open a section; the heading path is the chain of enclosing headings.
Each section's span covers its body (the lines after its heading up to the next heading).
"""

from __future__ import annotations

import re

from core.types import Section

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")


def _strip_inline(title: str) -> str:
    return re.sub(r"[*_`]+", "", title).strip()


def markdown_sections(text: str, *, root: tuple[str, ...] = ()) -> tuple[Section, ...]:
    """Return body spans under each heading; text before the first heading gets path ``root``.

    Sections whose body is only whitespace are dropped. Spans are trimmed of surrounding
    whitespace so that ``text[s.start:s.end]`` is the body as written.
    """
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []  # (level, title)
    path: tuple[str, ...] = root
    body_start = 0
    in_fence = False
    offset = 0

    def close(end: int) -> None:
        start, stop = body_start, end
        while start < stop and text[start].isspace():
            start += 1
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        if stop > start:
            sections.append(Section(path=path, start=start, end=stop))

    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if _FENCE.match(stripped):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(stripped)
        if match:
            close(offset)
            level, title = len(match.group(1)), _strip_inline(match.group(2))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path = root + tuple(t for _, t in stack)
            body_start = offset + len(line)
        offset += len(line)
    close(len(text))
    return tuple(sections)


def first_heading(text: str) -> str | None:
    """The first heading's title, used as a document title when none is given."""
    for line in text.splitlines():
        match = _HEADING.match(line.strip())
        if match:
            return _strip_inline(match.group(2))
    return None
