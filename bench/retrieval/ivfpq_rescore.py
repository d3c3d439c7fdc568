"""IVF-PQ with exact re-scoring at 100k and 1M: recall@10 against exact search, latency, size, memory.

The vectors: every real MiniLM vector of the built dense indexes ``default`` and ``literature``
(reconstructed from their flat FAISS files, nothing re-embedded), then synthetic rows made the way
``bench/retrieval/corpus.py`` makes them (a seeded real row + N(0, 0.025^2) per dimension, renormalised) up to
the size. The queries: 200 MedQuAD and 200 BioASQ questions embedded once by the same embedder. The
truth: an exact inner-product search (faiss ``IndexFlatIP``).

The index is built the way a sharded build makes it: ``train_ivfpq`` on a seeded sample,
``add_ivfpq_shard`` per shard, ``merge_ivfpq`` into on-disk inverted lists; each stage timed. It
is then loaded with ``DenseIndex.load`` and searched through ``DenseIndex.search`` for a sweep of
``nprobe`` x ``rescore`` (and PQ bytes per vector, and float32 vs float16 re-scoring vectors), one
faiss thread, queries in order. RSS when loaded comes from a child process.

A last step runs the candidate settings side by side (each query through every setting, in a
rotating order) so that the load of a shared machine hits them alike, and the report step writes
the per-row bytes and rates a capacity projection needs.

    medcite bench ivfpq-rescore --size 1M --size 100k   # -> docs/results/bench/retrieval/ivfpq_rescore.json
    medcite bench ivfpq-rescore --size 1M --step compare  # steps: prepare sweep compare report
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    PeakSampler,
    child_entry,
    rss_mb,
    run_child,
    set_threads,
    summarize,
    write_result,
)
from bench.retrieval import corpus
from core.paths import Paths
from indexes.dense import ivf
from indexes.dense.index import DenseIndex, DenseParams

K = 10
POOL = ("default", "literature")
N_QUESTIONS = 200  # per question set
SHARDS = 4
NPROBE_SWEEP = (8, 16, 32, 64, 128, 256)
RESCORE_SWEEP = (0, 50, 100, 200, 400, 800)
PQ_M_SWEEP = (48, 96)
CANDIDATES = (  # (pq_m, nprobe, rescore): the raw IVF-PQ of docs/benchmarks.md, then the candidates
    (96, 32, 0),
    (96, 64, 100),
    (96, 128, 50),
    (96, 128, 100),
    (96, 128, 200),
    (48, 128, 400),
    (48, 128, 800),
    (48, 256, 400),
)


def work_dir(size: str) -> Path:
    return Paths.from_env().data_dir / "bench" / "ivfpq" / size


# -- inputs: vectors, queries, exact truth ----------------------------------------------------


def real_vectors() -> tuple[np.ndarray, dict[str, int]]:
    import faiss

    parts, counts = [], {}
    for name in POOL:
        index = faiss.read_index(str(Paths.from_env().indexes_dir / name / "dense" / "index.faiss"))
        parts.append(index.reconstruct_n(0, index.ntotal))
        counts[name] = int(index.ntotal)
    return np.concatenate(parts).astype(np.float32), counts


def make_vectors(size: str, out: Path) -> dict[str, Any]:
    """Write ``out`` (float32 .npy): the real rows, then synthetic rows in seeded blocks."""
    pool, counts = real_vectors()
    n = corpus.chunk_count(size)
    real = min(n, len(pool))
    bases = corpus.synthetic_bases(len(pool), n - real)
    array = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(n, pool.shape[1]))
    array[:real] = pool[:real]
    for block, start in enumerate(range(0, len(bases), 100_000)):
        part = bases[start : start + 100_000]
        rng = np.random.default_rng([corpus.SEED, 2, block])
        array[real + start : real + start + len(part)] = corpus.perturb_vectors(
            pool, part, rng, corpus.NOISE_SIGMA
        )
    array.flush()
    del array
    return {
        "rows": n,
        "real_rows": real,
        "real_from": counts,
        "synthetic": corpus.SYNTHETIC_METHOD["vectors"],
    }


def make_queries(out: Path) -> dict[str, Any]:
    from bench.retrieval.query_latency import sample_questions
    from indexes.dense.embedder import MiniLmEmbedder

    paths = Paths.from_env()
    questions = sample_questions(paths, "medquad", N_QUESTIONS, corpus.SEED)
    questions += sample_questions(paths, "bioasq", N_QUESTIONS, corpus.SEED)
    vectors = MiniLmEmbedder(threads=2).embed(questions)
    np.save(out, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
    return {"medquad": N_QUESTIONS, "bioasq": N_QUESTIONS, "seed": corpus.SEED}


def exact_truth(vectors: np.ndarray, queries: np.ndarray, k: int = 100) -> tuple[np.ndarray, float]:
    """Rows of the exact top ``k`` per query (blocked scan: bounded memory) and ms per query."""
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    t0 = time.perf_counter()
    scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    rows = np.full((len(queries), k), -1, dtype=np.int64)
    for start in range(0, len(vectors), 200_000):
        index.reset()
        index.add(np.ascontiguousarray(vectors[start : start + 200_000], dtype=np.float32))
        s, r = index.search(queries, k)
        both_s = np.concatenate([scores, s], axis=1)
        both_r = np.concatenate([rows, r + start], axis=1)
        order = np.argsort(-both_s, axis=1, kind="stable")[:, :k]
        scores, rows = np.take_along_axis(both_s, order, 1), np.take_along_axis(both_r, order, 1)
    return rows, 1000 * (time.perf_counter() - t0) / len(queries)


def prepare(size: str) -> dict[str, Any]:
    """Vectors, queries and the exact truth for ``size`` under ``work_dir(size)`` (reused if there)."""
    folder = work_dir(size)
    folder.mkdir(parents=True, exist_ok=True)
    info_path = folder / "inputs.json"
    if info_path.is_file():
        return dict(json.loads(info_path.read_text()))
    queries_path = folder.parent / "queries.npy"
    info: dict[str, Any] = {"size": size}
    if not queries_path.is_file():
        info["queries"] = make_queries(queries_path)
    t0 = time.perf_counter()
    info["vectors"] = make_vectors(size, folder / "vectors.f32.npy")
    info["vectors_seconds"] = round(time.perf_counter() - t0, 1)
    set_threads(2)
    vectors = np.load(folder / "vectors.f32.npy", mmap_mode="r", allow_pickle=False)
    truth, ms = exact_truth(vectors, np.load(queries_path, allow_pickle=False))
    np.save(folder / "truth.npy", truth, allow_pickle=False)
    info["exact_ms_per_query_2_threads_batched"] = round(ms, 2)
    info_path.write_text(json.dumps(info, indent=1) + "\n")
    return info


# -- build (the sharded path, each stage timed) ---------------------------------------------


def build(size: str, params: DenseParams, folder: Path) -> dict[str, Any]:
    """Train on a seeded sample, add ``SHARDS`` shards, merge into ``folder``; seconds per stage."""
    vectors = np.load(work_dir(size) / "vectors.f32.npy", mmap_mode="r", allow_pickle=False)
    tmp = folder.with_name(folder.name + "-work")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    threads = set_threads(2)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    sample = ivf.training_sample(vectors, params)
    ivf.train_ivfpq(sample, params, tmp / "trained.faiss")
    seconds["train"] = time.perf_counter() - t0
    shard_files = []
    t0 = time.perf_counter()
    for s, (start, end) in enumerate(_ranges(len(vectors), SHARDS)):
        shard_files.append(tmp / f"shard-{s}.faiss")
        ivf.add_ivfpq_shard(tmp / "trained.faiss", vectors[start:end], start, shard_files[-1])
    seconds["add"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ivf.merge_ivfpq(tmp / "trained.faiss", shard_files, folder, work_dir(size) / "vectors.f32.npy")
    seconds["merge_with_float16_copy"] = time.perf_counter() - t0
    shutil.rmtree(tmp)
    return {
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "threads": threads,
        "shards": SHARDS,
        "train_sample_rows": len(sample),
    }


def _ranges(n: int, parts: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, parts + 1).astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]


def disk(folder: Path, rows: int) -> dict[str, Any]:
    """Bytes of the compressed part (index.faiss + lists) and of the re-scoring vectors, per row too."""
    meta = json.loads((folder / ivf.META_FILE).read_text())
    index_bytes = (folder / ivf.INDEX_FILE).stat().st_size
    lists_bytes = (folder / ivf.LISTS_FILE).stat().st_size
    vectors_bytes = (folder / meta["vectors_file"]).stat().st_size
    return {
        "index_faiss_bytes": index_bytes,
        "lists_bytes": lists_bytes,
        "compressed_total_bytes": index_bytes + lists_bytes,
        "rescore_vectors_bytes": vectors_bytes,
        "lists_bytes_per_row": round(lists_bytes / rows, 2),
        "rescore_vectors_bytes_per_row": round(vectors_bytes / rows, 2),
    }


# -- search sweep ----------------------------------------------------------------------------


def sweep(
    index: DenseIndex, queries: np.ndarray, truth: np.ndarray, grid: list[tuple[int, int]]
) -> list[dict[str, Any]]:
    """Recall@10 against exact and latency (1 faiss thread) for each (nprobe, rescore)."""
    set_threads(1)
    base = index.params
    rows = []
    for nprobe, rescore in grid:
        index.params = replace(base, nprobe=nprobe, rescore=rescore)
        for q in queries[:10]:
            index.search(q, K)
        ms, recall = [], []
        for q, exact in zip(queries, truth, strict=True):
            t0 = time.perf_counter()
            found = index.search(q, K)[0]
            ms.append(1000 * (time.perf_counter() - t0))
            recall.append(len(set(found.tolist()) & set(exact[:K].tolist())) / K)
        stats = summarize(ms)
        rows.append(
            {
                "nprobe": nprobe,
                "rescore": rescore,
                "recall_at_10": round(float(np.mean(recall)), 4),
                "p50_ms": stats["median_ms"],
                "p95_ms": stats["p95_ms"],
                "mean_ms": stats["mean_ms"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    index.params = base
    return rows


def serving_memory(args: dict[str, Any]) -> dict[str, Any]:
    """Child: RSS after imports, after ``DenseIndex.load`` and after every query once."""
    set_threads(1)
    queries = np.load(work_dir(args["size"]).parent / "queries.npy", allow_pickle=False)
    out = {"rss_after_imports_mb": round(rss_mb(), 1)}
    with PeakSampler() as sampler:
        index = DenseIndex.load(Path(args["folder"]))
    out["rss_loaded_mb"] = round(rss_mb(), 1)
    out["peak_load_mb"] = round(sampler.peak_mb, 1)
    for q in queries:
        index.search(q, K)
    out["rss_after_queries_mb"] = round(rss_mb(), 1)
    out |= _rss_split()
    return out


def _rss_split() -> dict[str, float]:
    """Anonymous vs file-backed resident memory (mapped lists and vectors are file-backed: the
    kernel can drop them under pressure and read them again)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"RssAnon", "RssFile"}:
            fields[f"{name.lower()}_mb"] = round(int(value.split()[0]) / 1024, 1)
    return fields


