"""The quote model: how likely each line of the passages read is to answer the question.

A generated sentence can say what its passage does not; a quoted one cannot. For a clinician's
question about a guideline the answer is usually one line of it ("Spironolactone: start 100 mg
daily, titrate up to 400 mg daily"), so medcite first looks for that line among the lines of
the passages it kept (``lines.py``) and quotes it, cited to its exact span, when this model is
confident enough (``rag/answer/quoted.py``); its next best lines are the closest lines of a reply
that answers nothing (``rag/answer/closest.py``).

The judgement is one logistic regression (``weights/quotes.json``, fitted on the clinician
benchmark's dev part by ``medcite train quotes``) over what is already computed for each line:
the relevance model's logit for (heading + line, question) and the line's rank by it, the
passage's calibrated relevance, how much of the question's concepts the line covers (alone, and
with its passage's title and section path), whether it gives the kind of answer asked for (a
dose states an amount), whether it holds a number when the question asks for one, and the
condition reader's verdict on the line's patient (``conditions.py``). A line the condition
reader finds stated for another patient is scored apart and is never an answer.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core.errors import ConfigError
from core.types import Chunk, Hit
from rag.profile import VerifyConfig
from rag.reading.aboutness import about_features, missing
from rag.reading.conditions import LineContext, Verdict, verdict
from rag.reading.lines import Line, distinct, lead_in, line_context, quotable
from rag.reading.plain_text import plain_text
from rag.reading.question import ReadQuestion
from rag.reading.terms import chunk_stems
from rag.rerank.sentences import SentenceScorer, narrowed

QUOTE_MODEL = Path(__file__).parent / "weights" / "quotes.json"
FEATURES = (
    "relevance_logit",
    "log_rank",
    "passage_relevance",
    "sentence_coverage",
    "heading_coverage",
    "asked_for_given",
    "number_given",
    "number_missing",
    "log_words",
    "condition_band",
    "condition_named",
)
GIVES_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|once|twice|daily|weekly|annually)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class QuoteModel:
    """``P(answers) = sigmoid(((x - mean) / scale) @ weights + bias)`` over the ``FEATURES`` row."""

    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        standard = (np.asarray(rows, dtype=np.float64) - self.mean) / self.scale
        z = standard @ np.asarray(self.weights) + self.bias
        return np.asarray(0.5 * (1.0 + np.tanh(z / 2.0)))

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "weights": list(self.weights),
            "bias": self.bias,
            "mean": list(self.mean),
            "scale": list(self.scale),
        }

    @classmethod
    def read(cls, path: Path = QUOTE_MODEL) -> QuoteModel:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the quote model {path}: {exc}; run `medcite train quotes`"
            ) from exc
        if tuple(raw.get("features", ())) != FEATURES:
            raise ConfigError(
                f"the quote model {path} reads features {raw.get('features')}, this code computes "
                f"{list(FEATURES)}; retrain it with `medcite train quotes`"
            )
        return cls(tuple(raw["weights"]), float(raw["bias"]), tuple(raw["mean"]), tuple(raw["scale"]))

    @classmethod
    @cache
    def shipped(cls) -> QuoteModel:
        return cls.read(QUOTE_MODEL)


@dataclass(frozen=True)
class ScoredLines:
    """Every quotable line of some hits, with its features (one row each, ``FEATURES``)."""

    lines: tuple[Line, ...]  # probability 0 until a model scores them
    features: np.ndarray
    conflicting: tuple[Line, ...] = ()  # lines stated for another patient: never an answer
    conflicting_features: np.ndarray | None = None


class LineModel(Protocol):
    def probabilities(self, rows: np.ndarray) -> np.ndarray: ...


class LineJudge(Protocol):
    """What gives the lines of some passages their P(answers): ``lines`` reads them, ``model``
    turns their features into probabilities, and the judge may bring its own answer threshold
    and floor (None: the profile must give them)."""

    @property
    def model(self) -> LineModel: ...

    @property
    def answer_threshold(self) -> float | None: ...

    @property
    def floor(self) -> float | None: ...

    def lines(self, read: ReadQuestion, hits: Sequence[Hit]) -> ScoredLines: ...


def off_scope(read: ReadQuestion, hits: Sequence[Hit], verify: VerifyConfig) -> set[int]:
    """The hits (0-based) a line may not come from: those failing the passage checks other than
    the subject's (``aboutness.missing``: another "type X", the population asked about unnamed,
    the kind of answer asked for never spoken of); the quote model judges the subject itself."""
    checks = verify.model_copy(update={"about": "off"})
    return {n for n, hit in enumerate(hits) if missing(read, hit.chunk, checks)}


def score_lines(
    read: ReadQuestion, hits: Sequence[Hit], scorer: SentenceScorer, verify: VerifyConfig
) -> ScoredLines:
    """The quotable lines of ``hits`` (none from a passage :func:`off_scope` names) and their
    features, the relevance model scoring them in one batch. Lines the condition reader finds
    stated for another patient are scored apart (``conflicting``): never an answer, they may be
    shown as a closest line with the reason."""
    barred = off_scope(read, hits, verify)
    units = [(n, s, e) for n, hit in enumerate(hits) if n not in barred for s, e in quotable(hit.chunk)]
    leads = [lead_in(hits[n].chunk.text, s, hits[n].chunk.start > 0) for n, s, e in units]
    fits = [line_fit(read, hits[n].chunk, s, e, lead) for (n, s, e), lead in zip(units, leads, strict=True)]
    keep = [i for i, fit in enumerate(fits) if fit.state != "conflicts"]
    apart = [i for i, fit in enumerate(fits) if fit.state == "conflicts"]
    empty = ScoredLines((), np.zeros((0, len(FEATURES))))
    if not units:
        return empty
    reading = _Reading(read, hits)
    logits = np.zeros(0)
    if keep:
        logits = reading.logits(scorer, [units[i] for i in keep], [leads[i] for i in keep])
    rank = np.empty(len(keep))
    rank[np.argsort(-logits, kind="stable")] = np.arange(len(keep))
    lines, rows = reading.rows([(units[i], leads[i], fits[i]) for i in keep], logits, rank)
    rows = rows if keep else empty.features
    if not apart:
        return ScoredLines(lines, rows)
    # scored in their own batch, so the lines that may answer are scored exactly as without them;
    # each ranked as if it stood among those lines
    other = reading.logits(scorer, [units[i] for i in apart], [leads[i] for i in apart])
    other_rank = np.array([float(np.sum(logits > x)) for x in other])
    conflicting, other_rows = reading.rows([(units[i], leads[i], fits[i]) for i in apart], other, other_rank)
    return ScoredLines(lines, rows, conflicting, other_rows)


Unit = tuple[int, int, int]  # (hit number, start, end) of a line


class _Reading:
    """What every line of one question's hits is read against (the question, read once)."""

    def __init__(self, read: ReadQuestion, hits: Sequence[Hit]) -> None:
        self.read, self.hits = read, hits
        self.asks_number = 1.0 if read.asks_number else 0.0

    def logits(self, scorer: SentenceScorer, units: Sequence[Unit], leads: Sequence[str]) -> np.ndarray:
        """The relevance model's logit for each unit read with its headings (and lead-in)."""
        texts = [
            line_context(self.hits[n].chunk, s, e, lead) for (n, s, e), lead in zip(units, leads, strict=True)
        ]
        return np.asarray(scorer.logits(self.read.text, texts), dtype=np.float64)

    def rows(
        self, lines: Sequence[tuple[Unit, str, Verdict]], logits: np.ndarray, rank: np.ndarray
    ) -> tuple[tuple[Line, ...], np.ndarray]:
        """Each line as a :class:`Line` (probability 0) and its ``FEATURES`` row."""
        rows, out = [], []
        kinds = self.read.kinds
        for i, ((n, s, e), lead_line, fit) in enumerate(lines):
            hit = self.hits[n]
            piece = narrowed(hit.chunk, s, e)
            alone = dataclasses.replace(piece, title="", section=())
            if lead_line:  # the lead-in reads as the innermost heading
                lead = " ".join(plain_text(lead_line.split("\n")[0]).split())  # a table: its header's words
                piece = dataclasses.replace(piece, section=(*piece.section, lead))
            gives = 1.0 if GIVES_NUMBER.search(piece.text) else 0.0
            rows.append(
                (
                    logits[i],
                    math.log1p(rank[i]),
                    hit.score,
                    about_features(self.read.concepts, chunk_stems(alone), None)["coverage"],
                    about_features(self.read.concepts, chunk_stems(piece), None)["coverage"],
                    float(np.mean([k.given_in(piece.text) for k in kinds])) if kinds else 1.0,
                    self.asks_number * gives,
                    self.asks_number * (1.0 - gives),
                    math.log1p(len(piece.text.split())),
                    1.0 if fit.tier == 2 else 0.0,
                    1.0 if fit.tier == 1 else 0.0,
                )
            )
            out.append(Line(dataclasses.replace(hit, chunk=piece), n + 1, 0.0, lead_line, fit))
        return tuple(out), np.asarray(rows, dtype=np.float64)


