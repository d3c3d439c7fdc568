"""Hybrid retrieval end to end at each size, and the memory of a process that serves it.

``rag.indexing.make_retriever(index, embedder, "hybrid")`` over a benchmark folder loaded with
the project's loader: query embedding (all-MiniLM-L6-v2, 1 torch thread), BM25 and dense
candidates (50 each), RRF fusion, chunks read from disk. The same index runs with its HNSW
graph and with an exact flat index (medcite's default kind), interleaved per query; the stages
are timed on their own in a second interleaved pass.

The serving child is a fresh process that loads the folder (checksums verified, as
``medcite`` does), loads the embedder and answers queries; its RSS is what a 1M-chunk
deployment needs.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import numpy as np

from bench.common import (
    PeakSampler,
    child_entry,
    interleaved,
    overlap_at_k,
    rss_mb,
    run_child,
    set_threads,
    summarize,
)
from bench.retrieval import corpus
from bench.retrieval.dense import vectors_of
from bench.retrieval.materialize import folders, open_bench_index
from indexes import text
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.index import DenseIndex, DenseParams
from indexes.store import load_index
from rag.indexing import make_retriever

K = 10
CANDIDATES = 50


def serve_child(args: dict[str, Any]) -> dict[str, Any]:
    """A fresh process: load index + embedder, serve hybrid queries; RSS after each step."""
    set_threads(1)
    queries = corpus.questions(args["queries"])
    out: dict[str, Any] = {"rss_after_imports_mb": round(rss_mb(), 1)}
    with PeakSampler() as sampler:
        t0 = time.perf_counter()
        embedder = MiniLmEmbedder(threads=1)
        fingerprint = embedder.fingerprint()  # loads the model and hashes its weights
        set_threads(1)  # torch is imported now
        out["embedder_load_s"] = round(time.perf_counter() - t0, 2)
        out["rss_after_embedder_mb"] = round(rss_mb(), 1)
        t0 = time.perf_counter()
        index = load_index(folders(args["size"])[0], embedder_fingerprint=fingerprint)  # checksums on
        out["index_load_s_incl_checksums"] = round(time.perf_counter() - t0, 2)
        out["rss_after_index_load_mb"] = round(rss_mb(), 1)
        retriever = make_retriever(index, embedder, "hybrid", candidates=CANDIDATES)
        ms = []
        for q in queries:
            t0 = time.perf_counter()
            retriever.retrieve(q, K)
            ms.append(1000 * (time.perf_counter() - t0))
    out["rss_serving_mb"] = round(rss_mb(), 1)
    out["peak_rss_mb"] = round(sampler.peak_mb, 1)
    out["latency"] = summarize(ms)
    index.close()
    return out


def _ids(retriever: Any) -> Any:
    return lambda q: [h.chunk.chunk_id for h in retriever.retrieve(q, K)]


def run(size: str, *, n_queries: int) -> dict[str, Any]:
    """Hybrid over HNSW and over flat, interleaved; then the stages; then the serving child."""
    folder, _ = folders(size)
    queries = corpus.questions(n_queries)
    index, embedder = open_bench_index(folder, with_embedder=True)
    embedder.embed(["warm up"])
    threads = set_threads(1)
    flat = dataclasses.replace(index, dense=DenseIndex.build(vectors_of(size), DenseParams(kind="flat")))
    retrievers = {
        "hybrid-hnsw": make_retriever(index, embedder, "hybrid", candidates=CANDIDATES),
        "hybrid-flat": make_retriever(flat, embedder, "hybrid", candidates=CANDIDATES),
    }
    contenders = {name: _ids(r) for name, r in retrievers.items()}
    for q in queries[:5]:
        for fn in contenders.values():
            fn(q)
    ms, results = interleaved(contenders, queries)
    vectors = {q: embedder.embed([q])[0] for q in queries}
    rows = {
        q: set(index.lexical.search(text.tokenize(q), CANDIDATES)[0].tolist())
        | set(index.dense.search(vectors[q], CANDIDATES)[0].tolist())  # type: ignore[union-attr]
        for q in queries
    }
    stages = {
        "query embedding": lambda q: embedder.embed([q]),
        "bm25 top-50 (tokenize + search)": lambda q: index.lexical.search(text.tokenize(q), CANDIDATES),
        "hnsw top-50 (vector given)": lambda q: index.dense.search(vectors[q], CANDIDATES),  # type: ignore[union-attr]
        "flat top-50 (vector given)": lambda q: flat.dense.search(vectors[q], CANDIDATES),  # type: ignore[union-attr]
        "read the candidate chunks": lambda q: [index.chunks.get(int(r)) for r in rows[q]],
    }
    stage_ms, _ = interleaved(stages, queries)
    overlaps = [
        overlap_at_k(a, b, K) for a, b in zip(results["hybrid-hnsw"], results["hybrid-flat"], strict=True)
    ]
    out: dict[str, Any] = {
        "size": size,
        "chunks": len(index.chunks),
        "k": K,
        "candidates_per_retriever": CANDIDATES,
        "fusion": "rrf, k=60",
        "threads": threads,
        "queries": {"set": "MedQuAD questions, seed 0", "n": len(queries)},
        "latency": {n: summarize(t) for n, t in ms.items()},
        "stages": {n: summarize(t) for n, t in stage_ms.items()},
        "hnsw_vs_flat_top10_overlap": round(float(np.mean(overlaps)), 4),
        "serving_process": run_child(
            "bench.retrieval.hybrid", {"size": size, "queries": n_queries}, timeout_s=1200
        ),
        "raw_ms": {n: [round(x, 3) for x in t] for n, t in ms.items()},
    }
    index.close()
    return out


if __name__ == "__main__" and not child_entry(sys.argv[1:], serve_child):
    raise SystemExit("run through bench.run_all (or with --child '<json>')")
