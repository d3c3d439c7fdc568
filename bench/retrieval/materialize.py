"""Write a benchmark corpus as a real medcite index folder (chunks, bm25s, HNSW, manifest).

The folder loads with the project's own ``indexes.store.load_index``, so the hybrid and memory
benchmarks run medcite's serving path unchanged. The build runs in a child process that samples
its RSS per stage: its peak is the memory of building that index (the 1M one is the largest).

    medcite bench materialize --size 100k     # reuses a folder built with the same settings
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import PeakSampler, child_entry, rss_mb, run_child, set_threads
from bench.retrieval import corpus
from core.paths import Paths
from core.types import Chunk
from indexes.bm25 import Bm25Params, Bm25sIndex
from indexes.chunkstore import ChunkStore, write_chunks
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.index import DenseIndex, DenseParams
from indexes.manifest import corpus_fingerprint, write_manifest
from indexes.store import BM25_DIR, DENSE_DIR, LoadedIndex, load_index
from indexes.text import tokenizer_config

BLOCK = 100_000  # synthetic chunks generated per block (bounded memory, seeded per block)


def dense_params(size: str) -> DenseParams:
    """medcite's HNSW defaults (M 32, efConstruction 200, efSearch 128) up to 200k chunks; above,
    efConstruction 100: inserting into the 100k graph took 0.50 ms per vector at 200 and 0.15 ms
    at 100 on this 2-core machine, and at 200 the 1M build alone would take about 10 minutes."""
    large = corpus.chunk_count(size) > 200_000
    return DenseParams(kind="hnsw", ef_construction=100 if large else DenseParams.ef_construction)


def bench_dir() -> Path:
    return Paths.from_env().data_dir / "bench"


def folders(size: str) -> tuple[Path, Path]:
    """The index folder and the folder of its inputs (vectors.npy, build.json)."""
    root = bench_dir() / "corpora"
    return root / size, root / f"{size}-inputs"


def open_bench_index(
    folder: Path, *, with_embedder: bool, checksums: bool = False
) -> tuple[LoadedIndex, Any]:
    """Load a benchmark folder with the project's loader and, if asked, a 1-thread query embedder."""
    embedder = MiniLmEmbedder(threads=1) if with_embedder else None
    fingerprint = embedder.fingerprint() if embedder is not None else None
    return load_index(folder, embedder_fingerprint=fingerprint, checksums=checksums), embedder


def spec(size: str, pool: corpus.Pool, dense: DenseParams) -> dict[str, Any]:
    return {**corpus.describe(size, pool), "pool_sources": pool.info["sources"], "dense": asdict(dense)}


def ensure(size: str, dense: DenseParams, *, rebuild: bool = False) -> dict[str, Any]:
    """Build the folder for ``size`` in a child process unless one with the same spec exists."""
    pool = corpus.load_pool(Paths.from_env().indexes_dir, bench_dir())
    _, inputs = folders(size)
    wanted = spec(size, pool, dense)
    done = inputs / "build.json"
    if not rebuild and done.is_file():
        report = json.loads(done.read_text())
        if report.get("spec") == wanted:
            return {**report, "reused": True}
    report = run_child("bench.retrieval.materialize", {"size": size, "dense": asdict(dense)}, timeout_s=3600)
    return {**report, "reused": False}


