"""Sharded index format: BM25 and dense shards that answer exactly like one unsharded index.

An index of ``n`` chunks split into contiguous row ranges (``shard_ranges``) keeps ``chunks.jsonl``
and ``chunk_offsets.npy`` global and adds, per shard ``s``::

    bm25/shard-NNNN/    data.npy (float32 scores), indices.npy (int32 rows within the shard),
                        indptr.npy (int64), tokens.npy (int64 global token ids, sorted), shard.json
    dense/shard-NNNN/   index.faiss + medcite_dense.json (kind flat or hnsw)

and global files: ``bm25/`` vocab.json (tokens in id order), df.npy (documents per token),
sharded.json (document count, token total, ranges), medcite_bm25.json (backend and parameters);
``dense/`` medcite_dense.json and shards.json (ranges). ``manifest["shards"]`` is
``sharding_manifest(ranges)``.

bm25s cannot merge indexes or take outside statistics, so each shard's sparse score matrix is
computed here with bm25s's formulas (same operations, same dtypes, so the same float32 scores)
from GLOBAL document frequencies, document count and average length: summed per shard at query
time and merged, the top ``k`` is the unsharded bm25s index's top ``k``. Every ``write_*`` is a
plain function of picklable arguments, so a distributed build can run it on another node.
Everything is ``.npy`` and JSON, loaded with ``allow_pickle=False``.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, IndexCorruptError
from indexes.bm25 import Bm25Params
from indexes.dense.index import PARAMS_FILE as DENSE_PARAMS_FILE
from indexes.dense.index import DenseIndex, DenseParams

FORMAT = 1
METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")  # every bm25s scoring variant
NONOCCURRENCE_METHODS = ("bm25l", "bm25+")  # a token a document lacks still scores
DELTA = 0.5  # bm25s's default delta for bm25l and bm25+ (Bm25sIndex.build keeps it)
BM25_SHARD_ARRAYS = ("data.npy", "indices.npy", "indptr.npy", "tokens.npy")
BM25_SHARD_FILE = "shard.json"
BM25_GLOBALS = ("vocab.json", "df.npy", "sharded.json", "medcite_bm25.json")
DENSE_SHARDS_FILE = "shards.json"
SHARDED_KINDS = ("flat", "hnsw")  # one FAISS file per shard; ivfpq is one merged index (indexes/dense/ivf.py)


def shard_dir(shard: int) -> str:
    return f"shard-{shard:04d}"


def shard_ranges(n_rows: int, n_shards: int) -> list[tuple[int, int]]:
    """``n_shards`` contiguous ``[start, end)`` ranges covering ``n_rows``, sizes differing by at
    most one (with more shards than rows, the last ones are empty)."""
    if n_shards < 1:
        raise ConfigError(f"the number of shards must be at least 1, got {n_shards}")
    if n_rows < 0:
        raise ConfigError(f"the number of rows cannot be negative, got {n_rows}")
    base, extra = divmod(n_rows, n_shards)
    ranges, start = [], 0
    for s in range(n_shards):
        end = start + base + (1 if s < extra else 0)
        ranges.append((start, end))
        start = end
    return ranges


def check_ranges(ranges: Sequence[Sequence[int]], n_rows: int) -> list[tuple[int, int]]:
    """The ranges as tuples, or IndexCorruptError unless they tile ``[0, n_rows)`` in order."""
    out = [(int(a), int(b)) for a, b in ranges]
    start = 0
    for a, b in out:
        if a != start or b < a:
            raise IndexCorruptError(
                f"shard ranges {out} do not tile rows 0..{n_rows} in order; rebuild the index"
            )
        start = b
    if not out or start != n_rows:
        raise IndexCorruptError(
            f"shard ranges {out} do not cover the index's {n_rows} rows; rebuild the index"
        )
    return out


def check_method(params: Bm25Params) -> None:
    if params.method not in METHODS:
        raise ConfigError(
            f"BM25 method {params.method!r} cannot be sharded; choose one of {', '.join(METHODS)}"
        )


@dataclass(frozen=True)
class Bm25Stats:
    """Counts over some rows: token -> id, documents per token id, documents, tokens."""

    vocab: dict[str, int]
    df: np.ndarray
    n_docs: int
    total_tokens: int


class Bm25Counter:
    """Counts rows one at a time: token ids in order of first appearance (not set(): its order
    changes with the hash seed), documents per token, rows and tokens."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.df = array("q")
        self.rows = self.tokens = 0

    def add(self, tokens: Sequence[str]) -> list[int]:
        """Count one row; returns its tokens' global ids."""
        ids = [self.vocab.setdefault(t, len(self.vocab)) for t in tokens]
        self.df.extend([0] * (len(self.vocab) - len(self.df)))
        for i in dict.fromkeys(ids):
            self.df[i] += 1
        self.rows += 1
        self.tokens += len(tokens)
        return ids

    def stats(self) -> Bm25Stats:
        df = np.frombuffer(self.df, dtype=np.int64).copy() if self.df else np.zeros(0, np.int64)
        return Bm25Stats(self.vocab, df, self.rows, self.tokens)


