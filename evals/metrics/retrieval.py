"""Retrieval metrics as pure functions over plain run/qrels dicts.

``run``: ``{query_id: [doc_id, ...]}`` ranked best first. ``qrels``: ``{query_id: {doc_id: grade}}``
with grade > 0 meaning relevant. Each function returns one value per query, in the order of
``queries``; the caller aggregates (mean, confidence interval, paired tests). Definitions follow
trec_eval (checked against pytrec_eval in tests/unit/evals/test_metrics_vs_trec_eval.py);
:func:`ranked` turns a scored run ``{qid: {doc: score}}`` into rankings with its tie-breaking.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np


def recall_at_k(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int,
    queries: Sequence[str] | None = None,
) -> np.ndarray:
    """recall@k(q) = |relevant(q) ∩ top_k(run(q))| / |relevant(q)|.

    Queries without any relevant document are undefined and must not be passed; a query
    missing from ``run`` scores 0. Duplicate ids in a ranking count once.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    queries = list(queries if queries is not None else qrels)
    out = np.zeros(len(queries), dtype=np.float64)
    for i, qid in enumerate(queries):
        relevant = {d for d, grade in qrels[qid].items() if grade > 0}
        if not relevant:
            raise ValueError(f"query {qid} has no relevant document; recall is undefined")
        top = list(dict.fromkeys(run.get(qid, ())))[:k]
        out[i] = len(relevant.intersection(top)) / len(relevant)
    return out


def _ranking(run: Mapping[str, Sequence[str]], qid: str) -> list[str]:
    """The run's ranking for ``qid`` with repeated ids removed (the first occurrence counts)."""
    return list(dict.fromkeys(run.get(qid, ())))


def _check_k(k: int | None) -> None:
    if k is not None and k < 1:
        raise ValueError("k must be at least 1")


def precision_at_k(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int,
    queries: Sequence[str] | None = None,
) -> np.ndarray:
    """P@k(q) = |relevant(q) ∩ top_k(run(q))| / k.

    The denominator is k even when the run returns fewer documents (trec_eval's ``P_k``), so a
    short ranking is not rewarded. Defined for every query (0 without relevant documents).
    """
    _check_k(k)
    queries = list(queries if queries is not None else qrels)
    out = np.zeros(len(queries), dtype=np.float64)
    for i, qid in enumerate(queries):
        relevant = {d for d, grade in qrels.get(qid, {}).items() if grade > 0}
        out[i] = len(relevant.intersection(_ranking(run, qid)[:k])) / k
    return out


def ndcg_at_k(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int,
    queries: Sequence[str] | None = None,
) -> np.ndarray:
    """nDCG@k(q) = DCG@k(q) / IDCG@k(q), with DCG@k = Σ_{i=1..k} gain(d_i) / log2(i + 1).

    Linear gain, gain(d) = grade(d) for grade > 0 and 0 otherwise (unjudged included), as in
    trec_eval's ``ndcg_cut``; IDCG@k is the DCG@k of all judged documents sorted by grade.
    Undefined (ValueError) for a query without a relevant document; a query missing from
    ``run`` scores 0.
    """
    _check_k(k)
    queries = list(queries if queries is not None else qrels)
    # no more discounts than the longest ranking or judgement list uses: k may be huge
    longest = max((max(len(qrels[q]), len(run.get(q, ()))) for q in queries), default=0)
    discount = 1.0 / np.log2(np.arange(2, min(k, longest) + 2))
    out = np.zeros(len(queries), dtype=np.float64)
    for i, qid in enumerate(queries):
        grades = {d: g for d, g in qrels[qid].items() if g > 0}
        if not grades:
            raise ValueError(f"query {qid} has no relevant document; nDCG is undefined")
        ideal = sorted(grades.values(), reverse=True)[:k]
        gains = [grades.get(d, 0) for d in _ranking(run, qid)[:k]]
        idcg = float(np.dot(ideal, discount[: len(ideal)]))
        out[i] = float(np.dot(gains, discount[: len(gains)])) / idcg
    return out


def reciprocal_rank(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int | None = None,
    queries: Sequence[str] | None = None,
) -> np.ndarray:
    """RR(q) = 1 / rank of the first relevant document (within the top k if given), else 0.

    The mean over queries is MRR (trec_eval's ``recip_rank``, which has no cut-off).
    """
    _check_k(k)
    queries = list(queries if queries is not None else qrels)
    out = np.zeros(len(queries), dtype=np.float64)
    for i, qid in enumerate(queries):
        relevant = {d for d, grade in qrels.get(qid, {}).items() if grade > 0}
        ranking = _ranking(run, qid)
        for rank, doc in enumerate(ranking[:k] if k else ranking, start=1):
            if doc in relevant:
                out[i] = 1.0 / rank
                break
    return out


