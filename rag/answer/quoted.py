"""The first answerer: the kept passages' own lines, word for word, when one surely answers.

A line judge (``[quote] judge``: the quote model, ``rag/reading/quote_model.py``, or the line
reader, ``rag/reading/reader.py``) gives every quotable line of the kept passages its
P(answers); when the best reaches ``[quote] threshold`` the answer is the ``[quote] sentences``
best lines (with ``[quote] one_guideline``, the later ones only from the best line's guideline:
its document title), each cited to its exact span, and nothing is generated. Otherwise the turn
goes on, carrying the scored lines, which the closest lines of a non-answer reuse.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from core.errors import ModelError
from core.types import Answer
from rag.answer.outcomes import lines_reply, said
from rag.reading.quote_model import LineJudge, best_lines
from rag.turn import Turn


class QuotedAnswerer:
    """Answers with quoted lines (module docstring); ``judge``: what gives each line its
    P(answers) (None: never quotes); ``threshold``: the P the best line needs; ``count``: how
    many lines an answer shows, at most."""

    def __init__(
        self,
        judge: LineJudge | None,
        threshold: float | None,
        count: int,
        stop: Sequence[str],
        one_guideline: bool = False,
    ) -> None:
        self.judge, self.threshold, self.count, self.stop = judge, threshold, count, tuple(stop)
        self.one_guideline = one_guideline

    def reply(self, turn: Turn) -> Iterator[str | Answer] | None:
        answer = self.answer(turn)
        return None if answer is None else said(answer)

    def answer(self, turn: Turn) -> Answer | None:
        """The quoted answer, or None to pass the turn on: a question naming no subject, no
        confident line, a failing relevance model (noted), or a quote holding one of the
        client's ``stop`` sequences (a generated answer ends before it)."""
        if self.threshold is None or self.judge is None or not turn.found.kept:
            return None
        if not turn.read.terms:  # no subject: no line can be confirmed to be about it
            turn.why.append("the question names no subject (a drug, disease or test) to quote an answer on")
            return None
        try:
            with turn.clock.stage("quote"):
                turn.lines = self.judge.lines(turn.read, turn.found.kept)
        except ModelError as exc:
            turn.found.notes.append(f"quoting unavailable ({exc}); the answer was generated instead")
            return None
        ranked = best_lines(turn.lines, self.judge.model, len(turn.lines.lines))
        if not ranked or ranked[0].probability < self.threshold:
            return None
        best, later = ranked[0], ranked[1:]
        if self.one_guideline:  # a line for another indication never stands beside the answer
            later = [line for line in later if line.hit.chunk.title == best.hit.chunk.title]
        lines = [best, *later][: self.count]
        answer = lines_reply(turn, lines, turn.found.kept, confirmed=True, scored=turn.lines)
        if any(stop in answer.text for stop in self.stop):
            return None
        return answer
