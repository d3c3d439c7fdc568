"""Sharded BM25 and flat FAISS against one unsharded index, on random small corpora and queries.

The reference is the single bm25s index (``Bm25sIndex``) and the single FAISS flat index; the
sharded copies are written and loaded through indexes/shards.py and indexes/shard_search.py.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.errors import ConfigError, IndexCorruptError
from indexes.bm25 import Bm25Params, Bm25sIndex
from indexes.dense.index import DenseIndex, DenseParams
from indexes.manifest import describe_files
from indexes.shard_search import ShardedBm25, ShardedDense
from indexes.shards import (
    METHODS,
    bm25_stats,
    merge_bm25_stats,
    shard_ranges,
    write_bm25_shard,
    write_dense_globals,
    write_dense_shard,
    write_shards,
)

WORDS = ["aspirin", "heparin", "warfarin", "statin", "sepsis", "lactate", "gout", "af", "ldl", "inr"]
UNSEEN = ["marfan", "colchicine"]  # never in a corpus: queried, must be ignored like bm25s does

corpora = st.lists(st.lists(st.sampled_from(WORDS), max_size=10), min_size=1, max_size=25).filter(
    lambda docs: any(docs)  # bm25s cannot index a corpus without a single token
)
queries = st.lists(st.sampled_from(WORDS + UNSEEN), min_size=1, max_size=4)
params = st.builds(
    Bm25Params,
    k1=st.sampled_from([1.2, 0.5, 2.0]),
    b=st.sampled_from([0.75, 0.0, 1.0]),
    method=st.sampled_from(METHODS),
)


def sharded_copy(folder: Path, docs: list[list[str]], n_shards: int, p: Bm25Params) -> ShardedBm25:
    ranges = shard_ranges(len(docs), n_shards)
    write_shards(folder, docs, None, ranges, p, None)
    return ShardedBm25.load(folder / "bm25", p, ranges)


# an empty shard (more shards than rows), a token only in the last shard, an empty document
@example(
    docs=[["aspirin"], [], ["gout", "gout"]],
    n_shards=5,
    query=["gout", "aspirin"],
    k=2,
    p=Bm25Params(),
    mask_seed=None,
)
@example(
    docs=[["af"], ["af", "inr"], ["af"], ["inr", "af", "af"]],
    n_shards=2,
    query=["af", "af"],
    k=3,
    p=Bm25Params(method="bm25l"),
    mask_seed=3,
)
@given(
    docs=corpora,
    n_shards=st.integers(1, 5),
    query=queries,
    k=st.integers(1, 12),
    p=params,
    mask_seed=st.none() | st.integers(0, 2**16),
)
@settings(max_examples=150, deadline=None)
def test_merged_shard_top_k_is_the_unsharded_bm25s_top_k(docs, n_shards, query, k, p, mask_seed):
    reference = Bm25sIndex.build(docs, p)
    allowed = None if mask_seed is None else np.random.default_rng(mask_seed).random(len(docs)) < 0.6
    with tempfile.TemporaryDirectory() as tmp:
        sharded = sharded_copy(Path(tmp), docs, n_shards, p)
        rows, scores = sharded.search(query, k, allowed)
    want_rows, want_scores = reference.search(query, k, allowed)
    assert rows.tolist() == want_rows.tolist()
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5)
    if allowed is not None:
        assert allowed[rows].all()


@given(docs=corpora, n_shards=st.integers(1, 5))
@settings(max_examples=60, deadline=None)
def test_statistics_counted_per_shard_and_merged_equal_one_pass(docs, n_shards):
    parts = [bm25_stats(docs[a:b]) for a, b in shard_ranges(len(docs), n_shards)]
    merged, whole = merge_bm25_stats(parts), bm25_stats(docs)
    assert (merged.n_docs, merged.total_tokens) == (len(docs), sum(map(len, docs)))
    assert (whole.n_docs, whole.total_tokens) == (merged.n_docs, merged.total_tokens)
    assert {t: int(merged.df[i]) for t, i in merged.vocab.items()} == {
        t: int(whole.df[i]) for t, i in whole.vocab.items()
    }
    assert {t: sum(t in d for d in docs) for t in whole.vocab} == {
        t: int(whole.df[i]) for t, i in whole.vocab.items()
    }


@given(n_rows=st.integers(0, 200), n_shards=st.integers(1, 9))
def test_shard_ranges_tile_the_rows_evenly(n_rows, n_shards):
    ranges = shard_ranges(n_rows, n_shards)
    assert len(ranges) == n_shards and ranges[0][0] == 0 and ranges[-1][1] == n_rows
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    sizes = [b - a for a, b in ranges]
    assert max(sizes) - min(sizes) <= 1


@given(
    n=st.integers(1, 40),
    n_shards=st.integers(1, 5),
    k=st.integers(1, 15),
    seed=st.integers(0, 2**16),
    masked=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_flat_shards_search_like_one_flat_index(n, n_shards, k, seed, masked):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = rng.standard_normal(8).astype(np.float32)
    allowed = rng.random(n) < 0.5 if masked else None
    ranges = shard_ranges(n, n_shards)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for s, (a, b) in enumerate(ranges):
            write_dense_shard(folder / f"shard-{s:04d}", vectors[a:b], DenseParams(kind="flat"))
        write_dense_globals(folder, DenseParams(kind="flat"), ranges)
        sharded = ShardedDense.load(folder, ranges)
    single = DenseIndex.build(vectors, DenseParams(kind="flat"))
    rows, scores = sharded.search(query, k, allowed)
    want_rows, want_scores = single.search(query, k, allowed)
    assert rows.tolist() == want_rows.tolist()
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5)
    assert (sharded.size, sharded.dim) == (n, 8)
    np.testing.assert_array_equal(sharded.reconstruct(0, n), vectors)


def test_hnsw_shards_find_each_vector_itself(tmp_path):
    vectors = np.eye(12, dtype=np.float32)
    ranges = shard_ranges(12, 3)
    for s, (a, b) in enumerate(ranges):
        write_dense_shard(tmp_path / f"shard-{s:04d}", vectors[a:b], DenseParams(kind="hnsw"))
    write_dense_globals(tmp_path, DenseParams(kind="hnsw"), ranges)
    sharded = ShardedDense.load(tmp_path, ranges)
    assert [int(sharded.search(v, 1)[0][0]) for v in vectors] == list(range(12))


def test_unknown_method_and_ivfpq_shards_are_refused_with_what_to_do(tmp_path):
    stats = bm25_stats([["aspirin"]])
    with pytest.raises(ConfigError, match="choose one of robertson, lucene"):
        write_bm25_shard(tmp_path / "s", [["aspirin"]], stats, Bm25Params(method="okapi-ish"))
    ivfpq = DenseParams.__new__(DenseParams)  # a kind this module does not shard, whatever dense.py accepts
    object.__setattr__(ivfpq, "kind", "ivfpq")
    with pytest.raises(ConfigError, match="one merged index"):
        write_dense_shard(tmp_path / "d", np.eye(2, dtype=np.float32), ivfpq)


def test_a_shard_written_with_other_statistics_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not in the global statistics"):
        write_bm25_shard(tmp_path / "s", [["heparin"]], bm25_stats([["aspirin"]]), Bm25Params())
    docs = [["aspirin"], ["heparin"]]
    write_shards(tmp_path, docs, None, shard_ranges(2, 2), Bm25Params(), None)
    with pytest.raises(IndexCorruptError, match="disagree on the shards"):
        ShardedBm25.load(tmp_path / "bm25", Bm25Params(), [(0, 2), (2, 2)])


WRITE = """
import sys
from pathlib import Path
from indexes.bm25 import Bm25Params
from indexes.shards import shard_ranges, write_shards
docs = [w.split() for w in ["aspirin heparin inr", "gout colchicine", "inr warfarin heparin af", "af"]]
write_shards(Path(sys.argv[1]), docs, None, shard_ranges(4, 2), Bm25Params(), None)
"""


def test_shard_files_are_the_same_bytes_in_every_process(tmp_path):
    """A shard rewritten on another node (another hash seed) must not change a byte."""
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", WRITE, str(tmp_path / seed)], check=True, env=env, timeout=120)
    first, second = describe_files(tmp_path / "1"), describe_files(tmp_path / "2")
    assert len(first) == 2 * 5 + 4 and first == second
