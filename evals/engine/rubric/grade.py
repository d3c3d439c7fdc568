"""Grading one reply on its rubric: each criterion by its declared matcher, else by the judge.

Deterministic matchers (:class:`evals.types.Matcher`): ``regex`` searches the reply as the
clinician benchmark reads it (dashes as "-", whitespace collapsed, emphasis dropped,
case-insensitive); ``cites`` needs a citation to one of the sources (a document id, or one under
it after a ``/``); ``mode`` needs the reply's mode in the set. A criterion with a matcher is
scored by it; the judge grades it as well when its kind is in ``judge_matched`` (``"*"``: every
kind), and that verdict is kept beside it for agreement only. Each criterion's grade is a plain
dict that goes into the run's record as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.datasets.clinician import normalise_answer
from evals.engine.rubric.judge import JudgeAsk, judge_criterion
from evals.metrics.rubric import example_score
from evals.types import Criterion, Matcher, RubricItem
from rag.protocols import Generator


@dataclass(frozen=True)
class Reply:
    """What an arm answered: the text shown, its mode and the documents it cites."""

    text: str
    mode: str
    cited_documents: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeSettings:
    judge: Generator | None  # None: only matchers grade (a criterion without one is an error)
    matched: tuple[str, ...] = ()  # kinds with a matcher that the judge grades too; "*": all
    attempts: int = 3
    max_tokens: int = 160

    def also(self, criterion: Criterion) -> bool:
        return self.judge is not None and ("*" in self.matched or criterion.kind in self.matched)


@dataclass
class Graded:
    """Every criterion's grade, in the rubric's order, and the example's score (None: undefined)."""

    grades: list[dict[str, Any]] = field(default_factory=list)
    judge_calls: int = 0

    @property
    def score(self) -> float | None:
        if any(g["met"] is None for g in self.grades):
            return None  # an ungraded criterion leaves the score undefined, never guessed
        return example_score([g["points"] for g in self.grades], [bool(g["met"]) for g in self.grades])


def matches(matcher: Matcher, reply: Reply) -> bool:
    """Whether ``reply`` meets the criterion by ``matcher`` (module docstring)."""
    if matcher.kind == "mode":
        return reply.mode in matcher.modes
    if matcher.modes and reply.mode not in matcher.modes:
        return False
    if matcher.kind == "regex":
        return bool(re.search(matcher.pattern or "", normalise_answer(reply.text), re.IGNORECASE))
    if matcher.kind == "cites":
        return any(
            doc == src or doc.startswith(src + "/")
            for doc in reply.cited_documents
            for src in matcher.sources
        )
    raise ValueError(f"unknown matcher kind {matcher.kind!r}")


def needs_judge(items: Sequence[RubricItem]) -> int:
    """How many criteria of ``items`` have no matcher (and so need a judge)."""
    return sum(c.matcher is None for item in items for c in item.criteria)


def grade(item: RubricItem, reply: Reply, settings: JudgeSettings) -> Graded:
    """Each criterion of ``item`` graded on ``reply``; GeneratorError from the judge propagates."""
    out = Graded()
    for criterion in item.criteria:
        entry: dict[str, Any] = {
            "kind": criterion.kind,
            "points": criterion.points,
            "tags": list(criterion.tags),
            "criterion": criterion.text,
        }
        if criterion.matcher is not None:
            entry.update(met=matches(criterion.matcher, reply), by=criterion.matcher.kind)
        if criterion.matcher is None or settings.also(criterion):
            if settings.judge is None:
                raise ValueError(f"{item.qid}: a criterion without a matcher needs a judge")
            result = judge_criterion(
                settings.judge,
                JudgeAsk(item.prompt, reply.text, criterion.text, criterion.points),
                attempts=settings.attempts,
                max_tokens=settings.max_tokens,
            )
            out.judge_calls += result.attempts
            entry.update(judge_met=result.met, explanation=result.explanation, judge_attempts=result.attempts)
            if criterion.matcher is None:
                entry.update(met=result.met, by="judge")
        out.grades.append(entry)
    return out
