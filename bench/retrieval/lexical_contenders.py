"""The BM25 contenders, built from the same texts and tokens, and their ranking agreement.

Each contender can search (query -> ranked chunk ids) and score (query -> one score per row,
rows in the sample's order), so agreement can be judged with ties allowed for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.common import overlap_at_k, same_top_k_up_to_ties
from bench.retrieval import corpus
from bench.retrieval.materialize import bench_dir
from core.paths import Paths
from indexes import text
from indexes.bm25 import Bm25Params, Bm25sIndex

K = 10
PARAMS = Bm25Params()


@dataclass
class Contender:
    search: Callable[[str], list[str]]
    scores: Callable[[str], np.ndarray]


def real_inputs(size: str) -> tuple[list[str], list[str]]:
    """Chunk ids and indexed texts (title, section, body) of a real sample, in index row order."""
    from core.types import Chunk

    pool = corpus.load_pool(Paths.from_env().indexes_dir, bench_dir())
    rows = corpus.sample_rows(pool.size, corpus.chunk_count(size))
    chunks = [Chunk.from_json(json.loads(line)) for line in pool.lines(rows)]
    return [c.chunk_id for c in chunks], [text.indexed_text(c.title, c.section, c.text) for c in chunks]


def bm25s_scores(index: Bm25sIndex, query: str) -> np.ndarray:
    """bm25s's score for every row (the benchmark may look inside; library code never does)."""
    model = index._model
    ids = model.get_tokens_ids(text.tokenize(query))
    if not ids:
        return np.zeros(int(model.scores["num_docs"]), dtype=np.float32)
    return np.asarray(model.get_scores_from_ids(ids))


def build(name: str, texts: list[str], ids: list[str], tokens: list[list[str]] | None = None) -> Contender:
    """Contender ``name`` over ``texts``; ``tokens`` (precomputed) skips tokenizing.

    LangChain always tokenizes the texts itself (through ``preprocess_func``).
    """
    if name == "langchain-bm25":
        from langchain_community.retrievers import BM25Retriever

        bm25_params = {"k1": PARAMS.k1, "b": PARAMS.b}
        retriever = BM25Retriever.from_texts(
            texts, ids=ids, preprocess_func=text.tokenize, bm25_params=bm25_params, k=K
        )
        return Contender(
            search=lambda q: [str(d.id) for d in retriever.invoke(q)],
            scores=lambda q: retriever.vectorizer.get_scores(text.tokenize(q)),
        )
    tokens = tokens if tokens is not None else [text.tokenize(t) for t in texts]
    if name == "rank-bm25":
        from rank_bm25 import BM25Okapi

        okapi = BM25Okapi(tokens, k1=PARAMS.k1, b=PARAMS.b)
        return Contender(
            search=lambda q: [
                ids[i] for i in np.argsort(-okapi.get_scores(text.tokenize(q)), kind="stable")[:K]
            ],
            scores=lambda q: okapi.get_scores(text.tokenize(q)),
        )
    if name in {"bm25s-build", "bm25s-robertson"}:
        method = "robertson" if name == "bm25s-robertson" else PARAMS.method
        index = Bm25sIndex.build(tokens, Bm25Params(k1=PARAMS.k1, b=PARAMS.b, method=method))
        return Contender(
            search=lambda q: [ids[r] for r in index.search(text.tokenize(q), K)[0]],
            scores=lambda q: bm25s_scores(index, q),
        )
    raise ValueError(f"unknown contender {name}")


def agreement(
    results: dict[str, list[list[str]]],
    scorers: dict[str, Callable[[str], np.ndarray]],
    queries: Sequence[str],
    row_of: dict[str, int],
    pairs: list[tuple[str, str]],
) -> dict[str, Any]:
    """Per pair: share of queries with the same top-10 set, the same up to ties, mean overlap@10."""
    scores = {name: [np.asarray(fn(q), dtype=np.float64) for q in queries] for name, fn in scorers.items()}
    out = {}
    for a, b in pairs:
        strict, tied, overlaps = [], [], []
        for i, (x, y) in enumerate(zip(results[a], results[b], strict=True)):
            rows_x, rows_y = [row_of[c] for c in x], [row_of[c] for c in y]
            strict.append(set(x) == set(y))
            tied.append(same_top_k_up_to_ties(rows_x, rows_y, scores[a][i], scores[b][i], K))
            overlaps.append(overlap_at_k(x, y, K))
        out[f"{a} vs {b}"] = {
            "queries": len(strict),
            "identical_top10_share": round(float(np.mean(strict)), 4),
            "identical_up_to_ties_share": round(float(np.mean(tied)), 4),
            "mean_overlap_at_10": round(float(np.mean(overlaps)), 4),
        }
    return out