def bm25_stats(token_lists: Iterable[Sequence[str]]) -> Bm25Stats:
    """One pass over one shard's rows (ids in order of first appearance)."""
    counter = Bm25Counter()
    for tokens in token_lists:
        counter.add(tokens)
    return counter.stats()


def merge_bm25_stats(parts: Sequence[Bm25Stats]) -> Bm25Stats:
    """Global statistics from shards counted apart (ids: first appearance over the parts in order)."""
    vocab: dict[str, int] = {}
    for part in parts:
        for token in part.vocab:
            vocab.setdefault(token, len(vocab))
    df = np.zeros(len(vocab), dtype=np.int64)
    for part in parts:
        if part.vocab:
            ids = np.fromiter((vocab[t] for t in part.vocab), dtype=np.int64, count=len(part.vocab))
            local = np.fromiter(part.vocab.values(), dtype=np.int64, count=len(part.vocab))
            np.add.at(df, ids, part.df[local])
    return Bm25Stats(vocab, df, sum(p.n_docs for p in parts), sum(p.total_tokens for p in parts))


def average_length(stats: Bm25Stats) -> np.float64:
    """bm25s's ``np.array(lengths).mean()``: the exact integer total over the count, in float64."""
    return np.float64(stats.total_tokens) / np.float64(max(stats.n_docs, 1))


def _idf(method: str, df: int, n: int) -> float:
    """bm25s's idf of each method (scoring.py), in Python floats as bm25s computes it."""
    if method == "robertson":
        inner = (n - df + 0.5) / (df + 0.5)
        return math.log(inner if inner >= 1 else 1)
    if method == "lucene":
        return math.log(1 + (n - df + 0.5) / (df + 0.5))
    if method == "atire":
        return math.log(n / df)
    if method == "bm25l":
        return math.log((n + 1) / (df + 0.5))
    return math.log((n + 1) / df)  # bm25+


def _tfc(method: str, tf: Any, l_d: Any, l_avg: np.float64, k1: float, b: float) -> Any:
    """bm25s's term-frequency component, written with the same operations in the same order."""
    if method in ("robertson", "lucene"):
        return tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf)
    if method == "atire":
        return (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * l_d / l_avg))
    if method == "bm25l":
        c = tf / (1 - b + b * l_d / l_avg)
        return ((k1 + 1) * (c + DELTA)) / (k1 + c + DELTA)
    num = (k1 + 1) * tf  # bm25+
    den = k1 * (1 - b + b * l_d / l_avg) + tf
    return (num / den) + DELTA


def _per_df(df: np.ndarray, value: Any) -> np.ndarray:
    """``value(d)`` for each entry of ``df`` as float32, computed once per distinct count."""
    if df.size == 0:
        return np.zeros(0, dtype=np.float32)
    distinct, inverse = np.unique(df, return_inverse=True)
    values = np.array([value(int(d)) if d > 0 else 0.0 for d in distinct], dtype=np.float32)
    return values[inverse.reshape(-1)]


def idf_array(stats: Bm25Stats, params: Bm25Params) -> np.ndarray:
    return _per_df(stats.df, lambda d: _idf(params.method, d, stats.n_docs))


def nonoccurrence_array(stats: Bm25Stats, params: Bm25Params) -> np.ndarray | None:
    """What bm25l and bm25+ add for every query token, present in a document or not (else None)."""
    if params.method not in NONOCCURRENCE_METHODS:
        return None
    l_avg = average_length(stats)
    zero_tf = _tfc(params.method, 0, l_avg, l_avg, params.k1, params.b)
    return _per_df(stats.df, lambda d: _idf(params.method, d, stats.n_docs) * zero_tf)