def run_size(size: str) -> dict[str, Any]:
    inputs = prepare(size)
    queries = np.load(work_dir(size).parent / "queries.npy", allow_pickle=False)
    truth = np.load(work_dir(size) / "truth.npy", allow_pickle=False)
    rows = inputs["vectors"]["rows"]
    out: dict[str, Any] = {"size": size, "inputs": inputs, "k": K, "queries": len(queries), "by_pq_m": {}}
    grid = [(p, r) for p in NPROBE_SWEEP for r in RESCORE_SWEEP]
    for m in PQ_M_SWEEP:
        params = replace(DenseParams(kind="ivfpq"), pq_m=m)
        folder = work_dir(size) / f"index-m{m}"
        entry: dict[str, Any] = {"params": asdict(params), "load_average_before": os.getloadavg()}
        entry["build"] = build(size, params, folder)
        entry["disk"] = disk(folder, rows)
        entry["memory"] = run_child("bench.retrieval.ivfpq_rescore", {"size": size, "folder": str(folder)})
        index = DenseIndex.load(folder)
        entry["sweep_float16"] = sweep(index, queries, truth, grid)
        index._vectors = np.load(work_dir(size) / "vectors.f32.npy", mmap_mode="r", allow_pickle=False)
        entry["sweep_float32"] = sweep(
            index, queries, truth, [(p, r) for p, r in grid if r in (100, 200, 400)]
        )
        entry["load_average_after"] = os.getloadavg()
        out["by_pq_m"][str(m)] = entry
        del index
        _save_partial(size, out)
    return out


