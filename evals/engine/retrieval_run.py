"""The retrieval ablation: rank documents for each judged query under each grid cell.

Indexes hold chunks and relevance judgements name documents, so a chunk ranking becomes a
document ranking by each document's best chunk (first occurrence). The LLM reranker, when a
cell asks for it, re-scores the top ``rerank_candidates`` chunks; the rest keep their order
below them. Records carry the ranked document ids with scores, unrounded; the TREC run files
are written from them (:mod:`evals.engine.report.trec_files`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from core.errors import MedciteError
from core.paths import Paths
from core.types import Hit
from evals.engine.conditions import ConditionStats, not_done, run_condition
from evals.engine.config import EvalConfig
from evals.engine.generation_cache import CachingGenerator
from evals.engine.rundir import RunDir
from evals.records import ItemRecord
from rag.indexing import make_retriever, open_index

CHUNKS_PER_DOCUMENT = 3  # chunks fetched per wanted document, so `depth` distinct documents remain


def document_ranking(hits: list[Hit], depth: int) -> list[tuple[str, float]]:
    """Documents in the order of their best chunk, each with that chunk's score."""
    ranked: dict[str, float] = {}
    for hit in hits:
        if hit.chunk.doc_id not in ranked:
            ranked[hit.chunk.doc_id] = float(hit.score)
        if len(ranked) == depth:
            break
    return list(ranked.items())


def rerank_head(reranker: Any, query: str, hits: list[Hit], head: int) -> list[Hit]:
    """Rerank the first ``head`` hits; the tail follows, scored below every reranked hit."""
    top = reranker.rerank(query, hits[:head])
    floor = min((h.score for h in top), default=0.0)
    tail = [Hit(h.chunk, floor - 1.0 - n, len(top) + n + 1, h.retriever) for n, h in enumerate(hits[head:])]
    return [*top, *tail]


def run_retrieval(
    config: EvalConfig,
    paths: Paths,
    run: RunDir,
    generator: CachingGenerator | None,
    sets: dict[str, Any],
    summary: Any,
    progress: bool,
) -> None:

    g = config.retrieval_grid
    done = run.done_keys()
    for cell in config.retrieval_conditions():
        name = f"retrieval/{cell['name']}"
        limit = g.rerank_n if cell["rerank"] == "llm" else None  # the trained reranker runs on every query
        items = [
            (ds, qid, text)
            for ds, rset in sets.items()
            if cell["index"] in config.retrieval_indexes(ds)
            for qid, text in list(rset.queries.items())[:limit]
        ]
        stats = summary.conditions.setdefault(name, ConditionStats())
        todo = not_done(items, [(name, ds, qid) for ds, qid, _ in items], done, stats)
        if todo:
            run_condition(
                todo,
                partial(_searcher, cell, config, paths, generator),
                partial(_record, name=name, depth=g.depth),
                run,
                stats,
                generator=generator,
                failed=lambda r: r.error is not None,
                desc=name,
                progress=progress,
            )


Search = Callable[[str], list[Hit]]


@contextmanager
def _searcher(
    cell: dict[str, Any], config: EvalConfig, paths: Paths, generator: CachingGenerator | None
) -> Iterator[Search]:
    """The cell's retrieval (and reranking of the head) over its index, open while in use."""
    from rag.rerank.cache import ScoreCache
    from rag.rerank.llm import LlmRelevanceReranker

    g = config.retrieval_grid
    index, embedder = open_index(paths, cell["index"], with_embedder=cell["mode"] != "bm25")
    try:
        retriever = make_retriever(index, embedder, cell["mode"], candidates=g.depth * CHUNKS_PER_DOCUMENT)
        reranker: Any = None
        if cell["rerank"] == "trained":
            from rag.rerank.trained import TrainedReranker

            reranker = TrainedReranker()
        elif cell["rerank"] == "llm":
            if generator is None:
                raise MedciteError("the llm reranker needs a generator; check the config's profile")
            reranker = LlmRelevanceReranker(generator, cache=ScoreCache(paths.cache_dir / "rerank.sqlite"))

        def search(text: str) -> list[Hit]:
            hits = retriever.retrieve(text, g.depth * CHUNKS_PER_DOCUMENT)
            return hits if reranker is None else rerank_head(reranker, text, hits, g.rerank_candidates)

        yield search
    finally:
        index.close()


def _record(search: Search, item: tuple[str, str, str], name: str, depth: int) -> ItemRecord:
    ds, qid, text = item
    t0 = time.perf_counter()
    try:
        hits = search(text)
    except MedciteError as exc:
        return ItemRecord(dataset=ds, qid=qid, condition=name, error=f"{type(exc).__name__}: {exc}")
    return ItemRecord(
        dataset=ds,
        qid=qid,
        condition=name,
        retrieved=tuple(document_ranking(hits, depth)),
        latency_s=round(time.perf_counter() - t0, 4),
    )
