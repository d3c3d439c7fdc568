"""The BM25 and dense index files of a build, unsharded or in shards, written through an engine.

Each writer is a plain module-level function of picklable arguments, so an engine can run it in
this process or as a Ray task on another node (which then writes to the build's folder on shared
storage). Shards and their global files follow ``indexes/shards.py``; with one shard the folders
are exactly today's unsharded ``bm25/`` and ``dense/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from corpora.engine import BuildEngine
from indexes import text
from indexes.bm25 import Bm25Params, Bm25sIndex, RankBm25Index
from indexes.dense.index import DenseIndex, DenseParams

if TYPE_CHECKING:
    from indexes.shards import Bm25Stats


def write_bm25(
    engine: BuildEngine, folder: Path, passages: list[str], backend: str, params: Bm25Params, shards: int
) -> None:
    """``folder`` = ``<index>/bm25``: one index, or ``shards`` indexes scored with global statistics."""
    if shards == 1:
        engine.map(_bm25_whole, [(folder, passages, backend, params)])
        return
    from indexes.shards import check_method, merge_bm25_stats, shard_dir, shard_ranges, write_bm25_globals

    check_method(params)
    ranges = shard_ranges(len(passages), shards)
    stats = merge_bm25_stats(engine.map(_bm25_stats_of, [(passages[a:b],) for a, b in ranges]))
    calls = [(folder / shard_dir(s), passages[a:b], stats, params) for s, (a, b) in enumerate(ranges)]
    engine.map(_bm25_shard, calls)
    write_bm25_globals(folder, stats, params, ranges)


def write_dense(
    engine: BuildEngine, folder: Path, vectors: np.ndarray, params: DenseParams, shards: int
) -> None:
    """``folder`` = ``<index>/dense``: one FAISS index, or one per shard of rows (flat, hnsw), or
    for ivfpq one index merged from shards added in parallel to one trained quantiser."""
    if shards == 1:
        engine.map(_dense_whole, [(folder, vectors, params)])
        return
    from indexes.shards import shard_dir, shard_ranges, write_dense_globals, write_dense_shard

    ranges = shard_ranges(len(vectors), shards)
    if params.kind == "ivfpq":
        _ivfpq_from_shards(engine, folder, vectors, params, ranges)
        return
    calls = [(folder / shard_dir(s), vectors[a:b], params) for s, (a, b) in enumerate(ranges)]
    engine.map(write_dense_shard, calls)
    write_dense_globals(folder, params, ranges)


def _ivfpq_from_shards(
    engine: BuildEngine, folder: Path, vectors: np.ndarray, params: DenseParams, ranges: list[tuple[int, int]]
) -> None:
    """Train once on a seeded sample, add each shard's rows to a copy (tasks), merge on disk."""
    from indexes.dense import ivf
    from indexes.shards import shard_dir

    parts = folder.parent / ".ivfpq-parts"  # inside the build's folder; removed once merged
    trained = parts / "trained.faiss"
    engine.map(ivf.train_ivfpq, [(ivf.training_sample(vectors, params), params, trained)])
    files = [parts / f"{shard_dir(s)}.faiss" for s in range(len(ranges))]
    engine.map(
        ivf.add_ivfpq_shard, [(trained, vectors[a:b], a, f) for f, (a, b) in zip(files, ranges, strict=True)]
    )
    np.save(parts / "vectors.npy", np.asarray(vectors, dtype=params.rescore_dtype), allow_pickle=False)
    ivf.merge_ivfpq(trained, files, folder, parts / "vectors.npy")
    shutil.rmtree(parts)


def _tokens(passages: Sequence[str]) -> list[list[str]]:
    return [text.tokenize(p) for p in passages]


def _bm25_whole(folder: Path, passages: list[str], backend: str, params: Bm25Params) -> None:
    tokens = _tokens(passages)
    if backend == "rank-bm25":
        RankBm25Index.build(tokens, params).save(folder)
        return
    Bm25sIndex.build(cast(Any, _first_seen_ids(tokens)), params).save(folder)


def _first_seen_ids(tokens: list[list[str]]) -> tuple[list[list[int]], dict[str, int]]:
    """Token ids numbered in order of first appearance, with their vocabulary.

    Given strings, bm25s numbers its vocabulary in the order of a Python set, which changes with
    each process's hash seed: the same corpus gave other bytes in another process (or on a Ray
    worker). Given ids and a vocabulary (bm25s' documented tuple input), the files are the same
    on every process and engine; scores are unchanged.
    """
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(token, len(vocab)) for token in doc] for doc in tokens]
    return ids, vocab


def _bm25_stats_of(passages: list[str]) -> Bm25Stats:
    from indexes.shards import bm25_stats

    return bm25_stats(_tokens(passages))


def _bm25_shard(folder: Path, passages: list[str], stats: Bm25Stats, params: Bm25Params) -> None:
    from indexes.shards import write_bm25_shard

    write_bm25_shard(folder, _tokens(passages), stats, params)


def _dense_whole(folder: Path, vectors: np.ndarray, params: DenseParams) -> None:
    DenseIndex.build(vectors, params).save(folder)
