"""What every reranker shares: passage rendering, sort-and-renumber, and the evidence filter.

Why a filter: in expert reviews of medical RAG most top-k passages are irrelevant, and dropping
evidence below a relevance threshold mattered more than any other stage. ``rerank_and_filter``
returns both the kept and the dropped hits, so the pipeline can abstain when nothing is kept and
report what it left out.

Score scales differ per backend, and the threshold is compared with the reranker's own score:

- ``llm`` and ``cross-encoder`` score in [0, 1] (a probability of relevance), so a threshold such
  as 0.5 means the same thing for any question;
- ``none`` (identity) keeps the retriever's score (RRF ~0.03, BM25 unbounded, cosine in [-1, 1]),
  whose scale moves with the retriever, the corpus and the query. A threshold on it is almost
  always a configuration mistake, so it raises :class:`ConfigError` unless the caller passes
  ``allow_unbounded_threshold=True`` (ablations that know the scale they are cutting).

A reranker declares its scale with the class attribute ``scores_are_probabilities``; one that
lacks it is treated as unbounded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from core.errors import ConfigError
from core.types import Chunk, Hit
from rag.protocols import Reranker


def heading(chunk: Chunk) -> str:
    """Title and section path ("Guide > Dosing"): what the relevance and support models read first."""
    return " > ".join((chunk.title, *chunk.section)) if chunk.title else " > ".join(chunk.section)


def cut_at_word(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` at a word boundary, so a model never sees half a word
    (or half a dose); cut mid-word only when the last space is in the first half."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind(" ", 0, max_chars)
    return text[: cut if cut > max_chars // 2 else max_chars]


def passage_text(chunk: Chunk, max_chars: int | None = None) -> str:
    """The text a reranker judges: title and section give context the body often omits."""
    body = chunk.text
    if max_chars is not None and len(body) > max_chars:
        body = cut_at_word(body, max_chars).rstrip() + " …"
    head = heading(chunk)
    return f"{head}\n{body}" if head else body


def sort_and_renumber(hits: Sequence[Hit], scores: Sequence[float], label: str | None = None) -> list[Hit]:
    """Hits carrying ``scores``, best first, ranks 1..n.

    Ties keep the incoming (retrieval) order, so equal scores never shuffle the evidence.
    ``label`` names the scorer in ``Hit.retriever`` (``"hybrid+llm"``): the score scale changed,
    and a report must be able to tell.
    """
    if len(hits) != len(scores):
        raise ValueError(f"{len(hits)} hits but {len(scores)} scores")
    order = sorted(range(len(hits)), key=lambda i: (-_sort_key(scores[i]), i))
    return [
        dataclasses.replace(
            hits[i],
            score=float(scores[i]),
            rank=rank,
            retriever=f"{hits[i].retriever}+{label}" if label else hits[i].retriever,
        )
        for rank, i in enumerate(order, start=1)
    ]


def _sort_key(score: float) -> float:
    # NaN would make sorted() order arbitrary; it ranks last, like -inf.
    return -math.inf if math.isnan(score) else score


def rerank_and_filter(
    reranker: Reranker,
    question: str,
    hits: Sequence[Hit],
    *,
    threshold: float | None,
    min_keep: int = 0,
    max_keep: int | None = None,
    allow_unbounded_threshold: bool = False,
    retrieval_order: bool = False,
) -> tuple[list[Hit], list[Hit]]:
    """Rerank ``hits`` and split them into (kept, dropped).

    ``retrieval_order``: the reranker's scores only filter; hits keep the order they came in,
    so the threshold gates the evidence without the reranker reordering it (for a reranker that
    gates well but ranks worse than retrieval on some data).

    Kept: hits with ``score >= threshold`` (all hits when ``threshold`` is None), topped up
    with the best remaining hits to ``min_keep``, cut to ``max_keep``; ranks renumbered 1..n.
    Dropped: the rest, best first, keeping their rank in the reranked list, so a report can say
    "rank 4, score 0.12". An empty kept list means: abstain. Pure apart from the reranker call.
    """
    check_evidence_limits(reranker, threshold, min_keep, max_keep, allow_unbounded_threshold)
    ranked = reranker.rerank(question, hits)
    if retrieval_order:
        position = {h.chunk.chunk_id: n for n, h in enumerate(hits)}
        ranked = sorted(ranked, key=lambda h: position.get(h.chunk.chunk_id, len(position)))
    # NaN fails the comparison, so an unscorable hit is dropped.
    chosen = [i for i, h in enumerate(ranked) if threshold is None or h.score >= threshold]
    if len(chosen) < min_keep:
        shortfall = min_keep - len(chosen)
        chosen = sorted(chosen + [i for i in range(len(ranked)) if i not in chosen][:shortfall])
    if max_keep is not None:
        chosen = chosen[:max_keep]
    kept = [dataclasses.replace(ranked[i], rank=n) for n, i in enumerate(chosen, start=1)]
    chosen_set = set(chosen)
    return kept, [h for i, h in enumerate(ranked) if i not in chosen_set]


def check_evidence_limits(
    reranker: Reranker,
    threshold: float | None,
    min_keep: int = 0,
    max_keep: int | None = None,
    allow_unbounded_threshold: bool = False,
) -> None:
    """Raise ConfigError for limits ``rerank_and_filter`` would refuse; call it at start-up so a
    bad profile fails when loaded, not on the first question."""
    if min_keep < 0:
        raise ConfigError(f"min_keep must be >= 0, got {min_keep}")
    if max_keep is not None and max_keep < max(min_keep, 1):
        raise ConfigError(
            f"max_keep must be >= max(min_keep, 1), got max_keep={max_keep}, min_keep={min_keep}"
        )
    if threshold is None:
        return
    if math.isnan(threshold):
        raise ConfigError("the evidence threshold is NaN; set a number or leave it unset")
    probabilities = bool(getattr(reranker, "scores_are_probabilities", False))
    if probabilities and not 0.0 <= threshold <= 1.0:
        raise ConfigError(
            f"reranker {reranker.name!r} scores in [0, 1] but the evidence threshold is {threshold}; "
            "choose a value in [0, 1] (0.5 is a sensible start)"
        )
    if not probabilities and not allow_unbounded_threshold:
        raise ConfigError(
            f"reranker {reranker.name!r} does not score on a [0, 1] probability scale (the 'none' "
            "reranker keeps retrieval scores: RRF, BM25 or cosine, whose scale varies with the "
            "retriever and corpus), so an evidence threshold on it is unreliable; use the "
            "'llm', 'cross-encoder' or 'trained' reranker, or write rerank.threshold = \"unset\""
        )