def _synthetic_blocks(
    pool: corpus.Pool, bases: np.ndarray
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per block of synthetic chunks, seeded per block: (index of its first chunk, their pool
    rows, token ids, token offsets, vectors)."""
    for block, start in enumerate(range(0, len(bases), BLOCK)):
        part = bases[start : start + BLOCK]
        rng = np.random.default_rng([corpus.SEED, 2, block])
        ids, offsets = corpus.perturb_tokens(pool.token_ids, pool.token_offsets, part, rng, corpus.REPLACE_P)
        yield start, part, ids, offsets, corpus.perturb_vectors(pool.vectors, part, rng, corpus.NOISE_SIGMA)


def _chunks_and_tokens(size: str, pool: corpus.Pool, out: Path) -> tuple[list[list[str]], np.ndarray]:
    """Write the chunks of ``size`` to ``out``; return their BM25 tokens and vectors, row-aligned."""
    rows = corpus.sample_rows(pool.size, corpus.chunk_count(size))
    tokens = pool.tokens(rows)
    vectors = [np.asarray(pool.vectors[rows], dtype=np.float32)]
    bases = corpus.synthetic_bases(pool.size, corpus.chunk_count(size) - len(rows))

    def records() -> Iterator[Chunk]:  # streamed: a million Chunk objects would not fit comfortably
        yield from (Chunk.from_json(json.loads(line)) for line in pool.lines(rows))
        for start, part, ids, offsets, block_vectors in _synthetic_blocks(pool, bases):
            vectors.append(block_vectors)
            for i, line in enumerate(pool.lines(part)):
                words = [pool.vocab[t] for t in ids[offsets[i] : offsets[i + 1]]]
                tokens.append(words)
                yield corpus.synthetic_chunk(start + i, Chunk.from_json(json.loads(line)), words)

    write_chunks(out, records())
    return tokens, np.concatenate(vectors)


def tokens_and_vectors(size: str, pool: corpus.Pool) -> tuple[list[list[str]], np.ndarray]:
    """The BM25 tokens and vectors the folder of ``size`` was built from, made again from the same
    seeds (chunks not written): what a sharded copy of it is built from."""
    rows = corpus.sample_rows(pool.size, corpus.chunk_count(size))
    tokens = pool.tokens(rows)
    vectors = [np.asarray(pool.vectors[rows], dtype=np.float32)]
    bases = corpus.synthetic_bases(pool.size, corpus.chunk_count(size) - len(rows))
    for _, _, ids, offsets, block_vectors in _synthetic_blocks(pool, bases):
        vectors.append(block_vectors)
        tokens.extend([pool.vocab[t] for t in ids[a:b]] for a, b in itertools.pairwise(offsets))
    return tokens, np.concatenate(vectors)


def build(args: dict[str, Any]) -> dict[str, Any]:
    """Child: write the folder for ``args['size']``; stage seconds and sampled peak RSS per stage."""
    size, dense = args["size"], DenseParams(**args["dense"])
    threads = set_threads(os.cpu_count() or 1)  # a build uses every core, as `medcite index build` does
    pool = corpus.load_pool(Paths.from_env().indexes_dir, bench_dir())
    folder, inputs = folders(size)
    for path in (folder, inputs):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    seconds, peak, before = {}, {}, {}

    def stage(name: str) -> PeakSampler:
        before[name] = round(rss_mb(), 1)
        return PeakSampler()

    t0 = time.perf_counter()
    with stage("chunks") as s:
        tokens, vectors = _chunks_and_tokens(size, pool, folder)
    seconds["chunks"], peak["chunks"] = time.perf_counter() - t0, s.peak_mb
    np.save(inputs / "vectors.npy", vectors, allow_pickle=False)
    t0 = time.perf_counter()
    with stage("bm25s") as s:
        Bm25sIndex.build(tokens, Bm25Params()).save(folder / BM25_DIR)
    seconds["bm25s"], peak["bm25s"] = time.perf_counter() - t0, s.peak_mb
    del tokens
    t0 = time.perf_counter()
    with stage("hnsw") as s:
        DenseIndex.build(vectors, dense).save(folder / DENSE_DIR)
    seconds["hnsw"], peak["hnsw"] = time.perf_counter() - t0, s.peak_mb
    del vectors
    store = ChunkStore(folder)
    write_manifest(
        folder,
        {
            "name": f"bench-{size}",
            "corpus_fingerprint": corpus_fingerprint(store),
            "tokenizer": tokenizer_config(),
            "lexical": {"backend": "bm25s", **asdict(Bm25Params())},
            "dense": asdict(dense),
            "embedder": pool.info["embedder"],
            "counts": {"chunks": len(store)},
            "bench": corpus.describe(size, pool),
        },
    )
    store.close()
    report = {
        "spec": spec(size, pool, dense),
        "threads": threads,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "rss_before_stage_mb": before,
        "peak_rss_in_stage_mb": {k: round(v, 1) for k, v in peak.items()},
        "bytes_on_disk": {p.name: _bytes(p) for p in (folder / BM25_DIR, folder / DENSE_DIR)}
        | {"chunks.jsonl": (folder / "chunks.jsonl").stat().st_size},
    }
    (inputs / "build.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    if child_entry(sys.argv[1:], build):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", required=True, help="10k, 100k, 1M (any <n>k or <n>M)")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    print(json.dumps(ensure(args.size, dense_params(args.size), rebuild=args.rebuild), indent=1))


if __name__ == "__main__":
    main()
