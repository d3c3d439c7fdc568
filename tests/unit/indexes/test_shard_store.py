"""A sharded copy of a real small index: loaded, verified and searched like the unsharded one.

BM25 over the open-medicine guideline index of tests/conftest.py (``bm25_paths``), through
``rag.indexing.retrieve``; dense and hybrid over the same guidelines built with the hash
embedder (the embedder is not the subject here), through ``rag.indexing.make_retriever``.
"""

from __future__ import annotations

import json
import shutil

import pytest

from core.errors import IndexCorruptError
from core.paths import Paths
from core.types import Filters
from indexes.dense.index import DenseParams
from indexes.manifest import write_manifest
from indexes.reshard import reshard
from indexes.shard_search import ShardedBm25, ShardedDense
from indexes.store import load_index
from rag.indexing import make_retriever, retrieve
from tests.helpers import HashEmbedder, guideline_index

QUERIES = [
    "anticoagulation in atrial fibrillation",
    "CHA2DS2-VASc score",
    "statin therapy LDL cholesterol",
    "blood pressure target",
    "bleeding risk",
]


def sharded_paths(tmp_path_factory, source: Paths, n_shards: int) -> Paths:
    paths = source.model_copy(update={"data_dir": tmp_path_factory.mktemp(f"sharded-{n_shards}")})
    reshard(source.indexes_dir / "default", paths.indexes_dir / "default", n_shards)
    return paths


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, bm25_paths) -> Paths:
    return sharded_paths(tmp_path_factory, bm25_paths, 3)


@pytest.fixture(scope="module")
def dense_pair(tmp_path_factory) -> tuple[Paths, Paths]:
    """An unsharded index with flat vectors (hash embedder) and its copy in 4 shards."""
    paths = guideline_index(tmp_path_factory.mktemp("dense-data"), DenseParams(kind="flat"))
    return paths, sharded_paths(tmp_path_factory, paths, 4)


def hits(paths: Paths, query: str, filters: Filters | None = None) -> list[tuple[str, float]]:
    found = retrieve(paths, "default", query, k=8, mode="bm25", filters=filters or Filters())
    return [(h.chunk.chunk_id, h.score) for h in found]


def same(want: list[tuple[str, float]]) -> list[tuple[str, object]]:
    """``want`` with scores compared to 1e-5 relative (ids exactly, in order)."""
    return [(cid, pytest.approx(score, rel=1e-5)) for cid, score in want]


def test_the_sharded_copy_loads_as_shards_and_its_manifest_lists_every_shard_file(sharded):
    index = load_index(sharded.indexes_dir / "default")
    try:
        assert isinstance(index.lexical, ShardedBm25) and len(index.lexical.shards) == 3
        shards = index.manifest["shards"]
        assert shards["count"] == 3 and shards["ranges"][-1][1] == len(index.chunks)
        files = index.manifest["files"]
        for s in range(3):
            for name in ("data.npy", "indices.npy", "indptr.npy", "tokens.npy", "shard.json"):
                assert f"bm25/shard-{s:04d}/{name}" in files
    finally:
        index.close()


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_retrieval_over_shards_gives_the_unsharded_hits(bm25_paths, sharded, query):
    want = hits(bm25_paths, query)
    assert want, "the query should find something in the guideline index"
    assert hits(sharded, query) == same(want)


def test_filters_apply_over_global_rows(bm25_paths, sharded):
    index = load_index(bm25_paths.indexes_dir / "default")
    try:
        sections = sorted({c.section[-1] for c in index.chunks if c.section})
        filters = Filters(sections=frozenset(sections[1:3]))
        allowed = {index.chunks.get(int(r)).chunk_id for r in index.rows_where(filters).nonzero()[0]}
    finally:
        index.close()
    want = hits(bm25_paths, "patients treatment risk", filters)
    assert want and hits(sharded, "patients treatment risk", filters) == same(want)
    assert all(cid in allowed for cid, _ in want) and len(want) < len(
        hits(bm25_paths, "patients treatment risk")
    )


def test_detached_sharded_index_still_answers(bm25_paths, sharded):
    index = load_index(sharded.indexes_dir / "default")
    try:
        index.detach()
        rows, _ = index.lexical.search(["anticoagulation"], 5)
        assert [index.chunks.get(int(r)).chunk_id for r in rows] == [
            cid for cid, _ in hits(bm25_paths, "anticoagulation")[:5]
        ]
    finally:
        index.close()


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_dense_and_hybrid_over_flat_shards_give_the_unsharded_hits(dense_pair, mode):
    answers = []
    for paths in dense_pair:
        index = load_index(paths.indexes_dir / "default", embedder_fingerprint=HashEmbedder().fingerprint())
        try:
            retriever = make_retriever(index, HashEmbedder(), mode)
            answers.append([[(h.chunk.chunk_id, h.score) for h in retriever.retrieve(q, 6)] for q in QUERIES])
            kinds = type(index.dense).__name__
        finally:
            index.close()
    assert kinds == ShardedDense.__name__
    assert all(answers[0]) and answers[1] == [same(run) for run in answers[0]]


def test_a_flipped_byte_in_a_shard_file_is_refused(tmp_path, sharded):
    copy = tmp_path / "copy"
    shutil.copytree(sharded.indexes_dir / "default", copy)
    target = copy / "bm25" / "shard-0001" / "data.npy"
    raw = bytearray(target.read_bytes())
    raw[-3] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(IndexCorruptError, match=r"shard-0001/data\.npy does not match its sha256"):
        load_index(copy)


def test_a_manifest_that_does_not_cover_a_shard_is_refused(tmp_path, sharded):
    copy = tmp_path / "copy"
    shutil.copytree(sharded.indexes_dir / "default", copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    shutil.rmtree(copy / "bm25" / "shard-0002")  # removed along with its manifest entries
    fields = {k: v for k, v in manifest.items() if k not in {"files", "schema_version"}}
    write_manifest(copy, fields)
    with pytest.raises(IndexCorruptError, match=r"does not list bm25/shard-0002/data\.npy"):
        load_index(copy)


def test_a_saved_sharded_bm25_loads_back_with_the_same_answers(tmp_path, sharded):
    index = load_index(sharded.indexes_dir / "default")
    try:
        lexical = index.lexical
        assert isinstance(lexical, ShardedBm25)
        lexical.save(tmp_path / "bm25")
        again = ShardedBm25.load(tmp_path / "bm25", lexical.params, lexical.ranges, mmap=False)
        for query in QUERIES:
            tokens = query.lower().split()
            want, got = lexical.search(tokens, 10), again.search(tokens, 10)
            assert want[0].size and want[0].tolist() == got[0].tolist()
            assert want[1].tolist() == got[1].tolist()
    finally:
        index.close()


def test_closing_the_index_stops_its_shard_search_threads(dense_pair):
    index = load_index(
        dense_pair[1].indexes_dir / "default",
        embedder_fingerprint=HashEmbedder().fingerprint(),
        search_threads=2,
    )
    lexical, dense = index.lexical, index.dense
    assert isinstance(lexical, ShardedBm25) and isinstance(dense, ShardedDense)
    make_retriever(index, HashEmbedder(), "hybrid").retrieve(QUERIES[0], 5)
    assert lexical.pool.size == dense.pool.size == 2 and lexical.pool.running and dense.pool.running
    index.close()
    assert not lexical.pool.running and not dense.pool.running
