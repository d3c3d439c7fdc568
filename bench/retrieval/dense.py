"""Dense: FAISS exact vs HNSW (vs IVF-PQ at 1M), and medcite's DenseIndex vs LangChain's FAISS store.

Every contender gets the same query vectors (real MedQuAD questions, embedded once) and returns
chunk ids with their documents: medcite reads the chunks from its on-disk store, LangChain from
its in-memory docstore. LangChain's store is built with ``FAISS.from_embeddings`` on the same
vectors and never saved or loaded: its ``load_local`` unpickles the docstore, which medcite
forbids (a pickle can run code). Recall@10 of each approximate index is measured against the
exact search; latency is interleaved per query with 1 faiss thread; memory per contender comes
from a child process.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.common import (
    PeakSampler,
    child_entry,
    interleaved,
    recall_of_approximate,
    record_serving,
    rss_mb,
    run_child,
    set_threads,
    summarize,
)
from bench.retrieval import corpus
from bench.retrieval.materialize import bench_dir, folders
from indexes.chunkstore import ChunkStore
from indexes.dense.index import DenseIndex, DenseParams

K = 10
IVFPQ = {"nlist": 1024, "m": 96, "nbits": 8, "nprobe": 32, "train": 40_960}
EF_SEARCH_SWEEP = (32, 64, 128, 256)
NPROBE_SWEEP = (8, 32, 128)


def rows_of(index: Any, query: np.ndarray, k: int = K) -> list[int]:
    """Top-``k`` rows of a medcite DenseIndex or a raw faiss index, best first."""
    if isinstance(index, DenseIndex):
        return [int(r) for r in index.search(query, k)[0]]
    _, rows = index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), k)
    return [int(r) for r in rows[0] if r >= 0]


def query_vectors() -> np.ndarray:
    """The benchmark questions embedded once by the default embedder (cached as .npy)."""
    path = bench_dir() / "query_vectors.npy"
    questions = corpus.questions(corpus.QUESTIONS)
    key = bench_dir() / "query_vectors.json"
    if path.is_file() and key.is_file() and json.loads(key.read_text()) == questions:
        return np.load(path, allow_pickle=False)
    from indexes.dense.embedder import MiniLmEmbedder

    vectors = MiniLmEmbedder(threads=1).embed(questions)
    np.save(path, vectors, allow_pickle=False)
    key.write_text(json.dumps(questions))
    return vectors


def vectors_of(size: str) -> np.ndarray:
    return np.load(folders(size)[1] / "vectors.npy", mmap_mode="r", allow_pickle=False)


def build_ivfpq(vectors: np.ndarray) -> Any:
    """IVF-PQ over inner product: 1,024 lists, 96 sub-quantizers of 8 bits (96 bytes per vector, 16x less)."""
    import faiss

    quantizer = faiss.IndexFlatIP(vectors.shape[1])
    index = faiss.IndexIVFPQ(
        quantizer, vectors.shape[1], IVFPQ["nlist"], IVFPQ["m"], IVFPQ["nbits"], faiss.METRIC_INNER_PRODUCT
    )
    sample = np.random.default_rng(0).choice(
        len(vectors), size=min(IVFPQ["train"], len(vectors)), replace=False
    )
    index.train(np.ascontiguousarray(vectors[np.sort(sample)], dtype=np.float32))
    for start in range(0, len(vectors), 100_000):
        index.add(np.ascontiguousarray(vectors[start : start + 100_000], dtype=np.float32))
    index.nprobe = IVFPQ["nprobe"]
    return index


def chunk_texts(size: str) -> tuple[list[str], list[str]]:
    store = ChunkStore(folders(size)[0])
    try:
        pairs = [(c.chunk_id, c.text) for c in store]
    finally:
        store.close()
    return [p[0] for p in pairs], [p[1] for p in pairs]


def langchain_store(texts: list[str], ids: list[str], vectors: np.ndarray) -> Any:
    from langchain_community.vectorstores import FAISS
    from langchain_community.vectorstores.utils import DistanceStrategy
    from langchain_core.embeddings import Embeddings

    class Precomputed(Embeddings):
        """Queries arrive as vectors here; embedding text is not what is measured."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise NotImplementedError("the benchmark passes vectors")

        def embed_query(self, text: str) -> list[float]:
            raise NotImplementedError("the benchmark passes vectors")

    pairs = zip(texts, np.asarray(vectors, dtype=np.float32), strict=True)
    return FAISS.from_embeddings(
        pairs, Precomputed(), ids=ids, distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT
    )


