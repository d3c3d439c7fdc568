"""The three things medcite can say about a question, as ``Answer``s.

- **answer**: a confirmed answer (``mode="rag"``): lines quoted word for word when the quote model
  is confident one answers (:func:`lines_reply` with ``confirmed``), else a generated answer
  whose sentences passed the support gate (``rag/answer/generated.py``);
- **closest lines** (``mode="abstained"``, with citations): passages about the question were
  found but no line is confirmed; the lines most likely to answer, each cited to its exact span
  with its probability and, when the condition reader finds it stated for another patient, why;
  never worded as a recommendation and nothing generated;
- **nothing relevant** (``mode="abstained"``, no citation): no passage is about the question.

``Answer.outcome`` names them; ``mode`` keeps its meaning for clients that read it ("abstained":
not an answer). The texts are what every interface shows (CLI, API, chat page).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from core.types import Answer, Citation, Hit, LineScore, SentenceSupport
from rag.reading.lines import Line, announced, line_words, shown_text
from rag.turn import Turn

if TYPE_CHECKING:
    from rag.reading.quote_model import LineModel, ScoredLines

ANSWER_LEAD = "The sources say:"
CLOSEST_LEAD = "medcite could not confirm an answer in the sources. The closest lines:"
NOTHING_RELEVANT = "Nothing in the indexed sources is about this question."
QUOTED_NOTE = "Quoted word for word from the sources; each line is cited to the exact passage it comes from."
CLOSEST_NOTE = (
    "Not an answer: no line of the sources could be confirmed to answer the question. Read the "
    "cited passages before acting on any of these lines."
)


# a source's own "[2]" or "[1-3]" would read as one of medcite's citation markers (and a chat page
# would turn it into a button to another passage): shown as "(2)"
_MARKER_LIKE = re.compile(r"\[(\d+(?:\s*[-,–]\s*\d+)*)\]")


def said(answer: Answer) -> Iterator[str | Answer]:
    """A reply decided before anything was sent: its whole text, then the answer."""
    yield answer.text
    yield answer


def scored_line(line: Line) -> bool:
    """Whether a model scored the line (a whole passage nobody scored has probability NaN)."""
    return not math.isnan(line.probability)


def line_text(line: Line) -> str:
    """What a quoted or closest line shows: the line as the condition reader read it, markers of
    the source's own made inert; for a whole passage nobody scored (probability NaN), where it
    stands (title and section), not its text, which may hold anything."""
    if not scored_line(line):
        chunk = line.hit.chunk
        return " › ".join(part for part in (chunk.title, *chunk.section[-1:]) if part)
    return _MARKER_LIKE.sub(r"(\1)", shown_text(line))


ITEM_REASON = "an item of the list its lead-in announces"


def item_text(line: Line) -> str:
    """An item shown under its lead-in: the item alone, or a table row under its header's names."""
    return _MARKER_LIKE.sub(
        r"(\1)", line_words(line) if "\n" in line.lead else line_words(dataclasses.replace(line, lead=""))
    )


def why_not(line: Line) -> str:
    """Why a closest line is not the answer, in words for people."""
    if line.fit.state == "conflicts":
        return "not for this patient: " + "; ".join(line.fit.reasons)
    return "not confirmed"


def _reasons(line: Line, confirmed: bool) -> tuple[str, ...]:
    if not confirmed:
        return (
            f"{line.probability:.0%} likely to answer" if scored_line(line) else "not scored",
            why_not(line),
        )
    fit = (
        (f"stated for the patient asked about: {', '.join(line.fit.matched)}",)
        if line.fit.state == "fits"
        else ()
    )
    return (f"quoted; P(answers the question) = {line.probability:.2f}", *fit)


LIST_ITEMS = 12  # a lead-in shows at most this many of its items


def with_items(
    lines: Sequence[Line], scored: ScoredLines | None, evidence: Sequence[Hit]
) -> list[list[Line]]:
    """Each of ``lines`` with the items it announces (a lead-in ending with ":" above a list or
    table in its passage): the scored lines of that list, in document order, those the condition
    reader finds stated for another patient left out; an item is shown once, under its lead-in."""
    groups: list[list[Line]] = []
    for line in lines:
        groups.append([line, *_items(line, scored, evidence)])
    under = {_span(item) for group in groups for item in group[1:]}
    return [group for group in groups if _span(group[0]) not in under]


def _span(line: Line) -> tuple[str, int, int]:
    chunk = line.hit.chunk
    return chunk.chunk_id, chunk.start, chunk.end


def _items(line: Line, scored: ScoredLines | None, evidence: Sequence[Hit]) -> list[Line]:
    if scored is None or not scored.lines or not 1 <= line.source <= len(evidence):
        return []
    passage = evidence[line.source - 1].chunk
    start = line.hit.chunk.start - passage.start
    region = announced(passage.text, start, start + len(line.hit.chunk.text))
    if region is None:
        return []
    lo, hi = passage.start + region[0], passage.start + region[1]
    items = [
        item
        for item in scored.lines
        if item.source == line.source
        and item.hit.chunk.chunk_id == passage.chunk_id
        and lo <= item.hit.chunk.start < hi
    ]
    return sorted(items, key=lambda item: item.hit.chunk.start)[:LIST_ITEMS]


