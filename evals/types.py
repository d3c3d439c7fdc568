"""The evaluation vocabulary: what a benchmark loader returns and what a qrels check reports.

Plain frozen dataclasses over plain containers, so items travel to JSON, pytrec_eval or ranx
without conversion. Records of what a system answered live in :mod:`evals.records`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
