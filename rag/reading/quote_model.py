"""Quoted answers: the sentences of the kept passages that answer the question, word for word.

A generated sentence can say what its passage does not; a quoted one cannot. For a clinician's
question about a guideline the answer is usually one line of it ("Spironolactone: start 100 mg
daily, titrate up to 400 mg daily"), so medcite first looks for that line among the sentences of
the passages it kept, and answers with it, cited to its exact character span, when a model
trained for that judgement is confident enough; otherwise the question goes on to generation
and the support gate as before.

The judgement is one logistic regression (``weights/quotes.json``, fitted on the clinician
benchmark's dev part by ``medcite train quotes``) over what is already computed for each
sentence: the relevance model's logit for (heading + sentence, question) and the sentence's rank
by it, the passage's calibrated relevance, how much of the question's concepts the sentence
covers (alone, and with its passage's title and section path; corpus abbreviations and idf as
the aboutness model reads them), whether it gives the kind of answer asked for (a dose states
an amount) and whether it holds a number when the question asks for one (how much, how long,
what cut-off). The probability is the model's estimate that the sentence states the
question's key fact; the threshold and how many sentences to quote are profile settings
(``[quote]``), chosen on dev.

A sentence that begins where its chunk was cut mid-word or mid-sentence (chunks overlap) is not
a quote. A list item is shown after the line it hangs from ("Bivalirudin (Class I, LOE: B):
Bolus: 0.75 mg/kg IV ..."), and a table row under its header's names, so a dose never loses the
drug it belongs to; the citation spans the item itself, the lead-in is its innermost section.
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
from typing import Any

import numpy as np

from core.errors import ConfigError
from core.types import Chunk, Hit
from rag.check.aboutness import Question, about_features, asked_for
from rag.check.conditions import SILENT, Conditions, LineContext, Verdict, question_conditions, verdict
from rag.check.plain_text import plain_text
from rag.check.rules import GateRules
from rag.check.terms import Vocabulary, chunk_stems
from rag.generate.sentences import sentence_spans
from rag.rerank.evidence import heading
from rag.rerank.sentences import SentenceScorer, headed, narrowed

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
# a question that asks for a quantity, a time or a threshold
ASKS_NUMBER = re.compile(
    r"\b(?:how (?:much|many|long|soon|often|high|low|far|fast|quickly|big|large|frequently)"
    r"|what (?:dose|dosage|rate|level|score|threshold|cut-?off|target|percentage|interval|age|volume)"
    r"|cut-?off|threshold|when|at what|maximum|minimum|max|min|top dose|limit|within|duration"
    r"|doses?|dosing|interval|target|goal|number of|percent)\b",
    re.IGNORECASE,
)
GIVES_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|once|twice|daily|weekly|annually)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Quote:
    """One sentence of a kept passage: ``hit`` narrowed to its span (same chunk_id, document
    offsets moved, so the citation resolves to exactly this sentence), ``source`` the 1-based
    number of the passage in the evidence, and the model's probability that it answers."""

    hit: Hit
    source: int
    probability: float
    lead: str = ""  # the line a list item hangs from, or a table row's header (raw Markdown)
    fit: Verdict = SILENT  # the condition reader's judgement of the line's patient


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
class Sentences:
    """Every quotable sentence of some hits, with its features (one row each, ``FEATURES``)."""

    quotes: tuple[Quote, ...]  # probability 0 until a model scores them
    features: np.ndarray
    conflicting: tuple[Quote, ...] = ()  # lines stated for another patient: never an answer
    conflicting_features: np.ndarray | None = None