def score_matrix(
    token_lists: Sequence[Sequence[str]], stats: Bm25Stats, params: Bm25Params
) -> dict[str, np.ndarray]:
    """The shard's BM25 scores as a CSC matrix over the tokens it holds (global statistics)."""
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    try:
        flat = np.fromiter(
            (stats.vocab[t] for tokens in token_lists for t in tokens),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
    except KeyError as exc:
        raise ConfigError(f"token {exc} is not in the global statistics; count every shard's rows") from exc
    return score_matrix_of_ids(flat, lengths, stats, params)


def score_matrix_of_ids(
    flat: np.ndarray, lengths: np.ndarray, stats: Bm25Stats, params: Bm25Params
) -> dict[str, np.ndarray]:
    """``score_matrix`` from the rows' global token ids, concatenated (``flat``), and their
    lengths; ``stats.vocab`` is not used (a streamed build's shard tasks pass it empty)."""
    check_method(params)
    lengths = np.asarray(lengths, dtype=np.int64)
    flat = np.asarray(flat, dtype=np.int64)
    if flat.size != int(lengths.sum()):
        raise ConfigError(f"{flat.size} token ids for rows of {int(lengths.sum())} tokens")
    n_rows = len(lengths)
    docs = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    pairs, tf = np.unique(flat * max(n_rows, 1) + docs, return_counts=True)  # sorted: token, doc
    token_ids, rows = np.divmod(pairs, max(n_rows, 1))
    tfc = _tfc(
        params.method, tf.astype(np.float32), lengths[rows], average_length(stats), params.k1, params.b
    )
    scores = idf_array(stats, params)[token_ids] * tfc
    nonocc = nonoccurrence_array(stats, params)
    if nonocc is not None:
        scores -= nonocc[token_ids]
    tokens, starts = np.unique(token_ids, return_index=True)
    indptr = np.append(starts, token_ids.size).astype(np.int64)
    return {
        "data": scores.astype(np.float32),
        "indices": rows.astype(np.int32),
        "indptr": indptr,
        "tokens": tokens.astype(np.int64),
    }


def write_bm25_shard(
    folder: Path, token_lists: Sequence[Sequence[str]], stats: Bm25Stats, params: Bm25Params
) -> None:
    """One shard's score matrix (``folder`` = ``<index>/bm25/shard-NNNN``), global ``stats``."""
    matrix = score_matrix(token_lists, stats, params)
    save_bm25_shard(folder, matrix, len(token_lists))


def save_bm25_shard(folder: Path, matrix: dict[str, np.ndarray], rows: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in BM25_SHARD_ARRAYS:
        np.save(folder / name, matrix[name.removesuffix(".npy")], allow_pickle=False)
    meta = {"format": FORMAT, "rows": rows, "entries": int(matrix["data"].size)}
    (folder / BM25_SHARD_FILE).write_text(json.dumps(meta))


def write_bm25_globals(
    folder: Path, stats: Bm25Stats, params: Bm25Params, ranges: Sequence[tuple[int, int]]
) -> None:
    """Vocabulary, document frequencies and counts every shard scores with (``<index>/bm25``)."""
    check_method(params)
    if stats.n_docs != (ranges[-1][1] if ranges else 0):
        raise ConfigError(f"the statistics count {stats.n_docs} rows, the ranges {ranges[-1][1]}")
    folder.mkdir(parents=True, exist_ok=True)
    tokens = [""] * len(stats.vocab)
    for token, tid in stats.vocab.items():
        tokens[tid] = token
    (folder / "vocab.json").write_text(json.dumps(tokens, ensure_ascii=False))
    np.save(folder / "df.npy", np.asarray(stats.df, dtype=np.int64), allow_pickle=False)
    meta = {
        "format": FORMAT,
        "n_docs": stats.n_docs,
        "total_tokens": stats.total_tokens,
        "delta": DELTA,
        "ranges": [list(r) for r in ranges],
    }
    (folder / "sharded.json").write_text(json.dumps(meta))
    (folder / "medcite_bm25.json").write_text(json.dumps({"backend": "bm25s", **asdict(params)}))


def write_dense_shard(folder: Path, vectors: np.ndarray, params: DenseParams) -> None:
    """One shard's FAISS index (``folder`` = ``<index>/dense/shard-NNNN``), rows from 0."""
    if params.kind not in SHARDED_KINDS:
        raise ConfigError(
            f"dense kind {params.kind!r} is not sharded per file; ivfpq is one merged index "
            "built with indexes/dense/ivf.py (train_ivfpq, add_ivfpq_shard, merge_ivfpq)"
        )
    DenseIndex.build(vectors, params).save(folder)


def write_dense_globals(folder: Path, params: DenseParams, ranges: Sequence[tuple[int, int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DENSE_PARAMS_FILE).write_text(json.dumps(asdict(params)))
    (folder / DENSE_SHARDS_FILE).write_text(
        json.dumps({"format": FORMAT, "ranges": [list(r) for r in ranges]})
    )


def sharding_manifest(ranges: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """What ``manifest["shards"]`` records: the format, the count and each shard's rows."""
    return {"format": FORMAT, "count": len(ranges), "ranges": [list(r) for r in ranges]}


def write_shards(
    work: Path,
    token_lists: Sequence[Sequence[str]],
    vectors: np.ndarray | None,
    ranges: Sequence[tuple[int, int]],
    bm25_params: Bm25Params,
    dense_params: DenseParams | None,
) -> Bm25Stats:
    """Every shard and global file under ``work/bm25`` and ``work/dense``, in this process (the
    local engine; the Ray engine runs the per-shard functions as tasks). Returns the statistics."""
    check_method(bm25_params)
    ranges = check_ranges(ranges, len(token_lists))
    if vectors is not None and len(vectors) != len(token_lists):
        raise ConfigError(f"{len(vectors)} vectors for {len(token_lists)} rows")
    stats = merge_bm25_stats([bm25_stats(token_lists[a:b]) for a, b in ranges])
    for s, (a, b) in enumerate(ranges):
        write_bm25_shard(work / "bm25" / shard_dir(s), token_lists[a:b], stats, bm25_params)
    write_bm25_globals(work / "bm25", stats, bm25_params, ranges)
    if vectors is not None and dense_params is not None:
        for s, (a, b) in enumerate(ranges):
            write_dense_shard(work / "dense" / shard_dir(s), vectors[a:b], dense_params)
        write_dense_globals(work / "dense", dense_params, ranges)
    return stats
