"""The three things medcite can say about a question, as ``Answer``s.

- **answer**: a confirmed answer (``mode="rag"``): lines quoted word for word when the quote model
  is confident one answers, else a generated answer whose sentences passed the support gate;
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
from collections.abc import Sequence

from core.types import Answer, Citation, Hit, SentenceSupport
from rag.check.conditions import Verdict
from rag.check.quotes import Quote, shown_text

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


def scored(quote: Quote) -> bool:
    """Whether a model scored the line (a whole passage nobody scored has probability NaN)."""
    return not math.isnan(quote.probability)


def line_text(quote: Quote) -> str:
    """What a quoted or closest line shows: the line as the condition reader read it, markers of
    the source's own made inert; for a whole passage nobody scored (probability NaN), where it
    stands (title and section), not its text, which may hold anything."""
    if not scored(quote):
        chunk = quote.hit.chunk
        return " › ".join(part for part in (chunk.title, *chunk.section[-1:]) if part)
    return _MARKER_LIKE.sub(r"(\1)", shown_text(quote))


def _fit_reason(fit: Verdict) -> tuple[str, ...]:
    return (f"stated for the patient asked about: {', '.join(fit.matched)}",) if fit.state == "fits" else ()


def quoted_answer(
    question: str,
    quotes: Sequence[Quote],
    evidence: Sequence[Hit],
    timings: dict[str, float],
    usage: dict[str, int],
    notes: Sequence[str],
) -> Answer:
    """An answer made of ``quotes``, best first, one line each, cited ``[n]`` to the evidence
    passage it comes from; each citation spans exactly the quoted sentence."""
    lines, supports = [], []
    for quote in quotes:
        text = line_text(quote)
        lines.append(f"- {text} [{quote.source}]")
        supports.append(
            SentenceSupport(
                text=text,
                markers=(quote.source,),
                support=1.0,  # a sentence of its passage, word for word
                supported=True,
                reasons=(
                    f"quoted; P(answers the question) = {quote.probability:.2f}",
                    *_fit_reason(quote.fit),
                ),
                probability=quote.probability,
            )
        )
    return Answer(
        question=question,
        text=ANSWER_LEAD + "\n" + "\n".join(lines),
        mode="rag",
        citations=_citations(quotes, 1.0),
        sentences=tuple(supports),
        evidence=tuple(evidence),
        timings=timings,
        usage=usage,
        notes=(*notes, QUOTED_NOTE),
    )


def why_not(quote: Quote) -> str:
    """Why a closest line is not the answer, in words for people."""
    if quote.fit.state == "conflicts":
        return "not for this patient: " + "; ".join(quote.fit.reasons)
    return "not confirmed"


def closest_answer(
    question: str,
    quotes: Sequence[Quote],
    evidence: Sequence[Hit],
    timings: dict[str, float],
    usage: dict[str, int],
    notes: Sequence[str],
    removed: Sequence[SentenceSupport] = (),
) -> Answer:
    """The closest lines: ``quotes`` (best first) each cited to its span with its probability
    and why it is not the answer. ``removed``: generated sentences the gate left out, kept on the
    record (never in the text)."""
    lines, records = [], []
    for quote in quotes:
        text = line_text(quote)
        likely = f"{quote.probability:.0%} likely to answer" if scored(quote) else "not scored"
        lines.append(f"- {text} [{quote.source}] ({likely}; {why_not(quote)})")
        records.append(
            SentenceSupport(
                text=text,
                markers=(quote.source,),
                support=0.0,  # the passage's own words, but not confirmed to answer
                supported=False,
                status="closest",
                reasons=(likely, why_not(quote)),
                probability=quote.probability if scored(quote) else None,
            )
        )
    return Answer(
        question=question,
        text=CLOSEST_LEAD + "\n" + "\n".join(lines),
        mode="abstained",
        citations=_citations(quotes, None),
        sentences=(*removed, *records),
        evidence=tuple(evidence),
        timings=timings,
        usage=usage,
        notes=(*notes, CLOSEST_NOTE),
    )


def nothing_relevant(
    question: str,
    evidence: Sequence[Hit],
    timings: dict[str, float],
    usage: dict[str, int],
    notes: Sequence[str],
    removed: Sequence[SentenceSupport] = (),
) -> Answer:
    """Nothing in the sources is about the question; ``evidence`` lists what was read anyway."""
    return Answer(
        question=question,
        text=NOTHING_RELEVANT,
        mode="abstained",
        sentences=tuple(removed),
        evidence=tuple(evidence),
        timings=timings,
        usage=usage,
        notes=tuple(notes),
    )


def _citations(quotes: Sequence[Quote], support: float | None) -> tuple[Citation, ...]:
    """Each quote's citation, spanning exactly its line (``support``: 1.0 for a quoted answer's
    own words; None for a closest line, which is not verified as an answer)."""
    return tuple(Citation.from_chunk(q.source, q.hit.chunk, support) for q in quotes)
