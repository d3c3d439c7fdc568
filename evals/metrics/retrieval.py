"""Retrieval metrics as pure functions over plain run/qrels dicts.

``run``: ``{query_id: [doc_id, ...]}`` ranked best first. ``qrels``: ``{query_id: {doc_id: grade}}``
with grade > 0 meaning relevant. Each function returns one value per query, in the order of
``queries``; the caller aggregates (mean, confidence interval, paired tests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