def child(args: dict[str, Any]) -> dict[str, Any]:
    """One dense contender alone: build or load (timed, peak sampled), then serving RSS."""
    import faiss

    threads = set_threads(os.cpu_count() or 1)  # builds use every core, queries one (below)
    name, size = args["contender"], args["size"]
    folder, inputs = folders(size)
    queries = query_vectors()[: args["queries"]]
    base = rss_mb()
    out: dict[str, Any] = {"contender": name, "rss_after_imports_mb": round(base, 1)}
    t0 = time.perf_counter()
    with PeakSampler() as sampler:
        if name == "langchain-faiss":
            ids, texts = chunk_texts(size)
            store = langchain_store(texts, ids, vectors_of(size))
            del ids, texts
            search = lambda q: [d.id for d in store.similarity_search_by_vector(q, k=K)]  # noqa: E731
        else:
            chunks = ChunkStore(folder)
            if name == "medcite-flat":
                index = DenseIndex.build(vectors_of(size), DenseParams(kind="flat"))
            elif name == "medcite-hnsw":
                index = DenseIndex.load(folder / "dense")
            else:  # IVF-PQ is not a medcite index kind: raw faiss, saved for the main process
                index = build_ivfpq(vectors_of(size))
                faiss.write_index(index, str(inputs / "ivfpq.faiss"))
            search = lambda q: [chunks.get(r).chunk_id for r in rows_of(index, q)]  # noqa: E731
    out["build_or_load_s"] = round(time.perf_counter() - t0, 2)
    out["build_threads"] = threads
    set_threads(1)
    gc.collect()
    return record_serving(out, search, queries, sampler.peak_mb, base)


def sweep(
    index: Any, knob: str, values: tuple[int, ...], queries: np.ndarray, exact: list[list[int]]
) -> list:
    """Recall@10 and median latency for each setting of ``efSearch`` (HNSW) or ``nprobe`` (IVF)."""
    import faiss

    raw = index._index if isinstance(index, DenseIndex) else index
    rows = []
    for value in values:
        if knob == "efSearch":
            raw.hnsw.efSearch = value
        else:
            raw.nprobe = value
        for q in queries[:10]:  # warm-up: the exact scans before flushed the caches
            rows_of(raw, q)
        stats: Any = faiss.cvar.hnsw_stats  # type: ignore[attr-defined]
        stats.reset()
        ms, found = [], []
        for q in queries:
            t0 = time.perf_counter()
            found.append(rows_of(raw, q))
            ms.append(1000 * (time.perf_counter() - t0))
        rows.append(
            {
                knob: value,
                "recall_at_10": round(float(np.mean(recall_of_approximate(found, exact, K))), 4),
                **summarize(ms),
                "distances_per_query": int(stats.ndis / len(queries)) if knob == "efSearch" else None,
            }
        )
    return rows


def run(size: str, *, n_queries: int, bandwidth_gbps: float, ivfpq: bool) -> dict[str, Any]:
    """Interleaved latency, recall against exact, sweeps, per-contender memory and floors at ``size``."""
    threads = set_threads(1)
    folder, inputs = folders(size)
    queries = query_vectors()[:n_queries]
    names = ["medcite-flat", "medcite-hnsw", "langchain-faiss"] + (["faiss-ivfpq"] if ivfpq else [])
    memory = {
        n: run_child("bench.retrieval.dense", {"contender": n, "size": size, "queries": 50}) for n in names
    }
    chunks = ChunkStore(folder)
    vectors = vectors_of(size)
    indexes = _indexes(size, vectors, ivfpq)
    contenders = _contenders(size, vectors, indexes, chunks)
    for q in queries[:3]:
        for fn in contenders.values():
            fn(q)
    ms, results = interleaved(contenders, queries)
    exact_rows, exact_ms = _exact_search(indexes["medcite-flat"], queries)
    out: dict[str, Any] = {
        "size": size,
        "chunks": indexes["medcite-flat"].size,
        "k": K,
        "threads": threads,
        "hnsw": json.loads((folder / "dense" / "medcite_dense.json").read_text()),
        "ivfpq": IVFPQ if ivfpq else None,
        "queries": {"set": "MedQuAD questions embedded by all-MiniLM-L6-v2, seed 0", "n": len(queries)},
        "latency": {name: summarize(t) for name, t in ms.items()},
        "exact_search_only": summarize(exact_ms),
        "recall_at_10_vs_exact": {
            name: round(float(np.mean(recall_of_approximate(results[name], results["medcite-flat"], K))), 4)
            for name in contenders
            if name != "medcite-flat"
        },
        "build_seconds": {
            "medcite-hnsw": json.loads((inputs / "build.json").read_text())["seconds"]["hnsw"],
            **{name: row["build_or_load_s"] for name, row in memory.items() if name != "medcite-hnsw"},
        },
        "build_note": "hnsw: timed by bench.retrieval.materialize; others: in their child; all cores",
        "memory": memory,
        "sweeps": {
            "hnsw_ef_search": sweep(indexes["medcite-hnsw"], "efSearch", EF_SEARCH_SWEEP, queries, exact_rows)
        },
    }
    if ivfpq:
        out["sweeps"]["ivfpq_nprobe"] = sweep(
            indexes["faiss-ivfpq"], "nprobe", NPROBE_SWEEP, queries, exact_rows
        )
    out["ratios_vs_medcite_flat"] = _ratios_vs_flat(out["latency"])
    out["floor"] = _floor(out, indexes["medcite-flat"].dim, bandwidth_gbps)
    out["raw_ms"] = {name: [round(x, 3) for x in t] for name, t in ms.items()}
    chunks.close()
    return out


