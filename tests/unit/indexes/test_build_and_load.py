"""Index folders: build, verify, refuse damage, swap atomically, resume embedding."""

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from core.errors import (
    ConfigError,
    EmptyCorpusError,
    IndexCorruptError,
    IndexMismatchError,
    IndexNotFoundError,
)
from core.types import Filters
from indexes import text
from indexes.dense.embedding_cache import embed_cached, seed_from_index
from indexes.manifest import read_manifest
from indexes.store import load_index
from rag.retrieve.dense import DenseRetriever
from rag.retrieve.lexical import Bm25Retriever
from tests.helpers import HashEmbedder, all_files, make_doc, word_index

DOCS = [
    make_doc(
        "t:marfan",
        {
            "Definition": "Marfan syndrome is a connective tissue disorder.",
            "Inheritance": "Autosomal dominant inheritance, FBN1 gene.",
        },
        title="Marfan syndrome",
    ),
    make_doc(
        "t:cf",
        {
            "Definition": "Cystic fibrosis affects lungs and pancreas.",
            "Inheritance": "Autosomal recessive inheritance, CFTR gene.",
        },
        title="Cystic fibrosis",
    ),
    make_doc(
        "t:af",
        {"Anticoagulation": "Use the CHA2DS2-VASc score to decide on anticoagulation."},
        title="Atrial fibrillation guideline",
        source="guides",
    ),
]


def _build(tmp: Path, docs=DOCS, *, dense=True, name="idx", embedder=None, source_name="test"):
    embedder = (embedder or HashEmbedder()) if dense else None
    return word_index(tmp, docs, name, embedder, source_name=source_name)


def test_build_writes_a_verifiable_folder_and_loads_back(tmp_path):
    report = _build(tmp_path)
    folder = tmp_path / "indexes" / "idx"
    assert folder.is_symlink() and folder.resolve() == report.folder
    manifest = read_manifest(folder)
    assert manifest["counts"]["chunks"] == 5 and manifest["counts"]["documents"] == 3
    assert set(manifest["files"]) >= {
        "chunks.jsonl",
        "chunk_offsets.npy",
        "bm25/data.csc.index.npy",
        "dense/index.faiss",
    }
    assert len(manifest["corpus_fingerprint"]) == 64
    index = load_index(folder, embedder_fingerprint=HashEmbedder().fingerprint())
    hits = Bm25Retriever(index).retrieve("autosomal recessive CFTR", 2)
    assert hits[0].chunk.chunk_id == "t:cf#1" and hits[0].chunk.section == ("Inheritance",)
    dense_hits = DenseRetriever(index, HashEmbedder()).retrieve("CHA2DS2-VASc anticoagulation", 1)
    assert dense_hits[0].chunk.doc_id == "t:af"


def test_filters_apply_before_ranking(tmp_path):
    _build(tmp_path)
    index = load_index(tmp_path / "indexes" / "idx")
    only_inheritance = Filters(sections=frozenset({"inheritance"}))
    hits = Bm25Retriever(index).retrieve("Marfan syndrome connective", 5, only_inheritance)
    assert hits and all(h.chunk.section == ("Inheritance",) for h in hits)
    assert hits[0].chunk.doc_id == "t:marfan"
    dense = DenseRetriever(index, HashEmbedder()).retrieve("Marfan", 5, only_inheritance)
    assert {h.chunk.chunk_id for h in dense} == {"t:marfan#1", "t:cf#1"}


def test_flipped_byte_truncation_and_deletion_are_refused(tmp_path):
    _build(tmp_path)
    folder = tmp_path / "indexes" / "idx"
    target = folder / "bm25" / "data.csc.index.npy"
    original = target.read_bytes()
    target.write_bytes(original[:-1] + bytes([original[-1] ^ 0xFF]))
    with pytest.raises(IndexCorruptError, match="sha256"):
        load_index(folder)
    target.write_bytes(original[:-4])
    with pytest.raises(IndexCorruptError, match="truncated"):
        load_index(folder)
    target.unlink()
    with pytest.raises(IndexCorruptError, match="missing"):
        load_index(folder)


def test_other_embedder_or_missing_index_is_refused(tmp_path):
    _build(tmp_path)
    other = {**HashEmbedder().fingerprint(), "weights_sha256": "f" * 64}
    with pytest.raises(IndexMismatchError, match="embedder"):
        load_index(tmp_path / "indexes" / "idx", embedder_fingerprint=other)
    with pytest.raises(IndexNotFoundError, match="medcite index build"):
        load_index(tmp_path / "indexes" / "nope")


def test_failed_build_leaves_the_previous_index_served(tmp_path):
    _build(tmp_path)
    before = sorted(p.name for p in (tmp_path / "indexes").iterdir())

    class Exploding(HashEmbedder):
        weights_sha256 = "e" * 64  # another model: nothing in the embedding cache

        def embed(self, texts):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        _build(tmp_path, embedder=Exploding())
    assert sorted(p.name for p in (tmp_path / "indexes").iterdir()) == before  # no half index left
    assert load_index(tmp_path / "indexes" / "idx").manifest["counts"]["chunks"] == 5