_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _table_header(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a Markdown table's header row (the next line separates)."""
    if not text[start:end].lstrip().startswith("|"):
        return False
    rest = text[end:].lstrip("\n").split("\n", 1)[0]
    return bool(_SEPARATOR_ROW.match(rest))


_CONTINUES = frozenset(",.;:)]}%")  # a sentence does not begin with these


def _quotable(chunk: Chunk) -> list[tuple[int, int]]:
    """Sentence spans of ``chunk`` that can stand as a quote: not a first one that starts
    mid-sentence (chunks overlap, so one may be cut: a lowercase letter or the punctuation that
    follows a word, ", pantoprazole 40 mg"), not a table's header row, and with words."""
    text = chunk.text
    spans = sentence_spans(text) or [(0, len(text))]
    first = text[spans[0][0] : spans[0][0] + 1]
    if chunk.start > 0 and (first.islower() or first in _CONTINUES):
        spans = spans[1:]
    return [
        (s, e) for s, e in spans if any(ch.isalpha() for ch in text[s:e]) and not _table_header(text, s, e)
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
    (Class I):" above "- Bolus: 0.75 mg/kg IV"), the table's header and separator rows, or the
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
    for i in range(len(above) - 1, -1, -1):
        candidate = above[i]
        if not candidate.strip() or _LIST_ITEM.match(candidate) or candidate[:1].isspace():
            continue
        if (cut and i == 0) or len(candidate) > LEAD_CHARS or candidate.lstrip().startswith("|"):
            return ""
        return candidate.strip()
    return ""


def quote_text(quote: Quote) -> str:
    """The quote as shown, one line: its lead-in then the sentence, or a table row under its
    header's names ("Drug: fluticasone; Low: 100-250"); the source's own words either way."""
    sentence = quote.hit.chunk.text
    if "\n" in quote.lead:  # a table's header and separator rows
        return " ".join(plain_text(f"{quote.lead}\n{sentence}").split())
    text = " ".join(plain_text(sentence).split()).lstrip("-*>• ").strip()
    if not quote.lead:
        return text
    lead = " ".join(plain_text(quote.lead).split()).lstrip("-=>→ ")
    return f"{lead} {text}" if lead.endswith((":", "?")) else f"{lead}: {text}"


def shown_text(quote: Quote) -> str:
    """:func:`quote_text`, after the heading that states the condition selecting the line when
    only a heading states it ("Elderly (>= 75 years): Enoxaparin: reduced dose ...")."""
    text = quote_text(quote)
    section = quote.hit.chunk.section
    named = " ".join(plain_text(section[-1]).split()) if section else ""
    if quote.fit.from_heading and named and not text.startswith(named):
        return f"{named}: {text}"
    return text


def off_scope(
    question: str, hits: Sequence[Hit], vocabulary: Vocabulary | None, rules: GateRules
) -> set[int]:
    """The hits (0-based) a quote may not come from: those failing the gate's passage checks other
    than the subject's (``aboutness.Question.missing``: another "type X", the population asked
    about unnamed, the kind of answer asked for never spoken of); the quote model judges the
    subject itself."""
    read = Question.read(question, vocabulary, dataclasses.replace(rules, terms="off"))
    return {n for n, hit in enumerate(hits) if read.missing(hit.chunk)}


def sentences(
    question: str,
    hits: Sequence[Hit],
    scorer: SentenceScorer,
    vocabulary: Vocabulary | None,
    rules: GateRules | None = None,
) -> Sentences:
    """The quotable sentences of ``hits`` and their features, the relevance model scoring them in
    one batch; with ``rules``, none from a passage :func:`off_scope` names. Lines the condition
    reader finds stated for another patient are scored apart (``conflicting``): never an answer,
    they may be shown as a closest line with the reason."""
    barred = off_scope(question, hits, vocabulary, rules) if rules is not None else set()
    units = [(n, s, e) for n, hit in enumerate(hits) if n not in barred for s, e in _quotable(hit.chunk)]
    leads = [lead_in(hits[n].chunk.text, s, hits[n].chunk.start > 0) for n, s, e in units]
    patient = question_conditions(question)
    fits = [
        _fit(patient, hits[n].chunk, s, e, lead, question)
        for (n, s, e), lead in zip(units, leads, strict=True)
    ]
    keep = [i for i, fit in enumerate(fits) if fit.state != "conflicts"]
    apart = [i for i, fit in enumerate(fits) if fit.state == "conflicts"]
    empty = Sentences((), np.zeros((0, len(FEATURES))))
    if not units:
        return empty
    reading = _Reading(question, hits, vocabulary)
    logits = np.zeros(0)
    if keep:
        logits = reading.logits(scorer, [units[i] for i in keep], [leads[i] for i in keep])
    rank = np.empty(len(keep))
    rank[np.argsort(-logits, kind="stable")] = np.arange(len(keep))
    quotes, rows = reading.rows([(units[i], leads[i], fits[i]) for i in keep], logits, rank)
    rows = rows if keep else empty.features
    if not apart:
        return Sentences(quotes, rows)
    # scored in their own batch, so the lines that may answer are scored exactly as without them;
    # each ranked as if it stood among those lines
    other = reading.logits(scorer, [units[i] for i in apart], [leads[i] for i in apart])
    other_rank = np.array([float(np.sum(logits > x)) for x in other])
    conflicting, other_rows = reading.rows([(units[i], leads[i], fits[i]) for i in apart], other, other_rank)
    return Sentences(quotes, rows, conflicting, other_rows)


Unit = tuple[int, int, int]  # (hit number, start, end) of a sentence


class _Reading:
    """What every sentence of one question's hits is read against: the question's concepts,
    the kind of answer it asks for, whether it asks for a number."""

    def __init__(self, question: str, hits: Sequence[Hit], vocabulary: Vocabulary | None) -> None:
        self.question, self.hits = question, hits
        self.concepts = Question.read(question, vocabulary, GateRules(terms="judged")).concepts
        self.kinds = asked_for(question)
        self.asks_number = 1.0 if ASKS_NUMBER.search(question) else 0.0

    def logits(self, scorer: SentenceScorer, units: Sequence[Unit], leads: Sequence[str]) -> np.ndarray:
        """The relevance model's logit for each unit read with its headings (and lead-in)."""
        texts = [
            headed(self.hits[n].chunk, s, e)
            if not lead
            else f"{heading(self.hits[n].chunk)}\n{lead}\n{self.hits[n].chunk.text[s:e]}"
            for (n, s, e), lead in zip(units, leads, strict=True)
        ]
        return np.asarray(scorer.logits(self.question, texts), dtype=np.float64)

    def rows(
        self, lines: Sequence[tuple[Unit, str, Verdict]], logits: np.ndarray, rank: np.ndarray
    ) -> tuple[tuple[Quote, ...], np.ndarray]:
        """Each line as a :class:`Quote` (probability 0) and its ``FEATURES`` row."""
        rows, quotes = [], []
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
                    about_features(self.concepts, chunk_stems(alone), None)[0],
                    about_features(self.concepts, chunk_stems(piece), None)[0],
                    float(np.mean([k.given_in(piece.text) for k in self.kinds])) if self.kinds else 1.0,
                    self.asks_number * gives,
                    self.asks_number * (1.0 - gives),
                    math.log1p(len(piece.text.split())),
                    1.0 if fit.tier == 2 else 0.0,
                    1.0 if fit.tier == 1 else 0.0,
                )
            )
            quotes.append(Quote(dataclasses.replace(hit, chunk=piece), n + 1, 0.0, lead_line, fit))
        return tuple(quotes), np.asarray(rows, dtype=np.float64)


