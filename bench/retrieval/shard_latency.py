"""Sharded search at a benchmark size: 1 shard vs N shards, the shards one after another vs in parallel.

The corpus is the benchmark's (``bench/retrieval/corpus.py``; 1M = the ~124k real chunks plus
synthetic ones) in its folder from ``bench/retrieval/materialize.py``, built here with a flat
dense index (exact search is what is compared; the other benchmarks' HNSW folder is rebuilt when
they run, and this one reuses theirs only if it is flat): its bm25s and flat indexes are the
unsharded ones. The sharded copy is
written next to it by the project's own writer (``indexes.shards.write_shards``: BM25 re-scored
per shard with global statistics, one flat FAISS file per shard) from the same tokens and vectors,
made again from the corpus seeds (the vectors are checked against the folder's), with a manifest,
and loaded with ``indexes.store.load_index``; a 1-shard copy of the BM25 (the same shard code,
one shard) separates the cost of the shard format from that of sharding.

Every contender answers the 200 MedQuAD questions of the other benchmarks, interleaved per query
(rotating order): BM25 (tokenize + top 10), dense flat (query vector given, top 10) and hybrid
(``make_retriever(..., "hybrid")``: query embedding on 1 torch thread, 50 candidates from each,
RRF, chunks read). Main-thread FAISS runs on 1 thread (``set_threads(1)``); the parallel shards
use the default pool (one thread per usable CPU, at most one per shard; each worker's FAISS on one
thread). Before timing, every sharded top 10 is compared with the unsharded one. The machine is
shared: the load average before and after is recorded.

    medcite bench shard-latency --size 1M --shards 8   # -> docs/results/bench/shard_latency_1M.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import RESULTS_DIR, interleaved, set_threads, summarize, write_result
from bench.retrieval import corpus
from bench.retrieval.dense import query_vectors, vectors_of
from bench.retrieval.materialize import (
    bench_dir,
    ensure,
    folders,
    open_bench_index,
    tokens_and_vectors,
)
from core.paths import Paths
from indexes import text
from indexes.bm25 import Bm25Params
from indexes.chunkstore import CHUNKS_FILE, OFFSETS_FILE
from indexes.dense.index import DenseIndex, DenseParams
from indexes.manifest import read_manifest, write_manifest
from indexes.shard_search import ShardedBm25, ShardedDense
from indexes.shards import shard_ranges, sharding_manifest, write_shards
from indexes.store import LoadedIndex, load_index
from rag.indexing import make_retriever

K = 10
CANDIDATES = 50
FLAT = DenseParams(kind="flat")


def sharded_folder(size: str, n_shards: int) -> Path:
    return bench_dir() / "corpora" / f"{size}-{n_shards}shards"


def ensure_sharded(size: str, n_shards: int) -> dict[str, Any]:
    """The sharded copy of the ``size`` folder (BM25 + flat dense in ``n_shards``) and a 1-shard BM25
    beside it; rebuilt when the unsharded folder changed. Returns the seconds each part took."""
    source, inputs = folders(size)
    folder, one = sharded_folder(size, n_shards), sharded_folder(size, 1)
    fingerprint = read_manifest(source)["corpus_fingerprint"]
    done = folder / "sharded_from.json"
    if done.is_file() and json.loads(done.read_text()).get("corpus_fingerprint") == fingerprint:
        return {**json.loads(done.read_text()), "reused": True}
    t0 = time.perf_counter()
    tokens, vectors = tokens_and_vectors(size, corpus.load_pool(Paths.from_env().indexes_dir, bench_dir()))
    if not np.array_equal(vectors, vectors_of(size)):
        raise RuntimeError(f"the regenerated rows differ from {inputs}; rebuild it (materialize --rebuild)")
    seconds = {"tokens": round(time.perf_counter() - t0, 1)}
    for path in (folder, one):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    t0 = time.perf_counter()
    ranges = shard_ranges(len(tokens), n_shards)
    write_shards(folder, tokens, vectors, ranges, Bm25Params(), FLAT)
    seconds[f"write_{n_shards}_shards"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    write_shards(one, tokens, None, shard_ranges(len(tokens), 1), Bm25Params(), None)
    seconds["write_1_shard_bm25"] = round(time.perf_counter() - t0, 1)
    del tokens, vectors
    for name in (CHUNKS_FILE, OFFSETS_FILE):  # the same chunk store, linked rather than copied
        os.link(source / name, folder / name)
    manifest = read_manifest(source)
    fields = {k: v for k, v in manifest.items() if k not in {"files", "schema_version"}}
    write_manifest(folder, {**fields, "dense": dataclasses.asdict(FLAT), "shards": sharding_manifest(ranges)})
    report = {"corpus_fingerprint": fingerprint, "shards": n_shards, "seconds": seconds}
    done.write_text(json.dumps(report, indent=1) + "\n")
    return {**report, "reused": False}


def _indexes(size: str, n_shards: int) -> tuple[dict[str, LoadedIndex], Any]:
    """The unsharded index (bm25s + a flat index of its vectors) and the sharded one searched in
    parallel and sequentially (the same loaded shards, two pools), and a 1-thread query embedder."""
    unsharded, embedder = open_bench_index(folders(size)[0], with_embedder=True)
    if not isinstance(unsharded.dense, DenseIndex) or unsharded.dense.params.kind != "flat":
        raise RuntimeError(f"{folders(size)[0]} holds no flat index; rebuild it (materialize with flat)")
    parallel = load_index(
        sharded_folder(size, n_shards), embedder_fingerprint=embedder.fingerprint(), checksums=False
    )
    lexical, dense = parallel.lexical, parallel.dense
    assert isinstance(lexical, ShardedBm25) and isinstance(dense, ShardedDense)
    sequential = dataclasses.replace(
        parallel,
        lexical=ShardedBm25(lexical.stats, lexical.params, lexical.ranges, lexical.shards, search_threads=1),
        dense=ShardedDense(dense.shards, dense.ranges, dense.params, search_threads=1),
    )
    return {"unsharded": unsharded, "sequential": sequential, "parallel": parallel}, embedder


def _one_shard_bm25(size: str) -> ShardedBm25:
    n = corpus.chunk_count(size)
    return ShardedBm25.load(sharded_folder(size, 1) / "bm25", Bm25Params(), [(0, n)])


def _same_up_to_ties(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    """The same scores in order, and the same rows for every score above the last one (rows
    tied at the cut may be any of the tied ones)."""
    if not np.array_equal(a[1], b[1]):
        return False
    above = a[1] > a[1][-1] if a[1].size else a[1].astype(bool)
    return set(a[0][above].tolist()) == set(b[0][above].tolist())


def _agreement(indexes: dict[str, LoadedIndex], questions: list[str], vectors: np.ndarray) -> dict[str, Any]:
    """How many sharded top-10s equal the unsharded ones: BM25 rows in order (scores to 1e-5), flat
    rows and scores (FAISS orders exact ties its own way, the merge by row: also counted up to those
    ties), and whether the parallel search returns the sequential one to the bit."""
    out = {"bm25_same_rows": 0, "bm25_max_score_rel_diff": 0.0, "flat_same_rows": 0, "flat_same_scores": 0}
    out["flat_same_up_to_exact_ties"] = 0
    out["parallel_equals_sequential_bitwise"] = 0
    for q, v in zip(questions, vectors, strict=True):
        tokens = text.tokenize(q)
        ref, par, seq = (
            indexes[n].lexical.search(tokens, K) for n in ("unsharded", "parallel", "sequential")
        )
        out["bm25_same_rows"] += ref[0].tolist() == par[0].tolist()
        if ref[1].size and ref[1].size == par[1].size:
            rel = float(np.max(np.abs(ref[1] - par[1]) / np.maximum(np.abs(ref[1]), 1e-12)))
            out["bm25_max_score_rel_diff"] = max(out["bm25_max_score_rel_diff"], rel)
        dref, dpar, dseq = (indexes[n].dense.search(v, K) for n in ("unsharded", "parallel", "sequential"))  # type: ignore[union-attr]
        out["flat_same_rows"] += dref[0].tolist() == dpar[0].tolist()
        out["flat_same_up_to_exact_ties"] += _same_up_to_ties(dref, dpar)
        out["flat_same_scores"] += bool(np.allclose(dref[1], dpar[1], rtol=1e-5))
        same = all(np.array_equal(a, b) for a, b in zip((*par, *dpar), (*seq, *dseq), strict=True))
        out["parallel_equals_sequential_bitwise"] += same
    out["queries"] = len(questions)
    return out


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _timed(contenders: dict[str, Any], queries: list[Any], warm_up: int = 5) -> dict[str, Any]:
    """Interleaved milliseconds per contender after a warm-up, with the load average around them."""
    for q in queries[:warm_up]:
        for fn in contenders.values():
            fn(q)
    before = _load()
    ms, _ = interleaved(contenders, queries)
    return {
        "load_average_before": before,
        "load_average_after": _load(),
        "latency": {name: summarize(t) for name, t in ms.items()},
        "raw_ms": {name: [round(x, 3) for x in t] for name, t in ms.items()},
    }


def _verdict(
    latency: dict[str, dict[str, float]], one: str, parallel: str, sequential: str
) -> dict[str, Any]:
    """The issue's target (p50 at N shards in parallel no worse than 1 shard) and the ratios."""
    p50 = {name: row["median_ms"] for name, row in latency.items()}
    p95 = {name: row["p95_ms"] for name, row in latency.items()}
    return {
        "p50_parallel_over_1_shard": round(p50[parallel] / p50[one], 3),
        "p95_parallel_over_1_shard": round(p95[parallel] / p95[one], 3),
        "p50_parallel_over_sequential": round(p50[parallel] / p50[sequential], 3),
        "p95_parallel_over_sequential": round(p95[parallel] / p95[sequential], 3),
        "target_p50_no_worse_than_1_shard": p50[parallel] <= p50[one],
    }