def test_rebuild_swaps_atomically_and_removes_the_superseded_version(tmp_path):
    first = _build(tmp_path).folder
    second = _build(tmp_path, DOCS[:1]).folder
    link = tmp_path / "indexes" / "idx"
    assert link.resolve() == second and not first.exists()
    assert read_manifest(link)["counts"]["chunks"] == 2


def test_empty_corpus_is_a_clear_error_and_writes_nothing(tmp_path):
    blank = make_doc("t:blank", {"Empty": "   "})
    with pytest.raises(EmptyCorpusError, match="no chunk"):
        _build(tmp_path, [blank])
    assert [p.name for p in (tmp_path / "indexes").iterdir()] == [".idx.lock"]  # no index, no half folder


def test_duplicate_document_ids_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="twice"):
        _build(tmp_path, [DOCS[0], DOCS[0]])


def test_bm25_only_index_has_no_dense_part(tmp_path):
    _build(tmp_path, dense=False)
    index = load_index(tmp_path / "indexes" / "idx")
    assert index.dense is None and index.manifest["embedder"] is None
    assert not any("dense" in str(p) for p in all_files(tmp_path / "indexes" / "idx"))
    with pytest.raises(ConfigError, match="no dense index"):
        DenseRetriever(index, HashEmbedder())


def test_killed_embedding_resumes_from_finished_batches(tmp_path):
    texts = [f"passage number {i}" for i in range(10)]

    class DiesAfterTwoBatches(HashEmbedder):
        def embed(self, batch):
            if self.calls == 2:
                raise KeyboardInterrupt
            return super().embed(batch)

    with pytest.raises(KeyboardInterrupt):
        embed_cached(DiesAfterTwoBatches(), texts, tmp_path, batch_size=3, progress=False)
    resumed = HashEmbedder()
    vectors, reused = embed_cached(resumed, texts, tmp_path, batch_size=3, progress=False)
    assert reused == 6 and resumed.texts_embedded == 4
    np.testing.assert_allclose(vectors, HashEmbedder().embed(texts), rtol=1e-6)
    again = HashEmbedder()
    assert embed_cached(again, texts, tmp_path, batch_size=3, progress=False)[1] == 10
    assert again.calls == 0


def test_damaged_cache_rows_are_re_embedded(tmp_path):
    texts = ["a b", "c d"]
    embed_cached(HashEmbedder(), texts, tmp_path, batch_size=2, progress=False)
    (db,) = tmp_path.rglob("vectors.sqlite")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE vectors SET vector = X'00'")
    fresh = HashEmbedder()
    vectors, reused = embed_cached(fresh, texts, tmp_path, batch_size=2, progress=False)
    assert reused == 0 and fresh.calls == 1
    np.testing.assert_allclose(vectors, HashEmbedder().embed(texts), rtol=1e-6)


def test_corpora_sharing_texts_share_vectors(tmp_path):
    first, second = [f"orphanet passage {i}" for i in range(5)], [f"medquad answer {i}" for i in range(4)]
    embed_cached(HashEmbedder(), first, tmp_path, batch_size=2, progress=False)
    embed_cached(HashEmbedder(), second, tmp_path, batch_size=3, progress=False)
    both = HashEmbedder()
    vectors, reused = embed_cached(
        both, [*second, "new text", *first], tmp_path, batch_size=4, progress=False
    )
    assert reused == 9 and both.texts_embedded == 1
    np.testing.assert_allclose(vectors, HashEmbedder().embed([*second, "new text", *first]), rtol=1e-6)


def test_a_built_index_seeds_the_cache_for_the_next_build(tmp_path):
    _build(tmp_path)
    cache = tmp_path / "seeded-cache"
    added = seed_from_index(tmp_path / "indexes" / "idx", HashEmbedder(), cache)
    index = load_index(tmp_path / "indexes" / "idx")
    chunks = [index.chunks.get(i) for i in range(len(index.chunks))]
    index.close()
    passages = [text.indexed_text(c.title, c.section, c.text) for c in chunks]
    again = HashEmbedder()
    vectors, reused = embed_cached(again, passages, cache, progress=False)
    assert added == len(passages) == reused and again.calls == 0
    np.testing.assert_allclose(vectors, HashEmbedder().embed(passages), rtol=1e-5, atol=1e-6)


def test_length_sorted_embedding_returns_vectors_in_input_order(tmp_path):
    texts = [
        "a much longer passage about anticoagulation in atrial fibrillation",
        "short",
        "medium text here",
    ]
    vectors, _ = embed_cached(HashEmbedder(), texts, tmp_path, batch_size=2, progress=False)
    np.testing.assert_allclose(vectors, HashEmbedder().embed(texts), rtol=1e-6)


def test_folder_left_by_a_killed_build_is_removed_by_the_next_build(tmp_path):
    stale = tmp_path / "indexes" / ".idx.20260101T000000-deadbeef.building"
    stale.mkdir(parents=True)
    (stale / "chunks.jsonl").write_text("half written")
    _build(tmp_path)
    assert not stale.exists()
    assert load_index(tmp_path / "indexes" / "idx").manifest["counts"]["chunks"] == 5


def test_concurrent_build_of_the_same_index_is_refused(tmp_path):
    import fcntl

    (tmp_path / "indexes").mkdir()
    with (tmp_path / "indexes" / ".idx.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ConfigError, match="another build"):
            _build(tmp_path)
