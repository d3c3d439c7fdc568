"""The streamed sharded build on a local Ray cluster, at the real corpora's size and at >= 1M chunks.

Both runs build with ``--engine ray`` on a cluster of a head node (no CPUs: the driver's) and two
worker nodes of one CPU each, all on this machine (Ray's ``cluster_utils.Cluster``: each node its
own raylet), ``--shards 8``, dense kind ``ivfpq`` with ``nlist`` about ``4 sqrt(rows)`` and
exact float32 vectors kept for re-scoring.

- ``real``: every source of ``../shared/data`` and the embedded default (``REAL_SOURCES``).
- ``1M``: the same plus synthetic documents up to ``--chunks`` (default 1,000,000), JSONL files
  read by the ``user-docs`` source, made as ``bench/retrieval/corpus.py`` makes its synthetic
  chunks. Embedding them on 2 cores would measure the embedder, not the build, so their vectors
  (the origin's real vector plus small noise, renormalised) are put in the run's embedding cache
  beforehand under the keys the build's own chunker gives them; real chunks are embedded by the
  cluster's actors, except those the retrieval benches already embedded (copied in first).

Reported per run (``docs/results/bench/stream_build.json``): the driver's peak RSS (its own
``ru_maxrss``), the peak RSS of the largest Ray worker and of all Ray processes (sampled every
0.5 s), stage seconds and chunks/s, disk bytes per row, and the recall@10 of the served index
(ivfpq, re-scored) against exact search for 850 real clinician questions. The load average is
recorded: other work shares this machine.

    medcite bench stream-build --size real
    medcite bench stream-build --size 1M
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import RESULTS_DIR, child_entry, run_child, write_result

WORK = Path("data/bench/scale/stream_build")
REAL_SOURCES = (
    "open-medicine",
    "hpo",
    "orphanet",
    "medquad",
    "disease-ontology",
    "bioasq-snippets",
    "pubmedqa-abstracts",
    "ngc",
)
SHARDS = 8
DOCS_PER_FILE = 100_000
NOISE_SIGMA = 0.025


def nlist_for(rows: int) -> int:
    """About 4 sqrt(rows), as a power of two (FAISS's rule of thumb for IVF)."""
    return int(2 ** round(math.log2(4 * math.sqrt(rows))))


class RssWatch:
    """Peak RSS of every descendant of this process (Ray's raylets, GCS and workers), sampled."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.interval_s = interval_s
        self.per_process: dict[int, tuple[str, float]] = {}
        self.total_peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            total = 0.0
            for proc in me.children(recursive=True):
                try:
                    mb = proc.memory_info().rss / 2**20
                    name = " ".join(proc.cmdline()[:1])[-40:]
                except psutil.Error:
                    continue
                total += mb
                if mb > self.per_process.get(proc.pid, ("", 0.0))[1]:
                    self.per_process[proc.pid] = (name, mb)
            self.total_peak_mb = max(self.total_peak_mb, total)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> RssWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def largest(self) -> dict[str, Any]:
        pid, (name, mb) = max(self.per_process.items(), key=lambda kv: kv[1][1], default=(0, ("", 0.0)))
        return {"pid": pid, "process": name, "peak_rss_mb": round(mb, 1)}


def synthetic_documents(folder: Path, count: int, seed: int = 0) -> dict[str, Any]:
    """``count`` synthetic documents as JSONL files under ``folder`` (made once; see the module)."""
    from bench.retrieval import corpus
    from core.paths import Paths

    done = folder / "done.json"
    if done.is_file() and json.loads(done.read_text()).get("count") == count:
        return dict(json.loads(done.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    paths = Paths.from_env()
    pool = corpus.load_pool(paths.indexes_dir, paths.data_dir / "bench")
    bases = corpus.synthetic_bases(pool.size, count, seed)
    rng = np.random.default_rng([seed, 2, count])
    for start in range(0, count, DOCS_PER_FILE):
        part = bases[start : start + DOCS_PER_FILE]
        ids, offsets = corpus.perturb_tokens(pool.token_ids, pool.token_offsets, part, rng, corpus.REPLACE_P)
        with (folder / f"part-{start // DOCS_PER_FILE:04d}.jsonl").open("w") as fh:
            for n, base in enumerate(part):
                body = " ".join(pool.vocab[t] for t in ids[offsets[n] : offsets[n + 1]])
                row = {
                    "id": f"s{start + n}-r{int(base)}",
                    "title": f"synthetic copy of row {int(base)}",
                    "text": body,
                }
                fh.write(json.dumps(row) + "\n")
    info = {"count": count, "seed": seed, "pool_rows": pool.size, "method": corpus.SYNTHETIC_METHOD}
    done.write_text(json.dumps(info))
    return info


def seed_synthetic_vectors(folder: Path, cache_dir: Path, seed: int = 0) -> int:
    """Each synthetic document's chunks (the build's chunker) -> its origin's vector plus noise, in
    the embedding cache under the chunk's indexed text. Returns the vectors written."""
    from bench.retrieval import corpus
    from core.paths import Paths
    from corpora.chunking import ChunkerConfig, WordpieceSpans, chunk_document
    from corpora.sources.user_docs import UserDocsSource
    from indexes import text
    from indexes.dense.embedder import MiniLmEmbedder
    from indexes.dense.embedding_cache import store_for, text_key

    marker = cache_dir / f"synthetic-{json.loads((folder / 'done.json').read_text())['count']}.done"
    if marker.is_file():
        return int(marker.read_text())
    paths = Paths.from_env()
    pool = corpus.load_pool(paths.indexes_dir, paths.data_dir / "bench")
    embedder = MiniLmEmbedder()
    spans = WordpieceSpans(embedder.model_path / "tokenizer.json")
    store, rng, written = store_for(embedder, cache_dir), np.random.default_rng([seed, 3]), 0
    keys: list[bytes] = []
    origins: list[int] = []
    for doc in UserDocsSource(folder).documents():
        for chunk in chunk_document(doc, spans, ChunkerConfig()):
            keys.append(text_key(text.indexed_text(chunk.title, chunk.section, chunk.text)))
            origins.append(int(doc.doc_id.rsplit("-r", 1)[1]))
        if len(keys) >= 2_000:  # short transactions: a build may be writing the same cache
            store.put_many(keys, corpus.perturb_vectors(pool.vectors, np.asarray(origins), rng, NOISE_SIGMA))
            written, keys, origins = written + len(keys), [], []
    if keys:
        store.put_many(keys, corpus.perturb_vectors(pool.vectors, np.asarray(origins), rng, NOISE_SIGMA))
        written += len(keys)
    store.close()
    marker.write_text(str(written))
    return written


