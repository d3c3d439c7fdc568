"""Search a sharded index as if it were one: global rows, global masks, exact merge of shard top-k.

``ShardedBm25`` is a :class:`indexes.bm25.LexicalIndex` and ``ShardedDense`` has the interface of
:class:`indexes.dense.index.DenseIndex`, so the retrievers in ``rag/retrieve`` use them unchanged. The
format is described in :mod:`indexes.shards`.

Shards are searched in parallel by a thread pool per index object (:mod:`indexes.shard_pool`;
``search_threads``: None = one thread per usable CPU, at most one per shard; 1 = one shard after
another). BM25 shards are scored one after another unless ``search_threads`` is given: at 1M rows
in 8 shards a shard's scoring takes ~0.4 ms, less than handing it to a thread, and on the quiet
2-core machine 2 threads gave a p50 of 4.06 ms against 3.12 ms sequential, while flat dense shards
(~8 ms each) went from 66.7 to 57.0 ms (``docs/results/bench/shard_latency_1M.json``). The
merge is the same either way: each shard's top ``k`` in shard order, then
:func:`merge_top_k`. ``close()`` stops the threads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import IndexCorruptError
from indexes.bm25 import Bm25Params, top_k
from indexes.dense.index import DenseIndex, DenseParams
from indexes.shard_pool import ShardPool, one_faiss_thread, pool_size
from indexes.shards import (
    BM25_SHARD_ARRAYS,
    BM25_SHARD_FILE,
    DENSE_SHARDS_FILE,
    Bm25Stats,
    check_method,
    check_ranges,
    nonoccurrence_array,
    save_bm25_shard,
    shard_dir,
    write_bm25_globals,
    write_dense_globals,
)

_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))


def merge_top_k(parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of every shard's (global rows, scores), best first, ties by row."""
    if not parts:
        return _EMPTY
    rows = np.concatenate([p[0] for p in parts]).astype(np.int64)
    scores = np.concatenate([p[1] for p in parts]).astype(np.float32)
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


def _json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise IndexCorruptError(f"missing or invalid {path}: {exc}; rebuild the index") from exc


class _Bm25Shard:
    """One shard's CSC score matrix; columns are the global token ids in ``tokens``."""

    def __init__(self, arrays: dict[str, np.ndarray], rows: int) -> None:
        self.arrays = arrays
        self.rows = rows

    @classmethod
    def load(cls, folder: Path, rows: int, *, mmap: bool) -> _Bm25Shard:
        meta = _json(folder / BM25_SHARD_FILE)
        try:
            arrays = {
                name.removesuffix(".npy"): np.load(
                    folder / name, mmap_mode="r" if mmap else None, allow_pickle=False
                )
                for name in BM25_SHARD_ARRAYS
            }
        except (OSError, ValueError) as exc:
            raise IndexCorruptError(
                f"cannot load the BM25 shard in {folder}: {exc}; rebuild the index"
            ) from exc
        if meta.get("rows") != rows or arrays["indptr"].size != arrays["tokens"].size + 1:
            raise IndexCorruptError(
                f"{folder} does not hold the {rows} rows its range says; rebuild the index"
            )
        return cls(arrays, rows)

    def scores(self, token_ids: Sequence[int]) -> np.ndarray:
        """bm25s's sum: token by token, in query order, in float32."""
        data, indices, indptr, tokens = (self.arrays[k] for k in ("data", "indices", "indptr", "tokens"))
        scores = np.zeros(self.rows, dtype=np.float32)
        where = np.searchsorted(tokens, np.asarray(token_ids, dtype=np.int64))
        for tid, col in zip(token_ids, where, strict=True):
            if col < tokens.size and tokens[col] == tid:
                start, end = indptr[col], indptr[col + 1]
                scores[indices[start:end]] += data[start:end]  # a column holds each row at most once
        return scores

    def detach(self) -> None:
        self.arrays = {k: np.array(v) if isinstance(v, np.memmap) else v for k, v in self.arrays.items()}