def _reading_order(groups: list[list[Line]], evidence: Sequence[Hit]) -> tuple[dict[int, int], list[Hit]]:
    """Markers numbered in reading order: the first passage cited is [1]. The passages read are
    reordered to match (the cited ones first, as numbered), so ``evidence[n - 1]`` is still the
    passage ``[n]`` cites."""
    order = list(dict.fromkeys(line.source for group in groups for line in group))
    renumber = {old: new for new, old in enumerate(order, start=1)}
    cited = [evidence[old - 1] for old in order if 1 <= old <= len(evidence)]
    rest = [hit for n, hit in enumerate(evidence, start=1) if n not in renumber]
    return renumber, cited + rest if len(cited) == len(order) else list(evidence)


def lines_reply(
    turn: Turn,
    lines: Sequence[Line],
    evidence: Sequence[Hit],
    *,
    confirmed: bool,
    scored: ScoredLines | None = None,
    notes: Sequence[str] = (),
    removed: Sequence[SentenceSupport] = (),
) -> Answer:
    """``lines`` (best first), one each, cited ``[n]`` to the passage it comes from, each citation
    spanning exactly its line, a lead-in with the items it announces (from ``scored``) beneath
    it: a quoted answer (``confirmed``) or the closest lines, each with its probability and why
    it is not the answer. ``removed``: generated sentences the gate left out, kept on the record
    (never in the text)."""
    groups = with_items(lines, scored, evidence)
    renumber, evidence = _reading_order(groups, evidence)
    rows, records, cited = [], [], []
    for group in groups:
        for depth, line in enumerate(group):
            line = dataclasses.replace(line, source=renumber.get(line.source, line.source))
            text = line_text(line) if depth == 0 else item_text(line)
            reasons = _reasons(line, confirmed) if depth == 0 else (ITEM_REASON,)
            shown = f"- {text} [{line.source}]" + ("" if confirmed or depth else f" ({'; '.join(reasons)})")
            rows.append(("  " if depth else "") + shown)
            records.append(
                SentenceSupport(
                    text=text,
                    markers=(line.source,),
                    support=1.0 if confirmed else 0.0,  # the passage's own words; a closest line unconfirmed
                    supported=confirmed,
                    status="shown" if confirmed else "closest",
                    reasons=reasons,
                    probability=line.probability if scored_line(line) and not depth else None,
                )
            )
            cited.append(line)
    lead, note = (ANSWER_LEAD, QUOTED_NOTE) if confirmed else (CLOSEST_LEAD, CLOSEST_NOTE)
    return Answer(
        question=turn.question,
        text=lead + "\n" + "\n".join(rows),
        mode="rag" if confirmed else "abstained",
        citations=tuple(
            Citation.from_chunk(q.source, q.hit.chunk, 1.0 if confirmed else None) for q in cited
        ),
        sentences=(*removed, *records),
        evidence=tuple(evidence),
        timings=turn.clock.timings,
        usage=turn.found.usage,
        notes=(*turn.found.notes, *notes, note),
    )


def nothing_relevant(
    turn: Turn, notes: Sequence[str] = (), removed: Sequence[SentenceSupport] = ()
) -> Answer:
    """Nothing in the sources is about the question; the kept passages are listed anyway."""
    return Answer(
        question=turn.question,
        text=NOTHING_RELEVANT,
        mode="abstained",
        sentences=tuple(removed),
        evidence=tuple(turn.found.kept),
        timings=turn.clock.timings,
        usage=turn.found.usage,
        notes=(*turn.found.notes, *notes),
    )


LINES_READ = 10  # how many of the best scored lines an answer's record lists


def with_reading(answer: Answer, turn: Turn, model: LineModel | None) -> Answer:
    """``answer`` with what was read on its record, whatever the outcome: every passage the
    relevance model scored (kept or not, best first) and the best lines the line judge scored,
    each with its P(answers)."""
    read = tuple(sorted([*turn.found.kept, *turn.found.dropped], key=lambda hit: -hit.score))
    scored: list[LineScore] = []
    found = turn.lines
    if found is not None and model is not None:
        for lines, rows, other in (
            (found.lines, found.features, False),
            (found.conflicting, found.conflicting_features, True),
        ):
            if lines and rows is not None:
                for line, p in zip(lines, model.probabilities(rows), strict=True):
                    chunk = line.hit.chunk
                    scored.append(
                        LineScore(chunk.chunk_id, chunk.start, chunk.end, line_words(line), float(p), other)
                    )
    best = sorted(scored, key=lambda line: -line.probability)[:LINES_READ]
    return dataclasses.replace(answer, read=read, lines_read=tuple(best))