def seed_real_vectors(cache_dir: Path) -> dict[str, int]:
    """The vectors of the built pool indexes (``bench/retrieval/corpus.py``), copied into the run's
    cache: chunks of other sources are embedded by the cluster."""
    from bench.retrieval.corpus import POOL_INDEXES
    from core.paths import Paths
    from indexes.dense.embedder import MiniLmEmbedder
    from indexes.dense.embedding_cache import seed_from_index

    indexes_dir, embedder = Paths.from_env().indexes_dir, MiniLmEmbedder()
    return {name: seed_from_index(indexes_dir / name, embedder, cache_dir) for name in POOL_INDEXES}


def _sources(size: str) -> list[Any]:
    from core.paths import Paths
    from corpora.catalog import open_source
    from corpora.sources.user_docs import UserDocsSource

    paths = Paths.from_env()
    sources: list[Any] = [open_source(name, paths) for name in REAL_SOURCES]
    if size != "real":
        sources.append(UserDocsSource(WORK / "synthetic", license="synthetic (bench)"))
    return sources


def _expected_rows(size: str, chunks: int) -> int:
    return chunks if size != "real" else 150_000  # only sets nlist; the real corpora's size is measured


def child_build(args: dict[str, Any]) -> dict[str, Any]:
    """One build in this process, the driver, on a fresh local cluster of two worker nodes."""
    import ray
    from ray.cluster_utils import Cluster

    from corpora.build import BuildConfig, build_index
    from corpora.chunking import WordpieceSpans
    from corpora.engine_ray import RayEngine
    from indexes.dense.embedder import MiniLmEmbedder
    from indexes.dense.params import DenseParams

    size = args["size"]
    dense = DenseParams(kind="ivfpq", nlist=nlist_for(args["rows"]), rescore_dtype="float32")
    embedder = MiniLmEmbedder(runtime="torch")
    spans = WordpieceSpans(embedder.model_path / "tokenizer.json")
    load_before = os.getloadavg()
    with RssWatch() as watch:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        try:
            for _ in range(2):
                cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
            report = build_index(
                _sources(size),
                BuildConfig(name=f"stream-{size}", shards=SHARDS, dense=dense),
                WORK / "indexes",
                spans=spans,
                tokenizer_name=spans.name,
                embedder=embedder,
                cache_dir=WORK / "cache",
                progress=False,
                engine=RayEngine(address=cluster.address, workers=2),
            )
        finally:
            ray.shutdown()
            cluster.shutdown()
    return _build_result(report.manifest, report.folder, watch, dense, load_before)


def _build_result(
    manifest: dict[str, Any], folder: Path, watch: RssWatch, dense: Any, load_before: tuple[float, ...]
) -> dict[str, Any]:
    seconds = manifest["build"]["seconds"]
    rows = manifest["counts"]["chunks"]
    disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return {
        "rows": rows,
        "documents": manifest["counts"]["documents"],
        "embedded_now": rows - manifest["counts"]["embeddings_from_cache"],
        "per_source_chunks": {k: v["chunks"] for k, v in manifest["counts"]["per_source"].items()},
        "shards": SHARDS,
        "dense": {"kind": dense.kind, "nlist": dense.nlist, "pq_m": dense.pq_m, "nprobe": dense.nprobe},
        "driver_peak_rss_mb": round(manifest["build"]["peak_rss_mb"], 1),
        "driver_rss_mb_after_stage": {
            k: round(v, 1) for k, v in manifest["build"]["peak_rss_mb_after_stage"].items()
        },
        "ray_largest_process": watch.largest(),
        "ray_all_processes_peak_mb": round(watch.total_peak_mb, 1),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "chunks_per_s": {k: round(rows / v, 1) for k, v in seconds.items() if v > 0},
        "disk_bytes": disk,
        "disk_bytes_per_row": round(disk / rows, 1),
        "index": str(folder),
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
    }