def average_precision(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int | None = None,
    queries: Sequence[str] | None = None,
) -> np.ndarray:
    """AP(q) = (1 / |relevant(q)|) · Σ_{i ≤ k, d_i relevant} P@i(q); its mean over queries is MAP.

    Relevant documents never retrieved contribute 0, so the denominator counts all of them
    (trec_eval's ``map``; with k, ``map_cut_k``). Undefined (ValueError) without a relevant doc.
    """
    _check_k(k)
    queries = list(queries if queries is not None else qrels)
    out = np.zeros(len(queries), dtype=np.float64)
    for i, qid in enumerate(queries):
        relevant = {d for d, grade in qrels[qid].items() if grade > 0}
        if not relevant:
            raise ValueError(f"query {qid} has no relevant document; average precision is undefined")
        ranking = _ranking(run, qid)
        hits, total = 0, 0.0
        for rank, doc in enumerate(ranking[:k] if k else ranking, start=1):
            if doc in relevant:
                hits += 1
                total += hits / rank
        out[i] = total / len(relevant)
    return out


def judged_at_k(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int,
    queries: Sequence[str] | None = None,
) -> np.ndarray:
    """judged@k(q) = share of the top k of ``run(q)`` that ``qrels(q)`` judges (any grade).

    Pooled judgements (TREC LiveQA-Med's) cover what the pooled systems returned; a ranker that
    surfaces other documents is scored as if they were non-relevant. A low or unequal judged@k
    says a difference in nDCG may be a difference in coverage. The denominator is k.
    """
    _check_k(k)
    queries = list(queries if queries is not None else qrels)
    out = np.zeros(len(queries), dtype=np.float64)
    for i, qid in enumerate(queries):
        judged = qrels.get(qid, {})
        out[i] = sum(d in judged for d in _ranking(run, qid)[:k]) / k
    return out


def condensed(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, list[str]]:
    """``run`` with the unjudged documents removed (Sakai's condensed lists, SIGIR 2007).

    nDCG on condensed lists compares rankers on the documents someone judged only: with
    incomplete judgements it is the fairer comparison of how they order those, though it says
    nothing about the unjudged documents they retrieve instead. Report it next to, not instead
    of, the full-list metric.
    """
    return {qid: [d for d in _ranking(run, qid) if d in qrels.get(qid, {})] for qid in run}


def ranked(run: Mapping[str, Mapping[str, float]]) -> dict[str, list[str]]:
    """``{qid: {doc: score}}`` -> ``{qid: [doc, ...]}`` best first in trec_eval's order, so scores
    match its output: higher score first, then the lexicographically larger doc id. trec_eval holds
    scores in single precision (``float sim``), so scores equal as float32 tie here too."""
    out: dict[str, list[str]] = {}
    for qid, scores in run.items():
        with np.errstate(over="ignore"):  # beyond float32's range a score is inf, there as here
            single = np.asarray(list(scores.values()), dtype=np.float64).astype(np.float32)
        out[qid] = [d for _, d in sorted(zip(single.tolist(), scores, strict=True), reverse=True)]
    return out


_METRICS: dict[str, Callable[..., np.ndarray]] = {
    "recall": recall_at_k,
    "precision": precision_at_k,
    "ndcg": ndcg_at_k,
    "mrr": reciprocal_rank,
    "map": average_precision,
}
_NEEDS_K = ("recall", "precision", "ndcg")


def score_run(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Sequence[str],
    queries: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Per-query arrays for metric names such as ``recall@10``, ``ndcg@10``, ``mrr``, ``map@100``."""
    out: dict[str, np.ndarray] = {}
    for name in metrics:
        base, _, cut = name.partition("@")
        bad_cut = bool(cut) and not (cut.isascii() and cut.isdigit())  # str.isdigit() also takes "²"
        if base not in _METRICS or (base in _NEEDS_K and not cut) or bad_cut:
            known = ", ".join(f"{m}@k" if m in _NEEDS_K else f"{m}[@k]" for m in _METRICS)
            raise ValueError(f"unknown metric {name!r}; use one of: {known}")
        k = int(cut) if cut else None
        out[name] = _METRICS[base](run, qrels, k, queries)
    return out
