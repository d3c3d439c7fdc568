"""Lexical: medcite's BM25 (bm25s) vs rank-bm25 vs LangChain's BM25Retriever, same tokens.

All three get the tokens of ``indexes.text`` (LangChain through ``preprocess_func``) and
k1 = 1.2, b = 0.75; what still differs is the idf flavour (bm25s ``lucene``:
``log(1 + (N - n + 0.5) / (n + 0.5))``; rank-bm25's Okapi: ``log((N - n + 0.5) / (n + 0.5))``
with negative values floored at 0.25 x the mean idf). A bm25s ``robertson`` index (Okapi idf,
no floor) is added to the agreement check to show how much of the disagreement that explains.

medcite is timed through ``Bm25Retriever.retrieve`` (query tokenized, chunks read from disk);
the others return their in-memory documents. Latency is interleaved per query in one process;
memory and build time come from one child process per contender.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    PeakSampler,
    child_entry,
    interleaved,
    record_serving,
    rss_mb,
    run_child,
    set_threads,
    summarize,
)
from bench.retrieval import corpus
from bench.retrieval.lexical_contenders import (
    PARAMS,
    Contender,
    K,
    agreement,
    bm25s_scores,
    build,
    real_inputs,
)
from bench.retrieval.materialize import bench_dir, folders, open_bench_index
from core.paths import Paths
from indexes import text
from indexes.bm25 import Bm25sIndex
from indexes.chunkstore import ChunkStore
from indexes.store import LoadedIndex

SLOW = ("rank-bm25", "langchain-bm25")


def child(args: dict[str, Any]) -> dict[str, Any]:
    """One contender alone: RSS after imports, build from texts (tokenizing included, timed, peak
    sampled) or load from disk, then serving RSS after its inputs are dropped and queries ran."""
    set_threads(1)
    name, size = args["contender"], args["size"]
    queries = corpus.questions(args["queries"])
    base = rss_mb()
    out: dict[str, Any] = {"contender": name, "rss_after_imports_mb": round(base, 1)}
    t0 = time.perf_counter()
    serve: Callable[[str], Any]
    if name == "bm25s-load":  # what a server holds: the memory-mapped index and the chunk store
        with PeakSampler() as sampler:
            folder = folders(size)[0]
            index, chunks = Bm25sIndex.load(folder / "bm25", PARAMS, mmap=True), ChunkStore(folder)
        out["load_s"] = round(time.perf_counter() - t0, 3)
        serve = lambda q: [chunks.get(int(r)) for r in index.search(text.tokenize(q), K)[0]]  # noqa: E731
    else:
        ids, texts = real_inputs(size)
        out["rss_inputs_mb"] = round(rss_mb(), 1)
        t0 = time.perf_counter()
        with PeakSampler() as sampler:
            tokens = None
            if name != "langchain-bm25":  # LangChain tokenizes inside its build
                tokens = [text.tokenize(t) for t in texts]
                out["tokenize_s"] = round(time.perf_counter() - t0, 2)
            serve = build(name, texts, ids, tokens).search
        out["build_s"] = round(time.perf_counter() - t0, 2)
        del ids, texts, tokens
        gc.collect()
    return record_serving(out, serve, queries, sampler.peak_mb, base)


def load_times(folder: Path, repeats: int = 3) -> dict[str, float]:
    """Median seconds to load the saved bm25s index, memory-mapped and fully read (warm page cache)."""
    out = {}
    for mmap in (True, False):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            Bm25sIndex.load(folder, PARAMS, mmap=mmap)
            times.append(time.perf_counter() - t0)
        out["mmap" if mmap else "read"] = round(statistics.median(times), 4)
    return out


def bytes_per_query(index: Bm25sIndex, queries: list[str]) -> list[int]:
    """Bytes a bm25s query must touch: its tokens' score columns (value + row id) and the score array."""
    model = index._model  # the benchmark may look inside; library code never does
    indptr, n_docs = np.asarray(model.scores["indptr"]), int(model.scores["num_docs"])
    per_entry = model.scores["data"].itemsize + model.scores["indices"].itemsize
    out = []
    for q in queries:
        nnz = sum(int(indptr[i + 1] - indptr[i]) for i in model.get_tokens_ids(text.tokenize(q)))
        out.append(nnz * per_entry + 2 * 4 * n_docs)  # + writing and reading float32 scores
    return out