def _indexes(size: str, vectors: np.ndarray, ivfpq: bool) -> dict[str, Any]:
    """The exact index built from the vectors, the HNSW index of the folder, and the IVF-PQ index
    its child saved."""
    import faiss

    folder, inputs = folders(size)
    indexes: dict[str, Any] = {
        "medcite-flat": DenseIndex.build(vectors, DenseParams(kind="flat")),
        "medcite-hnsw": DenseIndex.load(folder / "dense"),
    }
    if ivfpq:
        indexes["faiss-ivfpq"] = faiss.read_index(str(inputs / "ivfpq.faiss"))
        indexes["faiss-ivfpq"].nprobe = IVFPQ["nprobe"]
    return indexes


def _contenders(
    size: str, vectors: np.ndarray, indexes: dict[str, Any], chunks: ChunkStore
) -> dict[str, Callable[[np.ndarray], list[str]]]:
    """Query vector -> the top-K chunk ids, for each index (chunks read from the store) and for
    LangChain's FAISS store (built here, ids from its docstore)."""
    ids, texts = chunk_texts(size)
    store = langchain_store(texts, ids, vectors)
    del ids, texts

    def medcite(index: Any) -> Callable[[np.ndarray], list[str]]:
        return lambda q: [chunks.get(r).chunk_id for r in rows_of(index, q)]

    contenders = {name: medcite(index) for name, index in indexes.items()}
    contenders["langchain-faiss"] = lambda q: [d.id for d in store.similarity_search_by_vector(q, k=K)]
    return contenders


def _exact_search(index: DenseIndex, queries: np.ndarray) -> tuple[list[list[int]], list[float]]:
    """The exact search alone (no chunk reads), the reference for recall: rows and milliseconds."""
    exact_rows, exact_ms = [], []
    for q in queries:
        t0 = time.perf_counter()
        exact_rows.append(rows_of(index, q))
        exact_ms.append(1000 * (time.perf_counter() - t0))
    return exact_rows, exact_ms


def _ratios_vs_flat(latency: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    base = latency["medcite-flat"]
    return {
        name: {
            "median_ratio": round(row["median_ms"] / base["median_ms"], 3),
            "qps_ratio": round(row["qps"] / base["qps"], 3),
        }
        for name, row in latency.items()
    }


def _floor(out: dict[str, Any], dim: int, bandwidth_gbps: float) -> dict[str, Any]:
    """Bytes an exact search and an HNSW search (at the folder's efSearch) read, and the time
    copying them takes at ``bandwidth_gbps``."""
    n = out["chunks"]
    ef_default = next(r for r in out["sweeps"]["hnsw_ef_search"] if r["efSearch"] == out["hnsw"]["ef_search"])
    return {
        "copy_bandwidth_gbps": bandwidth_gbps,
        "exact_bytes_per_query": n * dim * 4,
        "exact_floor_ms": round(n * dim * 4 / (bandwidth_gbps * 1e9) * 1000, 3),
        "hnsw_bytes_per_query": ef_default["distances_per_query"] * dim * 4,
        "hnsw_floor_ms": round(
            ef_default["distances_per_query"] * dim * 4 / (bandwidth_gbps * 1e9) * 1000, 4
        ),
    }


if __name__ == "__main__" and not child_entry(sys.argv[1:], child):
    raise SystemExit("run through bench.run_all (or with --child '<json>')")