def child_recall(args: dict[str, Any]) -> dict[str, Any]:
    """recall@10 of the served ivfpq index against exact search over its own float32 vectors."""
    from evals.datasets.clinician import load_clinician
    from indexes.dense.embedder import MiniLmEmbedder
    from indexes.store import load_index

    questions = [item.question for item in load_clinician()]
    query = MiniLmEmbedder().embed(questions)
    index = load_index(Path(args["index"]))
    try:
        assert index.dense is not None
        vectors = np.load(next(Path(args["index"], "dense").glob("vectors.f32.npy")), mmap_mode="r")
        exact = _exact_top(vectors, query, 10)
        started = time.perf_counter()
        served = [index.dense.search(q, 10)[0] for q in query]
        per_query_ms = 1000 * (time.perf_counter() - started) / len(query)
    finally:
        index.close()
    recalls = [len(set(s.tolist()) & set(e.tolist())) / 10 for s, e in zip(served, exact, strict=True)]
    return {
        "questions": len(questions),
        "recall_at_10": round(float(np.mean(recalls)), 4),
        "recall_at_10_min": round(float(np.min(recalls)), 2),
        "served_ms_per_query": round(per_query_ms, 2),
    }


def _exact_top(vectors: np.ndarray, query: np.ndarray, k: int) -> list[np.ndarray]:
    best_scores = np.full((len(query), k), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(query), k), dtype=np.int64)
    for start in range(0, len(vectors), 200_000):
        block = np.asarray(vectors[start : start + 200_000], dtype=np.float32)
        scores = query @ block.T
        rows = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        merged_scores = np.concatenate([best_scores, np.take_along_axis(scores, rows, 1)], axis=1)
        merged_rows = np.concatenate([best_rows, rows + start], axis=1)
        order = np.argsort(-merged_scores, axis=1, kind="stable")[:, :k]
        best_scores = np.take_along_axis(merged_scores, order, 1)
        best_rows = np.take_along_axis(merged_rows, order, 1)
    return list(best_rows)


def child(args: dict[str, Any]) -> dict[str, Any]:
    return child_recall(args) if args.get("step") == "recall" else child_build(args)


def main(argv: list[str] | None = None) -> None:
    """``medcite bench NAME ARGS`` calls this with no argument: the flags are in ``sys.argv``."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("real", "1M"), required=True)
    parser.add_argument("--chunks", type=int, default=1_000_000, help="rows of the large run")
    parser.add_argument(
        "--synthetic-docs", type=int, help="synthetic documents (default: --chunks less the real run's rows)"
    )
    args = parser.parse_args(argv)
    prepared: dict[str, Any] = {}
    if args.size == "real":
        prepared["vectors_copied_from_indexes"] = seed_real_vectors(WORK / "cache")
    else:
        count = args.synthetic_docs or args.chunks - _runs().get("real", {}).get("rows", args.chunks)
        if count <= 0:
            raise SystemExit("run --size real first, or give --synthetic-docs")
        prepared["synthetic"] = synthetic_documents(WORK / "synthetic", count)
        prepared["synthetic_vectors_cached"] = seed_synthetic_vectors(WORK / "synthetic", WORK / "cache")
    wanted = {"size": args.size, "rows": _expected_rows(args.size, args.chunks)}
    run = run_child("bench.scale.stream_build", wanted, timeout_s=4 * 3600)
    run["recall"] = run_child(
        "bench.scale.stream_build", {"step": "recall", "index": run["index"]}, timeout_s=3600
    )
    print(json.dumps({**prepared, **run}, indent=1), flush=True)
    runs = _runs()  # read again: the other size may have finished meanwhile
    runs[args.size] = {**prepared, **run}
    write_result("stream_build", {"runs": runs, "summary": summary(runs)})


def _runs() -> dict[str, Any]:
    path = RESULTS_DIR / "stream_build.json"
    return dict(json.loads(path.read_text()).get("runs", {})) if path.is_file() else {}


def summary(runs: dict[str, Any]) -> dict[str, Any]:
    if "real" not in runs or "1M" not in runs:
        return {}
    small, large = runs["real"], runs["1M"]
    return {
        "rows": [small["rows"], large["rows"]],
        "driver_peak_growth": round(large["driver_peak_rss_mb"] / small["driver_peak_rss_mb"] - 1, 3),
        "target_driver_growth_at_most": 0.2,
    }


if __name__ == "__main__" and not child_entry(sys.argv[1:], child):
    main(sys.argv[1:])
