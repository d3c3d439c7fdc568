"""Sentence segmentation for answers and passages: pure, never raises, keeps markers attached.

Used twice: to cut a generated answer into the sentences whose markers are checked, and to cut
a guideline passage (Markdown with bullets and headings) into units an embedder compares one
by one. Rules, in order:

- a line starting with a bullet, a list number (``1.``, ``2)``), a heading ``#`` or a quote
  ``>`` starts a new sentence, and that prefix is not part of it (a list number is not a claim);
- a blank line ends a sentence; a line starting with a lower-case word continues the previous
  one (hard-wrapped text);
- a list number inside a line, after a colon or semicolon (``criteria: 1. Respiratory rate
  >= 22; 2. Altered mentation``), starts a new sentence, and the text before it ends one;
- inside a line, ``. ! ? …`` followed by space and a word that does not start in lower case
  (or is a term like "qSOFA", "eGFR", "pH") ends a sentence, except after a known
  abbreviation (``e.g.``, ``i.e.``, ``vs.``, ``Dr.``, ``approx.``) or a dotted acronym
  (``U.S.``); ``2.5 mg`` never splits because no space follows the dot;
- markers after the stop (``risk. [1]``) or before it (``risk [1].``) belong to the sentence;
  a run of markers followed by a capital also ends a sentence (a model that forgot the stop);
  a line holding only markers joins the sentence before it.
"""

from __future__ import annotations

import re

_MARKERISH = r"[\[【［][ \t]*(?:[A-Za-z]+\.?[ \t]*:?[ \t]*)?[#^]?[0-9０-９][0-9０-９ \t,;\-–—]*[\]】］]"
_TERMINAL = re.compile(rf"[.!?…]+[\"'”’»)]*(?:[ \t]*{_MARKERISH})*|(?:[ \t]*{_MARKERISH})+")
_ONLY_MARKERS = re.compile(rf"(?:[ \t]*{_MARKERISH})+[ \t]*[.!?]?")
_PREFIX = re.compile(r"[ \t]*(?:(?:[-*+•‣◦▪·][ \t]+|\d{1,3}[.)][ \t]+|#{1,6}[ \t]+|>[ \t]*)[ \t]*)+")
_TOKEN_BEFORE = re.compile(r"[^\s(\[\"'“‘]+$")
_ACRONYM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_INLINE_NUMBER = re.compile(r"[:;][ \t]*(\d{1,2})$")  # a list number inside a line, after ":" or ";"
_WORD = re.compile(r"\w")
_NORMALISED_MARKER = re.compile(r"[ \t]*\[[0-9]+\](?!\()")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")

# Words whose dot does not end a sentence (compared in lower case, without the final dot). Not
# "etc" or "min" (they often do end one) and no single letters ("vitamin D." ends one more often
# than an initial starts a name).
ABBREVIATIONS = frozenset(
    "e.g eg i.e ie vs cf ca approx appr resp incl esp viz al fig figs ref refs vol pp eq dr drs prof "
    "mr mrs ms sr jr dept univ".split()
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence in ``text``; see the module docstring for the rules."""
    spans: list[tuple[int, int]] = []
    for start, end in _blocks(text):
        spans.extend(_split_block(text, start, end))
    return _attach_marker_lines(text, spans)


def marker_free(sentence: str) -> str:
    """``sentence`` without its ``[n]`` markers, spacing before punctuation tidied."""
    bare = _NORMALISED_MARKER.sub("", sentence)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", bare).strip()


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans of list items, headings and paragraphs (wrapped lines joined), prefixes cut off."""
    blocks: list[list[int]] = []
    after_blank = True
    line_start = 0
    while line_start <= len(text):
        line_end = text.find("\n", line_start)
        line_end = len(text) if line_end == -1 else line_end
        prefix = _PREFIX.match(text, line_start, line_end)
        content = prefix.end() if prefix else line_start
        while content < line_end and text[content].isspace():
            content += 1
        if content >= line_end:
            after_blank = True
        elif blocks and not after_blank and not prefix and _continues(text, content, line_end):
            blocks[-1][1] = line_end
        else:
            blocks.append([content, line_end])
            after_blank = False
        line_start = line_end + 1
    return [(s, e) for s, e in blocks]


def _split_block(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    sentence_start = start
    for match in _TERMINAL.finditer(text, start, end):
        after = match.end()
        gap = after
        while gap < end and text[gap].isspace():
            gap += 1
        if gap >= end or gap == after or _continues(text, gap, end):
            continue  # no space after (2.5, U.S.A), lower case next, or the block ends anyway
        stop = match.group(0).lstrip(" \t")
        if stop.startswith("."):
            enumerator = _INLINE_NUMBER.search(text, sentence_start, match.start())
            if enumerator is not None:  # "...: 1. Respiratory rate; 2. Altered mentation"
                if enumerator.start(1) > sentence_start:
                    spans.append((sentence_start, enumerator.start(1)))
                sentence_start = enumerator.start(1)
                continue
            if _is_abbreviation(text, sentence_start, match.start()):
                continue
        elif not stop.startswith(("!", "?", "…")) and not text[gap].isupper():
            continue  # markers without a stop end a sentence only before a capital
        spans.append((sentence_start, after))
        sentence_start = gap
    spans.append((sentence_start, end))
    return [span for span in (_trim(text, s, e) for s, e in spans) if span is not None]


def _continues(text: str, start: int, end: int) -> bool:
    """Whether the word at ``start`` continues a sentence: it starts in lower case and is not a
    lower-case-initial term such as "qSOFA", "eGFR" or "pH", which may well start one."""
    if not text[start].islower():
        return False
    stop, end = start, min(end, start + 40)
    while stop < end and not text[stop].isspace():
        stop += 1
    return not any(ch.isupper() for ch in text[start:stop])


def _is_abbreviation(text: str, sentence_start: int, dot: int) -> bool:
    token = _TOKEN_BEFORE.search(text, max(sentence_start, dot - 40), dot)
    if token is None:
        return False
    word = token.group(0)
    return word.lower() in ABBREVIATIONS or bool(_ACRONYM.fullmatch(word))


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if _WORD.search(text, start, end) else None


def _attach_marker_lines(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and _ONLY_MARKERS.fullmatch(text, start, end):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