def _save_partial(size: str, out: dict[str, Any]) -> None:
    (work_dir(size) / "result.json").write_text(json.dumps(out, indent=1) + "\n")


def compare(size: str) -> dict[str, Any]:
    """The candidate settings side by side: every query runs every setting in a rotating order, so
    a change in the machine's load hits them alike; memory of each index in a fresh child."""
    queries = np.load(work_dir(size).parent / "queries.npy", allow_pickle=False)
    truth = np.load(work_dir(size) / "truth.npy", allow_pickle=False)
    folders = {m: work_dir(size) / f"index-m{m}" for m in PQ_M_SWEEP}
    memory = {
        str(m): run_child("bench.retrieval.ivfpq_rescore", {"size": size, "folder": str(f)})
        for m, f in folders.items()
    }
    indexes = {m: DenseIndex.load(f) for m, f in folders.items()}
    set_threads(1)
    names = [f"m{m} nprobe {p} rescore {r}" for m, p, r in CANDIDATES]
    ms: dict[str, list[float]] = {n: [] for n in names}
    hits: dict[str, list[float]] = {n: [] for n in names}
    load_before = os.getloadavg()
    for i, (q, exact) in enumerate(zip(queries, truth, strict=True)):
        order = list(range(len(CANDIDATES)))
        order = order[i % len(order) :] + order[: i % len(order)]
        for j in order:
            m, nprobe, rescore = CANDIDATES[j]
            index = indexes[m]
            index.params = replace(index.params, nprobe=nprobe, rescore=rescore)
            t0 = time.perf_counter()
            found = index.search(q, K)[0]
            ms[names[j]].append(1000 * (time.perf_counter() - t0))
            hits[names[j]].append(len(set(found.tolist()) & set(exact[:K].tolist())) / K)
    rows = []
    for (m, nprobe, rescore), name in zip(CANDIDATES, names, strict=True):
        stats = summarize(ms[name][10:])  # the first queries of each setting warm its pages up
        rows.append(
            {
                "pq_m": m,
                "nprobe": nprobe,
                "rescore": rescore,
                "recall_at_10": round(float(np.mean(hits[name])), 4),
                "p50_ms": stats["median_ms"],
                "p95_ms": stats["p95_ms"],
                "rescore_bytes_per_query_float16": rescore * int(queries.shape[1]) * 2,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {
        "interleaved": rows,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "memory_by_pq_m": memory,
    }


def main() -> None:
    if child_entry(sys.argv[1:], serving_memory):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", action="append", required=True, help="100k, 1M (repeatable)")
    parser.add_argument("--step", choices=["all", "prepare", "sweep", "compare", "report"], default="all")
    args = parser.parse_args()
    for size in args.size:
        print(json.dumps(prepare(size)), flush=True)
        if args.step in {"all", "sweep"}:
            run_size(size)
        if args.step in {"all", "compare"}:
            out = json.loads((work_dir(size) / "result.json").read_text())
            out["compare"] = compare(size)
            _save_partial(size, out)
    if args.step in {"all", "report"}:
        sizes = {size: json.loads((work_dir(size) / "result.json").read_text()) for size in args.size}
        default = DenseParams(kind="ivfpq")
        payload = {"default_params": asdict(default), "sizes": sizes}
        if "1M" in sizes:
            payload["capacity_inputs"] = capacity_inputs(sizes["1M"], default)
        write_result("ivfpq_rescore", payload)


def capacity_inputs(result: dict[str, Any], params: DenseParams) -> dict[str, Any]:
    """Per-row bytes and per-stage rates measured at 1M, for projecting to other corpus sizes."""
    entry = result["by_pq_m"][str(params.pq_m)]
    rows = result["inputs"]["vectors"]["rows"]
    dim = 384
    seconds = entry["build"]["seconds"]
    return {
        "measured_at_rows": rows,
        "pq_m": params.pq_m,
        "lists_bytes_per_row": entry["disk"]["lists_bytes_per_row"],
        "lists_bytes_per_row_formula": "pq_m * pq_nbits / 8 codes + 8 (int64 row id)",
        "rescore_vectors_bytes_per_row": {"float16": 2 * dim, "float32": 4 * dim},
        "index_faiss_bytes_formula": "nlist * dim * 4 (centroids) + 2**pq_nbits * dim * 4 (PQ codebooks)",
        "index_faiss_bytes": entry["disk"]["index_faiss_bytes"],
        "add_rows_per_s_2_threads": round(rows / seconds["add"]),
        "train_seconds_2_threads": seconds["train"],
        "train_sample_rows": entry["build"]["train_sample_rows"],
        "merge_seconds": seconds["merge_with_float16_copy"],
        "codes_scanned_per_query_formula": "rows * nprobe / nlist",
        "rescore_bytes_read_per_query_float16": params.rescore * 2 * dim,
        "serving_rss_anon_mb": result.get("compare", {})
        .get("memory_by_pq_m", {})
        .get(str(params.pq_m), entry["memory"])
        .get("rssanon_mb"),
        "note": "rates measured on 2 shared cores (load average in the result); synthetic 1M set",
    }


if __name__ == "__main__":
    main()