class ShardedBm25:
    """BM25 over shards scored with global statistics; same hits and scores as one bm25s index."""

    backend: ClassVar[str] = "bm25s"

    def __init__(
        self,
        stats: Bm25Stats,
        params: Bm25Params,
        ranges: list[tuple[int, int]],
        shards: list[_Bm25Shard],
        search_threads: int | None = None,
    ) -> None:
        self.stats = stats
        self.params = params
        self.ranges = ranges
        self.shards = shards
        self._nonoccurrence = nonoccurrence_array(stats, params)
        threads = 1 if search_threads is None else search_threads  # see the module docstring
        self.pool = ShardPool(pool_size(len(shards), threads))

    @classmethod
    def load(
        cls,
        folder: Path,
        params: Bm25Params,
        ranges: Sequence[Sequence[int]],
        *,
        mmap: bool = True,
        search_threads: int | None = None,
    ) -> ShardedBm25:
        """Open ``<index>/bm25`` whose shards hold ``ranges`` (from the manifest)."""
        check_method(params)
        meta = _json(folder / "sharded.json")
        ranges = check_ranges(ranges, int(meta.get("n_docs", -1)))
        if [list(r) for r in ranges] != meta.get("ranges"):
            raise IndexCorruptError(f"{folder}/sharded.json and the manifest disagree on the shards; rebuild")
        try:
            tokens = json.loads((folder / "vocab.json").read_text())
            df = np.load(folder / "df.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexCorruptError(f"cannot read the BM25 vocabulary in {folder}: {exc}; rebuild") from exc
        if not isinstance(tokens, list) or len(tokens) != df.size:
            raise IndexCorruptError(f"{folder}: vocab.json and df.npy differ in length; rebuild the index")
        stats = Bm25Stats(
            {t: i for i, t in enumerate(tokens)}, df, int(meta["n_docs"]), int(meta["total_tokens"])
        )
        shards = [_Bm25Shard.load(folder / shard_dir(s), b - a, mmap=mmap) for s, (a, b) in enumerate(ranges)]
        return cls(stats, params, ranges, shards, search_threads)

    @property
    def vocabulary_size(self) -> int:
        return len(self.stats.vocab)

    def search(
        self, tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        ids = [self.stats.vocab[t] for t in tokens if t in self.stats.vocab]
        if not ids or k <= 0:
            return _EMPTY
        extra = self._nonoccurrence[ids].sum() if self._nonoccurrence is not None else None

        def shard_top_k(s: int) -> tuple[np.ndarray, np.ndarray]:
            start, end = self.ranges[s]
            scores = self.shards[s].scores(ids)
            if extra is not None:
                scores += extra
            rows, found = top_k(scores, k, allowed[start:end] if allowed is not None else None)
            return rows + start, found

        return merge_top_k(self.pool.map(shard_top_k, len(self.shards)), k)

    def save(self, folder: Path) -> None:
        for s, shard in enumerate(self.shards):
            save_bm25_shard(folder / shard_dir(s), shard.arrays, shard.rows)
        write_bm25_globals(folder, self.stats, self.params, self.ranges)

    def detach(self) -> None:
        for shard in self.shards:
            shard.detach()

    def close(self) -> None:
        """Stop the search threads; the index still answers, one shard after another."""
        self.pool.close()


class ShardedDense:
    """FAISS shards (flat or hnsw) searched in parallel and merged; flat is exact like one index."""

    def __init__(
        self,
        shards: list[DenseIndex],
        ranges: list[tuple[int, int]],
        params: DenseParams,
        search_threads: int | None = None,
    ) -> None:
        self.shards = shards
        self.ranges = ranges
        self.params = params
        self.pool = ShardPool(pool_size(len(shards), search_threads), initializer=one_faiss_thread)

    @classmethod
    def load(
        cls, folder: Path, ranges: Sequence[Sequence[int]], *, search_threads: int | None = None
    ) -> ShardedDense:
        recorded = _json(folder / DENSE_SHARDS_FILE).get("ranges")
        checked = check_ranges(ranges, int(ranges[-1][1]) if ranges else 0)
        if recorded != [list(r) for r in checked]:
            raise IndexCorruptError(
                f"{folder}/{DENSE_SHARDS_FILE} and the manifest disagree on the shards; rebuild"
            )
        shards = [DenseIndex.load(folder / shard_dir(s)) for s in range(len(checked))]
        for shard, (a, b) in zip(shards, checked, strict=True):
            if shard.size != b - a:
                raise IndexCorruptError(
                    f"{folder}: a dense shard holds {shard.size} vectors for {b - a} rows; rebuild"
                )
        return cls(shards, checked, shards[0].params, search_threads)

    @property
    def size(self) -> int:
        return sum(shard.size for shard in self.shards)

    @property
    def dim(self) -> int:
        return self.shards[0].dim

    def reconstruct(self, start: int, n: int) -> np.ndarray:
        """The stored vectors of global rows ``start .. start+n``."""
        pieces = [np.zeros((0, self.dim), dtype=np.float32)]
        for shard, (a, b) in zip(self.shards, self.ranges, strict=True):
            lo, hi = max(start, a), min(start + n, b)
            if lo < hi:
                pieces.append(shard.reconstruct(lo - a, hi - lo))
        return np.concatenate(pieces)

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosine scores of the ``k`` nearest chunks over every shard, best first."""

        def shard_top_k(s: int) -> tuple[np.ndarray, np.ndarray]:
            start, end = self.ranges[s]
            rows, scores = self.shards[s].search(
                query, k, allowed[start:end] if allowed is not None else None
            )
            return rows + start, scores

        return merge_top_k(self.pool.map(shard_top_k, len(self.shards)), max(k, 0))

    def save(self, folder: Path) -> None:
        for s, shard in enumerate(self.shards):
            shard.save(folder / shard_dir(s))
        write_dense_globals(folder, self.params, self.ranges)

    def close(self) -> None:
        """Stop the search threads; the index still answers, one shard after another."""
        self.pool.close()
