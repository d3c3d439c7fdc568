"""What is said when no answerer answers: the closest lines, or "nothing relevant".

The closest lines are the lines most likely to answer, shown as not confirmed, when the best
reaches ``[quote] closest_floor``; they come from the line judge's lines of the kept passages,
or with ``[quote] closest_pool_threshold`` from a wider pool of the candidates (scored once, now
that no line is confirmed). Without scored lines the kept passages are the closest, whole: when
the quote checks barred every line (the relevance model still kept the passages), or with no
quote model unless none is about the question. Each closest line comes from a passage about the
question (``[quote] closest_about``: the aboutness check, ``rag/reading/aboutness.py``), so a
question about nothing in the sources ("What is the capital of France?") is told nothing relevant.
Otherwise: nothing relevant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.errors import ModelError
from core.types import Answer, Hit, SentenceSupport
from rag.answer.outcomes import lines_reply, nothing_relevant
from rag.profile import VerifyConfig
from rag.reading.aboutness import missing
from rag.reading.lines import Line
from rag.reading.question import ReadQuestion
from rag.reading.quote_model import LineJudge, ScoredLines, closest_lines
from rag.reading.terms import chunk_stems, coverage
from rag.turn import Turn


class NonAnswer:
    """Says the closest lines or nothing relevant for a turn no answerer answered; ``judge``:
    what gave the lines their P(answers) (None: none was scored), ``floor``: the P the best
    closest line needs, ``pool``: (P(relevant) floor, how many) of a wider pool of candidates."""

    def __init__(
        self,
        judge: LineJudge | None,
        floor: float,
        count: int,
        pool: tuple[float, int] | None,
        stop: Sequence[str],
        about: VerifyConfig | None = None,
        min_coverage: float = 0.0,
    ) -> None:
        self.judge, self.floor, self.count, self.pool, self.stop = judge, floor, count, pool, tuple(stop)
        self.about, self.min_coverage = about, min_coverage

    def reply(self, turn: Turn, removed: Sequence[SentenceSupport] = ()) -> Answer:
        """The closest lines or nothing relevant (module docstring), noting ``turn.why``;
        ``removed``: what the gate did with a generation, kept on the record."""
        found, count, why = turn.found, self.count, turn.why
        removed = tuple(s for s in removed if s.status == "removed")
        pool, scored = self._closest_pool(turn)
        if scored is not None and self.judge is not None and (scored.lines or scored.conflicting):
            every = closest_lines(scored, self.judge.model, len(scored.lines) + len(scored.conflicting))
            lines = self._about(turn, every, pool)[:count]
            if lines and lines[0].probability >= self.floor:
                return self._cut(
                    lines_reply(turn, lines, pool, confirmed=False, scored=scored, notes=why, removed=removed)
                )
        elif found.kept and (turn.lines is not None or not turn.off_topic):  # unscored: passages whole
            whole = [Line(hit, n, float("nan")) for n, hit in enumerate(found.kept, start=1)]
            if whole := self._about(turn, whole, found.kept)[:count]:
                return self._cut(
                    lines_reply(turn, whole, found.kept, confirmed=False, notes=why, removed=removed)
                )
        return nothing_relevant(turn, why, removed)

    def _about(self, turn: Turn, lines: list[Line], passages: Sequence[Hit]) -> list[Line]:
        """The lines whose passage is about the question (``[quote] closest_about``); when none is, why
        on the turn."""
        kept, lacking = about_lines(turn, lines, passages, self.about, self.min_coverage)
        if lines and not kept:
            turn.why.append(f"no passage read is about the question (none has: {'; '.join(lacking)})")
        return kept

    def _closest_pool(self, turn: Turn) -> tuple[list[Hit], ScoredLines | None]:
        """The passages closest lines come from and their scored lines: the kept passages', or
        with ``closest_pool_threshold`` the wider pool's, scored now (a failing model keeps the
        former)."""
        found = turn.found
        if self.pool is None or self.judge is None or turn.lines is None or not found.kept:
            return found.kept, turn.lines
        floor, n = self.pool
        ranked = [h for h in sorted(found.kept + found.dropped, key=lambda h: -h.score) if h.score >= floor]
        pool = [dataclasses.replace(h, rank=r) for r, h in enumerate(ranked[:n], start=1)]
        try:
            with turn.clock.stage("closest"):
                scored = self.judge.lines(turn.read, pool)
        except ModelError:
            return found.kept, turn.lines
        return pool, scored

    def _cut(self, answer: Answer) -> Answer:
        """``answer`` with its text cut before the first of the client's ``stop`` sequences, as a
        generated text would be (OpenAI's contract: the content never holds one)."""
        cuts = [answer.text.find(stop) for stop in self.stop if stop and stop in answer.text]
        return dataclasses.replace(answer, text=answer.text[: min(cuts)].rstrip()) if cuts else answer


def about_lines(
    turn: Turn,
    lines: Sequence[Line],
    passages: Sequence[Hit],
    about: VerifyConfig | None,
    min_coverage: float = 0.0,
) -> tuple[list[Line], tuple[str, ...]]:
    """The lines whose passage (``passages[line.source - 1]``) is about the question by ``about``
    (``aboutness.missing``; None: every line) and, judged, names ``min_coverage`` of its concepts,
    and what the others' passages lack."""
    if about is None:
        return list(lines), ()
    if not turn.read.terms:  # "What is 17 times 23?", "and in children?": nothing to be about
        return [], ("a subject (a drug, disease or test) named in the question",)
    lacking = {n: _lacks(turn.read, hit, about, min_coverage) for n, hit in enumerate(passages, start=1)}
    kept = [line for line in lines if not lacking.get(line.source)]
    gone = {line.source for line in lines if lacking.get(line.source)}
    return kept, tuple(dict.fromkeys(term for n in sorted(gone) for term in lacking[n]))


def _lacks(read: ReadQuestion, hit: Hit, about: VerifyConfig, min_coverage: float) -> tuple[str, ...]:
    """What ``hit`` lacks to be about the question: ``aboutness.missing``, and under the judged
    rule ``min_coverage`` of the question's concepts (the relevance model is sure of passages that
    share one everyday word with "What is the capital of France?" or none with "Thanks, that helps!")."""
    lacking = missing(read, hit.chunk, about, hit.score)
    if about.about == "judged" and not lacking:
        share, absent = coverage(read.concepts, chunk_stems(hit.chunk))
        if share < min_coverage or share == 0:
            return absent or tuple(c.text for c in read.concepts)
    return lacking