def line_fit(read: ReadQuestion, chunk: Chunk, start: int, end: int, lead: str) -> Verdict:
    """The condition reader's verdict on one line, read with its lead-in and headings."""
    context = LineContext(chunk.text[start:end], lead, (chunk.title, *chunk.section))
    return verdict(read.patient, context, asks_amount=read.asks_number)


def closest_lines(found: ScoredLines, model: LineModel, count: int) -> list[Line]:
    """The ``count`` lines most likely to answer, for when none is confident enough to be the
    answer: the lines the condition reader does not rule out, best first, then those it finds
    stated for another patient (each shown with why), each document span once."""
    scored = []
    for lines, rows in ((found.lines, found.features), (found.conflicting, found.conflicting_features)):
        if lines and rows is not None:
            p = model.probabilities(rows)
            ranked = sorted(range(len(lines)), key=lambda i: (-p[i], i))
            scored += [dataclasses.replace(lines[i], probability=float(p[i])) for i in ranked]
    return distinct(scored, count)


def best_lines(found: ScoredLines, model: LineModel, count: int) -> list[Line]:
    """The ``count`` lines most likely to answer, best first (ties: document order), each
    document span once (overlapping chunks hold the same line).

    When a line whose band, age or sex holds the patient is among the likely ones (at least half
    the best probability), only such lines are shown: the row for the patient's INR band, not
    its siblings the reader found silent. The later ones are shown whatever their probability:
    on dev, asking them to reach 0.1-0.3 as well only lost correct answers
    (``training/quotes.py`` measured it)."""
    if not found.lines:
        return []
    p = model.probabilities(found.features)
    likely = [i for i in range(len(p)) if p[i] >= 0.5 * float(p.max())]
    tier = 2 if any(found.lines[i].fit.tier == 2 for i in likely) else 0
    order = [i for i in sorted(range(len(p)), key=lambda i: (-p[i], i)) if found.lines[i].fit.tier >= tier]
    return distinct([dataclasses.replace(found.lines[i], probability=float(p[i])) for i in order], count)


@dataclass(frozen=True)
class QuoteJudge:
    """Lines judged by the quote model over the relevance model's features of each
    (``[quote] judge = "quote-model"``); it has no answer threshold or floor of its own."""

    scorer: SentenceScorer
    verify: VerifyConfig
    answer_threshold: float | None = None
    floor: float | None = None

    @property
    def model(self) -> QuoteModel:
        return QuoteModel.shipped()

    def lines(self, read: ReadQuestion, hits: Sequence[Hit]) -> ScoredLines:
        return score_lines(read, hits, self.scorer, self.verify)
