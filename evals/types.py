"""The evaluation vocabulary: what a benchmark loader returns and what a qrels check reports.

Plain frozen dataclasses over plain containers, so items travel to JSON, pytrec_eval or ranx
without conversion. Records of what a system answered live in :mod:`evals.records`. Rubric
items (:class:`RubricItem`: a conversation and its graded criteria) come from
:mod:`evals.datasets.rubric`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.types import Message


@dataclass(frozen=True)
class McqItem:
    """One multiple-choice question with its gold option letter.

    ``dataset`` and ``qid`` are the pairing key of :class:`evals.records.ItemRecord`, so every
    loader keeps the benchmark's own ids (MIRAGE's qids, PubMed ids for PubMedQA).
    ``contexts`` carries gold evidence where the benchmark ships it (PubMedQA PQA-L abstracts:
    the oracle-context upper bound); it is empty for closed-book sets.
    """

    dataset: str
    qid: str
    question: str
    options: Mapping[str, str]  # letter -> option text, in letter order
    answer: str  # the gold letter, always a key of ``options``
    contexts: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset, self.qid)


@dataclass(frozen=True)
class RetrievalSet:
    """Queries with graded relevance judgements (BEIR's shape).

    ``qrels``: ``{qid: {doc_id: grade}}``; grade > 0 is relevant, 0 is judged non-relevant.
    Loaders keep only queries with at least one relevant document (recall, nDCG and AP are
    undefined without one), so ``queries`` and ``qrels`` have the same keys and the set can go
    straight to :mod:`evals.metrics.retrieval`; what was dropped is in ``counts`` and ``notes``.
    ``corpus`` is the set's own ``corpus.jsonl`` (BEIR layout), or None when the documents are
    one of medcite's corpora (BioASQ snippets, MedQuAD).
    """

    name: str
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]
    corpus: Path | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class QrelsCoverage:
    """How well a corpus or index covers the documents that qrels judge relevant.

    A relevant document missing from the index caps recall below 1 for its query, and a query
    whose relevant documents are all missing cannot be answered by retrieval at all; this says
    how many of each, instead of a metric silently counting them as misses.
    """

    queries: int
    relevant: int  # (query, doc) pairs with grade > 0
    missing: int  # of those, pairs whose doc is not in the corpus
    missing_per_query: Mapping[str, int]  # only queries that miss at least one relevant doc
    queries_without_any: tuple[str, ...]  # queries whose relevant docs are all missing
    examples: tuple[str, ...] = ()  # a few missing doc ids, to spot an id-scheme mismatch

    @property
    def complete(self) -> bool:
        return self.missing == 0


@dataclass(frozen=True)
class Matcher:
    """A deterministic grader that a rubric declares for one criterion (graded by
    :mod:`evals.engine.rubric.grade`).

    ``regex``: ``pattern`` found (case-insensitive) in the reply; ``cites``: a citation points at
    one of ``sources`` (document ids, or prefixes of them ending at a ``/``); ``mode``: the
    reply's mode (``rag``, ``abstained``, ``closed-book``, ``degraded``) is one of ``modes``. For
    ``regex`` and ``cites``, a non-empty ``modes`` limits the modes in which the criterion can be met.
    """

    kind: str  # regex | cites | mode
    pattern: str | None = None
    sources: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Criterion:
    """One rubric line: met or not, it adds ``points`` (negative for something bad) when met."""

    text: str
    points: float
    tags: tuple[str, ...] = ()
    kind: str = "rubric"  # what judge agreement is reported by: a template's criterion name
    matcher: Matcher | None = None  # None: graded by the run's judge


@dataclass(frozen=True)
class RubricItem:
    """A conversation to reply to (its last turn is the user's) and the criteria the reply is
    graded on. ``kind`` (clinician items: answerable, near, far) stratifies a run's sample."""

    dataset: str
    qid: str
    prompt: tuple[Message, ...]
    criteria: tuple[Criterion, ...]
    example_tags: tuple[str, ...] = ()
    kind: str | None = None

    @property
    def question(self) -> str:
        return self.prompt[-1].content

    @property
    def history(self) -> tuple[Message, ...]:
        return self.prompt[:-1]

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset, self.qid)
