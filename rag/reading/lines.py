"""The lines of a passage as medcite quotes them: which can stand alone, what each hangs from.

A guideline's answer is usually one line: a sentence, a list item, a table row, a flowchart
step. A line that begins where its chunk was cut mid-word or mid-sentence (chunks overlap) is not
quotable, nor is a table's header row. A list item is shown after the line it hangs from
("Bivalirudin (Class I, LOE: B): Bolus: 0.75 mg/kg IV ..."), a table row under its header's
names, a flowchart step after the step above it, so a dose never loses the drug or the band it
belongs to; the citation spans the line itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.types import Chunk, Hit
from rag.generate.sentences import sentence_spans
from rag.reading.conditions import SILENT, Verdict
from rag.reading.plain_text import plain_text
from rag.rerank.evidence import heading
from rag.rerank.sentences import headed


@dataclass(frozen=True)
class Line:
    """One line of a passage: ``hit`` narrowed to its span (same chunk_id, document offsets
    moved, so a citation resolves to exactly this line), ``source`` the 1-based number of the
    passage among those read, and the probability that it answers the question."""

    hit: Hit
    source: int
    probability: float
    lead: str = ""  # the line a list item hangs from, or a table row's header (raw Markdown)
    fit: Verdict = SILENT  # the condition reader's judgement of the line's patient


_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _table_header(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a Markdown table's header row (the next line separates)."""
    if not text[start:end].lstrip().startswith("|"):
        return False
    rest = text[end:].lstrip("\n").split("\n", 1)[0]
    return bool(_SEPARATOR_ROW.match(rest))


_CONTINUES = frozenset(",.;:)]}%")  # a sentence does not begin with these

# A corpus line advertising a tool or service ("**OpenMedicine Calculator:** `calculate_qsofa` -
# available via MCP for ...") says where to compute an answer, never the answer itself.
_ADVERT = re.compile(r"\bavailable (?:via|through) (?:MCP|an? API)\b", re.IGNORECASE)


def advert(sentence: str) -> bool:
    """Whether ``sentence`` advertises a tool or service rather than stating medicine."""
    return bool(_ADVERT.search(sentence))


def quotable(chunk: Chunk) -> list[tuple[int, int]]:
    """Sentence spans of ``chunk`` that can stand as a quote: not a first one that starts
    mid-sentence (chunks overlap, so one may be cut: a lowercase letter or the punctuation that
    follows a word, ", pantoprazole 40 mg"), not a table's header row, not a tool's advert, and
    with words."""
    text = chunk.text
    spans = sentence_spans(text) or [(0, len(text))]
    first = text[spans[0][0] : spans[0][0] + 1]
    if chunk.start > 0 and (first.islower() or first in _CONTINUES):
        spans = spans[1:]
    return [
        (s, e)
        for s, e in spans
        if any(ch.isalpha() for ch in text[s:e]) and not _table_header(text, s, e) and not advert(text[s:e])
    ]


_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_BRANCH = re.compile(r"^\s*(?:-+>|→|=>)\s*")  # a flowchart's step: "  --> K+ < 3.5 mmol/L?"
LEAD_CHARS = 200  # a longer line above a list is prose, not its lead-in


def _branch_head(line: str, above: list[str], cut: bool) -> str:
    """The step a flowchart line hangs from: the nearest line above indented less."""
    indent = len(line) - len(line.lstrip())
    for i in range(len(above) - 1, -1, -1):
        candidate = above[i]
        if candidate.strip() and len(candidate) - len(candidate.lstrip()) < indent:
            too_long = len(candidate.strip()) > LEAD_CHARS
            return "" if (cut and i == 0) or too_long else candidate.strip()
    return ""