def run(size: str, *, n_queries: int, n_slow: int, bandwidth_gbps: float) -> dict[str, Any]:
    """Interleaved latency, agreement, load times, per-contender memory and the scan floor at ``size``."""
    from rag.retrieve.lexical import Bm25Retriever

    threads = set_threads(1)
    folder, inputs = folders(size)
    real = json.loads((inputs / "build.json").read_text())["spec"]["synthetic_chunks"] == 0
    queries = corpus.questions(n_queries)
    index, _ = open_bench_index(folder, with_embedder=False)
    retriever = Bm25Retriever(index)
    medcite = Contender(
        search=lambda q: [h.chunk.chunk_id for h in retriever.retrieve(q, K)],
        scores=lambda q: bm25s_scores(index.lexical, q),  # type: ignore[arg-type]
    )
    contenders = {"medcite-bm25s": medcite}
    if real:  # rank-bm25 and LangChain at 1M: minutes per build, seconds per query; skipped
        ids, slow, robertson = _slow_contenders(size, folder, index)
        contenders |= slow
    search = {name: c.search for name, c in contenders.items()}
    for q in queries[:3]:  # warm-up: page cache, lazy imports
        for fn in search.values():
            fn(q)
    paired_ms, results = interleaved(search, queries[:n_slow])
    all_ms, _ = interleaved({"medcite-bm25s": medcite.search}, queries)
    out: dict[str, Any] = {
        "size": size,
        "chunks": len(index.chunks),
        "k": K,
        "params": asdict(PARAMS),
        "threads": threads,
        "queries": {"set": "MedQuAD questions, seed 0", "all": len(queries), "paired": n_slow},
        "latency_paired": {name: summarize(ms) for name, ms in paired_ms.items()},
        "latency_all_queries": {"medcite-bm25s": summarize(all_ms["medcite-bm25s"])},
        "load_seconds_bm25s": load_times(folder / "bm25"),
    }
    out["ratios_vs_medcite"] = _ratios_vs_medcite(out["latency_paired"])
    if real:
        results["bm25s-robertson"] = [robertson.search(q) for q in queries[:n_slow]]
        scorers = {name: c.scores for name, c in (contenders | {"bm25s-robertson": robertson}).items()}
        out["agreement"] = _agreement(results, scorers, queries[:n_slow], ids)
    out["floor"] = _floor(index, queries, bandwidth_gbps)
    names = ["bm25s-build", *SLOW, "bm25s-load"] if real else ["bm25s-load"]
    out["memory"] = {
        n: run_child("bench.retrieval.lexical", {"contender": n, "size": size, "queries": n_slow})
        for n in names
    }
    out["raw_ms"] = {
        "paired": {n: [round(x, 3) for x in ms] for n, ms in paired_ms.items()},
        "medcite_all": [round(x, 3) for x in all_ms["medcite-bm25s"]],
    }
    index.close()
    return out


def _slow_contenders(
    size: str, folder: Path, index: LoadedIndex
) -> tuple[list[str], dict[str, Contender], Contender]:
    """(the sample's chunk ids, rank-bm25 and LangChain built from its texts, a bm25s ``robertson``
    index of the same tokens); the tokens are the pool's, made once."""
    ids, texts = real_inputs(size)
    if len(ids) != len(index.chunks) or index.chunks.get(0).chunk_id != ids[0]:
        raise RuntimeError(
            f"{folder} rows differ from the sample; rebuild it (bench.retrieval.materialize --rebuild)"
        )
    pool = corpus.load_pool(Paths.from_env().indexes_dir, bench_dir())
    tokens = pool.tokens(corpus.sample_rows(pool.size, len(ids)))  # = tokenize(texts), made once
    slow = {name: build(name, texts, ids, tokens) for name in SLOW}
    return ids, slow, build("bm25s-robertson", texts, ids, tokens)


def _ratios_vs_medcite(latency: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """How many times slower than medcite each other contender is (median, p95, throughput)."""
    base = latency["medcite-bm25s"]
    return {
        name: {
            "median_ratio": round(row["median_ms"] / base["median_ms"], 1),
            "p95_ratio": round(row["p95_ms"] / base["p95_ms"], 1),
            "throughput_ratio": round(base["qps"] / row["qps"], 1),
        }
        for name, row in latency.items()
        if name != "medcite-bm25s"
    }


def _agreement(
    results: dict[str, list[list[str]]],
    scorers: dict[str, Callable[[str], np.ndarray]],
    queries: list[str],
    ids: list[str],
) -> dict[str, Any]:
    """Top-10 agreement of medcite, rank-bm25, LangChain and the Okapi-idf bm25s, pair by pair."""
    pairs = [("medcite-bm25s", "rank-bm25"), ("medcite-bm25s", "langchain-bm25")]
    pairs += [("rank-bm25", "langchain-bm25"), ("bm25s-robertson", "rank-bm25")]
    row_of = {cid: n for n, cid in enumerate(ids)}
    return agreement(results, scorers, queries, row_of, pairs)


def _floor(index: LoadedIndex, queries: list[str], bandwidth_gbps: float) -> dict[str, Any]:
    """The median bytes a query touches and the time copying them takes at ``bandwidth_gbps``."""
    scanned = bytes_per_query(index.lexical, queries)  # type: ignore[arg-type]
    return {
        "median_bytes_per_query": int(np.median(scanned)),
        "copy_bandwidth_gbps": bandwidth_gbps,
        "median_floor_ms": round(float(np.median(scanned)) / (bandwidth_gbps * 1e9) * 1000, 3),
    }


if __name__ == "__main__" and not child_entry(sys.argv[1:], child):
    raise SystemExit("run through bench.run_all (or with --child '<json>')")