def run(size: str, n_shards: int) -> dict[str, Any]:
    """Build what is missing, check agreement, then time BM25, flat and hybrid contenders."""
    build = ensure(size, FLAT)
    sharding = ensure_sharded(size, n_shards)
    threads = set_threads(1)
    questions = corpus.questions(corpus.QUESTIONS)
    vectors = query_vectors()[: len(questions)]
    indexes, embedder = _indexes(size, n_shards)
    threads["embedder_torch"] = set_threads(1).get("torch", 1)
    one_shard = _one_shard_bm25(size)
    pool = indexes["parallel"].lexical.pool  # type: ignore[attr-defined]
    seq, par = f"{n_shards} shards, sequential", f"{n_shards} shards, parallel ({pool.size} threads)"
    names = {"sequential": seq, "parallel": par}
    bm25 = {"1 index (bm25s, unsharded)": indexes["unsharded"].lexical} | {
        "1 shard (shard format)": one_shard
    }
    bm25 |= {names[n]: indexes[n].lexical for n in ("sequential", "parallel")}
    lexical = {name: (lambda q, ix=ix: ix.search(text.tokenize(q), K)) for name, ix in bm25.items()}
    dense = {"1 flat index (unsharded)": indexes["unsharded"].dense}
    dense |= {names[n]: indexes[n].dense for n in ("sequential", "parallel")}
    flat = {name: (lambda v, ix=ix: ix.search(v, K)) for name, ix in dense.items()}
    hybrid_names = {"unsharded": "1 index (bm25s + flat)", **names}
    hybrid = {
        hybrid_names[n]: make_retriever(ix, embedder, "hybrid", candidates=CANDIDATES).retrieve
        for n, ix in indexes.items()
    }
    out: dict[str, Any] = {
        "size": size,
        "chunks": len(indexes["unsharded"].chunks),
        "shards": n_shards,
        "search_threads": pool.size,
        "k": K,
        "threads": threads,
        "queries": {"set": "MedQuAD questions, seed 0", "n": len(questions)},
        "corpus_build": {k: build.get(k) for k in ("seconds", "reused")},  # "hnsw": the dense stage
        "corpus_dense": build["spec"]["dense"],
        "sharded_copy": sharding,
        "agreement_with_unsharded": _agreement(indexes, questions, vectors),
        "bm25": _timed(lexical, questions),
        "dense_flat": _timed(flat, list(vectors)),
        "hybrid_flat": _timed({n: (lambda q, r=r: r(q, K)) for n, r in hybrid.items()}, questions),
    }
    for mode, one in (("bm25", "1 index (bm25s, unsharded)"), ("dense_flat", "1 flat index (unsharded)")):
        out[mode]["verdict"] = _verdict(out[mode]["latency"], one, par, seq)
    out["hybrid_flat"]["verdict"] = _verdict(
        out["hybrid_flat"]["latency"], "1 index (bm25s + flat)", par, seq
    )
    for ix in indexes.values():
        ix.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1M", help="10k, 100k, 1M (any <n>k or <n>M)")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    t0 = time.perf_counter()
    result = run(args.size, args.shards)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result["note"] = "shared 2-core machine: other work ran beside this; see the load averages"
    path = write_result(f"shard_latency_{args.size}", result, args.out)
    for mode in ("bm25", "dense_flat", "hybrid_flat"):
        for name, row in result[mode]["latency"].items():
            print(f"{mode:>11} {name:>34}: p50 {row['median_ms']:8.2f} ms  p95 {row['p95_ms']:8.2f} ms")
    print(path)


if __name__ == "__main__":
    main()