def lead_in(text: str, start: int, cut: bool) -> str:
    """What the sentence at ``text[start:]`` hangs from, when it is a list item, a table row or a
    flowchart step: the nearest line above that is not an item of the list ("**Bivalirudin**
    (Class I):" above "- Bolus: 0.75 mg/kg IV") or, for a nested item, its parent item ("- Dose
    reduction: 15 mg" under "- Rivaroxaban: 20 mg"), the table's header and separator rows, or the
    step indented less ("--> K+ < 3.5 mmol/L?" above "--> Replace at 10 mmol/hour IV"), whose
    condition then stands with the line. Empty for prose, and
    when the line is not in ``text`` (``cut``: the chunk starts mid-document, so its first line
    may be the end of something else)."""
    line_start = text.rfind("\n", 0, start) + 1
    line = text[line_start:].split("\n", 1)[0]
    above = text[:line_start].split("\n")[:-1]
    if _BRANCH.match(line):
        return _branch_head(line, above, cut)
    if line.lstrip().startswith("|"):
        for i in range(len(above) - 1, 0, -1):
            if _SEPARATOR_ROW.match(above[i]):
                return "" if cut and i - 1 == 0 else f"{above[i - 1]}\n{above[i]}"
        return ""
    if not _LIST_ITEM.match(line):
        return ""
    if line[:1].isspace():  # a nested item hangs from its parent item: "- **Rivaroxaban:** ..."
        parent = _branch_head(line, above, cut)
        if _LIST_ITEM.match(parent):
            return parent
    for i in range(len(above) - 1, -1, -1):
        candidate = above[i]
        if not candidate.strip() or _LIST_ITEM.match(candidate) or candidate[:1].isspace():
            continue
        if (cut and i == 0) or len(candidate) > LEAD_CHARS or candidate.lstrip().startswith("|"):
            return ""
        return candidate.strip()
    return ""


_INLINE_ITEM = re.compile(r"\s*\d{1,2}[.)]\s")  # "criteria: 1. Respiratory rate >= 22; 2. ..."


def announced(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Where the list or table that the line ``text[start:end]`` announces stands in ``text``
    (it ends with ":" and list items or table rows follow it, on its own line or the next ones),
    as a span of ``text``; None when it announces nothing ("at least two of the following
    three clinical parameters:" then "1. Respiratory Rate: >= 22 breaths per minute" ...)."""
    if not plain_text(text[start:end]).rstrip().endswith(":"):
        return None
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    inline = bool(_INLINE_ITEM.match(text, end, line_end))
    if text[end:line_end].strip() and not inline:
        return None
    last, pos = line_end if inline else end, line_end + 1
    while pos <= len(text):
        stop = text.find("\n", pos)
        stop = len(text) if stop < 0 else stop
        line = text[pos:stop]
        if line.strip() and not (
            _LIST_ITEM.match(line) or line.lstrip().startswith("|") or line[:1].isspace()
        ):
            break
        if not line.strip() and last == end:  # blank lines between the lead-in and its list
            pos = stop + 1
            continue
        if not line.strip():
            break
        last, pos = stop, stop + 1
    return (end, last) if last > end else None


_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![*\w])")  # "*Dose reduction:*"


def _one_line(markdown: str) -> str:
    """``plain_text`` on one line, single-asterisk emphasis dropped too: what is shown and scored
    for its key fact (the models read the raw line, ``line_context``)."""
    return " ".join(_ITALIC.sub(r"\1", plain_text(markdown)).split())


def line_words(line: Line) -> str:
    """The line as one plain line: its lead-in then the sentence, or a table row under its
    header's names ("Drug: fluticasone; Low: 100-250"); the source's own words either way."""
    sentence = line.hit.chunk.text
    if "\n" in line.lead:  # a table's header and separator rows
        return " ".join(plain_text(f"{line.lead}\n{sentence}").split())
    text = _one_line(sentence).lstrip("-*>• ").strip()
    if not line.lead:
        return text
    lead = _one_line(line.lead).lstrip("-=>→ ")
    return f"{lead} {text}" if lead.endswith((":", "?", ".")) else f"{lead}: {text}"


def shown_text(line: Line) -> str:
    """:func:`line_words`, after the heading that states the condition selecting the line when
    only a heading states it ("Elderly (>= 75 years): Enoxaparin: reduced dose ...")."""
    text = line_words(line)
    section = line.hit.chunk.section
    named = " ".join(plain_text(section[-1]).split()) if section else ""
    if line.fit.from_heading and named and not text.startswith(named):
        return f"{named}: {text}"
    return text


def distinct(lines: Sequence[Line], count: int) -> list[Line]:
    """The first ``count`` of ``lines`` with each document span once (chunks overlap) and each
    line as shown once (two branches of a flowchart may share a step)."""
    chosen: list[Line] = []
    seen: set[object] = set()
    for line in lines:
        chunk = line.hit.chunk
        keys = ((chunk.doc_id, chunk.start, chunk.end), shown_text(line))
        if not any(key in seen for key in keys):
            seen.update(keys)
            chosen.append(line)
        if len(chosen) == count:
            break
    return chosen


def line_context(chunk: Chunk, start: int, end: int, lead: str) -> str:
    """What a model reads of the line ``chunk.text[start:end]``: the passage's headings (title >
    section path), the line it hangs from (a list's lead-in, a table's header), then the line."""
    if not lead:
        return headed(chunk, start, end)
    return f"{heading(chunk)}\n{lead}\n{chunk.text[start:end]}"
