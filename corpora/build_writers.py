"""The BM25 and dense index files of a build, written through an engine.

Each writer is a plain module-level function of picklable arguments, so an engine can run it in
this process or as a Ray task on another node (which then writes to the build's folder on shared
storage). An unsharded build writes ``bm25/`` and ``dense/`` from arrays in memory
(``write_bm25``, ``write_dense``); a sharded one writes each shard from the streamed build's
spool (``bm25_from_spool``, ``dense_from_spool``; ``corpora/stream.py``), in the layout of
``indexes/shards.py``: each task reads only its own rows.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from corpora.engine import BuildEngine
from corpora.spool import Spool
from indexes import text
from indexes.bm25 import Bm25Params, Bm25sIndex, RankBm25Index
from indexes.dense.index import DenseIndex, DenseParams

if TYPE_CHECKING:
    from indexes.shards import Bm25Stats


def write_bm25(
    engine: BuildEngine, folder: Path, passages: list[str], backend: str, params: Bm25Params
) -> None:
    """``folder`` = ``<index>/bm25``: one index over every passage (the unsharded layout)."""
    engine.map(_bm25_whole, [(folder, passages, backend, params)])


def write_dense(engine: BuildEngine, folder: Path, vectors: np.ndarray, params: DenseParams) -> None:
    """``folder`` = ``<index>/dense``: one FAISS index over every vector (the unsharded layout)."""
    engine.map(_dense_whole, [(folder, vectors, params)])


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


def _dense_whole(folder: Path, vectors: np.ndarray, params: DenseParams) -> None:
    DenseIndex.build(vectors, params).save(folder)


# --- A streamed build's shards, read from its spool (corpora/spool.py). Each task reads only
# --- its own rows from the build's folder, so no process holds the corpus.


def bm25_from_spool(
    engine: BuildEngine, folder: Path, spool: Spool, stats: Bm25Stats, params: Bm25Params, shards: int
) -> list[tuple[int, int]]:
    """``folder`` = ``<index>/bm25`` from the spool in ``shards`` row ranges: the global files here
    (from ``stats``, counted as the rows were spooled), each shard's matrix by a task."""
    from indexes.shards import check_method, shard_ranges, write_bm25_globals

    check_method(params)
    ranges = shard_ranges(spool.rows, shards)
    write_bm25_globals(folder, stats, params, ranges)
    engine.map(bm25_shard_from_spool, [(folder, s, spool, params) for s in range(len(ranges))])
    return ranges


def dense_from_spool(
    engine: BuildEngine, folder: Path, spool: Spool, params: DenseParams, ranges: list[tuple[int, int]]
) -> None:
    """``folder`` = ``<index>/dense`` from the spool: a FAISS file per shard (flat, hnsw), or one
    ivfpq index merged from shards added in parallel, as ``write_dense`` writes them."""
    from indexes.shards import shard_dir, write_dense_globals

    if params.kind == "ivfpq":
        _ivfpq_from_spool(engine, folder, spool, params, ranges)
        return
    calls = [(folder / shard_dir(s), spool, a, b, params) for s, (a, b) in enumerate(ranges)]
    engine.map(dense_shard_from_spool, calls)
    write_dense_globals(folder, params, ranges)


def bm25_shard_from_spool(bm25_dir: Path, shard: int, spool: Spool, params: Bm25Params) -> None:
    """Shard ``shard``'s score matrix, with the global statistics already in ``bm25_dir``."""
    import json

    from indexes.shards import Bm25Stats, save_bm25_shard, score_matrix_of_ids, shard_dir

    meta = json.loads((bm25_dir / "sharded.json").read_text())
    start, end = meta["ranges"][shard]
    df = np.load(bm25_dir / "df.npy", allow_pickle=False)
    stats = Bm25Stats({}, df, int(meta["n_docs"]), int(meta["total_tokens"]))
    flat, lengths = spool.tokens(start, end)
    matrix = score_matrix_of_ids(flat, lengths, stats, params)
    save_bm25_shard(bm25_dir / shard_dir(shard), matrix, end - start)


def dense_shard_from_spool(folder: Path, spool: Spool, start: int, end: int, params: DenseParams) -> None:
    from indexes.shards import write_dense_shard

    write_dense_shard(folder, spool.vectors(start, end), params)


def _ivfpq_from_spool(
    engine: BuildEngine, folder: Path, spool: Spool, params: DenseParams, ranges: list[tuple[int, int]]
) -> None:
    """``indexes/dense/ivf.py``'s build (the sample ``training_sample`` takes, shards added under their
    global rows, merged in row order), each step a task that reads the spool."""
    from indexes.shards import shard_dir

    parts = folder.parent / ".ivfpq-parts"
    trained = parts / "trained.faiss"
    engine.map(_train_from_spool, [(spool, params, trained)])
    files = [parts / f"{shard_dir(s)}.faiss" for s in range(len(ranges))]
    engine.map(_add_from_spool, [(trained, spool, a, b, f) for f, (a, b) in zip(files, ranges, strict=True)])
    engine.map(_merge_from_spool, [(trained, files, folder, spool, params.rescore_dtype)])
    shutil.rmtree(parts)


def _train_from_spool(spool: Spool, params: DenseParams, trained: Path) -> None:
    from indexes.dense import ivf

    sample = spool.sample(ivf.training_rows(spool.rows, params))
    ivf.train_ivfpq(sample, params, trained)


def _add_from_spool(trained: Path, spool: Spool, start: int, end: int, out: Path) -> None:
    from indexes.dense import ivf

    ivf.add_ivfpq_shard(trained, spool.vectors(start, end), start, out)


def _merge_from_spool(trained: Path, files: list[Path], folder: Path, spool: Spool, dtype: str) -> None:
    from indexes.dense import ivf

    vectors = trained.parent / "vectors.npy"
    spool.write_npy(vectors, dtype)
    ivf.merge_ivfpq(trained, files, folder, vectors)