def _fit(patient: Conditions, chunk: Chunk, start: int, end: int, lead: str, question: str) -> Verdict:
    """The condition reader's verdict on one line, read with its lead-in and headings."""
    context = LineContext(chunk.text[start:end], lead, (chunk.title, *chunk.section))
    return verdict(patient, context, asks_amount=bool(ASKS_NUMBER.search(question)))


def _distinct(quotes: Sequence[Quote], count: int) -> list[Quote]:
    """The first ``count`` of ``quotes`` with each document span once (chunks overlap) and each
    line as shown once (two branches of a flowchart may share a step)."""
    chosen: list[Quote] = []
    seen: set[object] = set()
    for quote in quotes:
        chunk = quote.hit.chunk
        keys = ((chunk.doc_id, chunk.start, chunk.end), shown_text(quote))
        if not any(key in seen for key in keys):
            seen.update(keys)
            chosen.append(quote)
        if len(chosen) == count:
            break
    return chosen


def closest_lines(found: Sentences, model: QuoteModel, count: int) -> list[Quote]:
    """The ``count`` lines most likely to answer, for when none is confident enough to be the
    answer: the lines the condition reader does not rule out, best first, then those it finds
    stated for another patient (each shown with why), each document span once."""
    scored = []
    for quotes, rows in ((found.quotes, found.features), (found.conflicting, found.conflicting_features)):
        if quotes and rows is not None:
            p = model.probabilities(rows)
            ranked = sorted(range(len(quotes)), key=lambda i: (-p[i], i))
            scored += [dataclasses.replace(quotes[i], probability=float(p[i])) for i in ranked]
    return _distinct(scored, count)


def best_quotes(found: Sentences, model: QuoteModel, count: int) -> list[Quote]:
    """The ``count`` sentences most likely to answer, best first (ties: document order), each
    document span once (overlapping chunks hold the same sentence).

    When a line whose band, age or sex holds the patient is among the likely ones (at least half
    the best probability), only such lines are shown: the row for the patient's INR band, not
    its siblings the reader found silent. The later ones are shown whatever their probability:
    on dev, asking them to reach 0.1-0.3 as well only lost correct answers
    (``training/quotes.py`` measured it)."""
    if not found.quotes:
        return []
    p = model.probabilities(found.features)
    likely = [i for i in range(len(p)) if p[i] >= 0.5 * float(p.max())]
    tier = 2 if any(found.quotes[i].fit.tier == 2 for i in likely) else 0
    order = [i for i in sorted(range(len(p)), key=lambda i: (-p[i], i)) if found.quotes[i].fit.tier >= tier]
    return _distinct([dataclasses.replace(found.quotes[i], probability=float(p[i])) for i in order], count)
