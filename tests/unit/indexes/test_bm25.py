"""BM25 backends: bm25s against the rank-bm25 reference on a real corpus, and persistence."""

import numpy as np
import pytest

from corpora.chunking import ChunkerConfig, WordpieceSpans, chunk_document
from corpora.sources.open_medicine import OpenMedicineSource
from indexes.bm25 import Bm25Params, Bm25sIndex, RankBm25Index, top_k
from indexes.dense.embedder import packaged_minilm_dir
from indexes.text import indexed_text, tokenize


@pytest.fixture(scope="module")
def guideline_chunks():
    spans = WordpieceSpans(packaged_minilm_dir() / "tokenizer.json")
    docs = OpenMedicineSource().documents()
    chunks = [c for d in docs for c in chunk_document(d, spans, ChunkerConfig())]
    assert len(chunks) > 1000
    return chunks


def test_bm25s_ranks_like_rank_bm25_on_real_guidelines(guideline_chunks):
    corpus = [tokenize(indexed_text(c.title, c.section, c.text)) for c in guideline_chunks]
    fast = Bm25sIndex.build(corpus, Bm25Params())
    reference = RankBm25Index.build(corpus, Bm25Params())
    queries = sorted({c.section[-1] for c in guideline_chunks})[:150]
    overlaps, same_top1 = [], 0
    for q in queries:
        a, _ = fast.search(tokenize(q), 10)
        b, _ = reference.search(tokenize(q), 10)
        if len(b) == 0:
            continue
        overlaps.append(len(set(a) & set(b)) / len(b))
        same_top1 += int(a[0] == b[0])
    assert len(overlaps) >= 100
    assert np.mean(overlaps) >= 0.95
    assert same_top1 / len(overlaps) >= 0.95


def test_saved_index_memory_maps_and_returns_identical_hits(guideline_chunks, tmp_path):
    corpus = [tokenize(indexed_text(c.title, c.section, c.text)) for c in guideline_chunks[:300]]
    built = Bm25sIndex.build(corpus, Bm25Params())
    built.save(tmp_path)
    loaded = Bm25sIndex.load(tmp_path, Bm25Params(), mmap=True)
    for q in ["atrial fibrillation anticoagulation", "statin LDL", "sepsis lactate"]:
        a, sa = built.search(tokenize(q), 10)
        b, sb = loaded.search(tokenize(q), 10)
        assert a.tolist() == b.tolist()
        np.testing.assert_array_equal(sa, sb)


def test_unknown_words_and_zero_k_give_no_hits():
    index = Bm25sIndex.build([["aspirin"], ["heparin"]], Bm25Params())
    assert index.search(["warfarin"], 5)[0].size == 0
    assert index.search(["aspirin"], 0)[0].size == 0


def test_top_k_orders_by_score_then_row_and_drops_non_positive():
    rows, scores = top_k(np.array([0.0, 2.0, 1.0, 2.0, -1.0], dtype=np.float32), 3, None)
    assert rows.tolist() == [1, 3, 2] and scores.tolist() == [2.0, 2.0, 1.0]
    mask = np.array([True, False, True, True, True])
    assert top_k(np.array([0.0, 2.0, 1.0, 2.0, 5.0], dtype=np.float32), 9, mask)[0].tolist() == [4, 3, 2]
