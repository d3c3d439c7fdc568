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

import math
import re
from collections.abc import Iterator, Sequence

from core.types import Answer, Citation, Hit, SentenceSupport
from rag.reading.lines import Line, shown_text
from rag.turn import Turn

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


def scored(line: Line) -> bool:
    """Whether a model scored the line (a whole passage nobody scored has probability NaN)."""
    return not math.isnan(line.probability)


def line_text(line: Line) -> str:
    """What a quoted or closest line shows: the line as the condition reader read it, markers of
    the source's own made inert; for a whole passage nobody scored (probability NaN), where it
    stands (title and section), not its text, which may hold anything."""
    if not scored(line):
        chunk = line.hit.chunk
        return " › ".join(part for part in (chunk.title, *chunk.section[-1:]) if part)
    return _MARKER_LIKE.sub(r"(\1)", shown_text(line))


def why_not(line: Line) -> str:
    """Why a closest line is not the answer, in words for people."""
    if line.fit.state == "conflicts":
        return "not for this patient: " + "; ".join(line.fit.reasons)
    return "not confirmed"


def _reasons(line: Line, confirmed: bool) -> tuple[str, ...]:
    if not confirmed:
        return (f"{line.probability:.0%} likely to answer" if scored(line) else "not scored", why_not(line))
    fit = (
        (f"stated for the patient asked about: {', '.join(line.fit.matched)}",)
        if line.fit.state == "fits"
        else ()
    )
    return (f"quoted; P(answers the question) = {line.probability:.2f}", *fit)


def lines_reply(
    turn: Turn,
    lines: Sequence[Line],
    evidence: Sequence[Hit],
    *,
    confirmed: bool,
    notes: Sequence[str] = (),
    removed: Sequence[SentenceSupport] = (),
) -> Answer:
    """``lines`` (best first), one each, cited ``[n]`` to the passage it comes from, each citation
    spanning exactly its line: a quoted answer (``confirmed``) or the closest lines, each with its
    probability and why it is not the answer. ``removed``: generated sentences the gate left out,
    kept on the record (never in the text)."""
    rows, records = [], []
    for line in lines:
        text, reasons = line_text(line), _reasons(line, confirmed)
        rows.append(f"- {text} [{line.source}]" + ("" if confirmed else f" ({'; '.join(reasons)})"))
        records.append(
            SentenceSupport(
                text=text,
                markers=(line.source,),
                support=1.0 if confirmed else 0.0,  # the passage's own words; a closest line unconfirmed
                supported=confirmed,
                status="shown" if confirmed else "closest",
                reasons=reasons,
                probability=line.probability if scored(line) else None,
            )
        )
    lead, note = (ANSWER_LEAD, QUOTED_NOTE) if confirmed else (CLOSEST_LEAD, CLOSEST_NOTE)
    return Answer(
        question=turn.question,
        text=lead + "\n" + "\n".join(rows),
        mode="rag" if confirmed else "abstained",
        citations=tuple(
            Citation.from_chunk(q.source, q.hit.chunk, 1.0 if confirmed else None) for q in lines
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
