"""End to end with the real all-MiniLM-L6-v2 embedder: build a real index, retrieve through the CLI path."""

from __future__ import annotations

import pytest

from core.paths import Paths
from core.types import Filters
from rag.indexing import open_index, retrieve

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def paths(small_index_paths: Paths) -> Paths:
    return small_index_paths


def test_index_records_the_real_embedder(paths):
    index, embedder = open_index(paths, "default", with_embedder=True)
    try:
        recorded = index.manifest["embedder"]
        assert recorded["name"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert recorded["dim"] == 384 and recorded["max_tokens"] == 256
        assert recorded["weights_sha256"] == embedder.weights_sha256
        assert index.dense is not None and index.dense.size == index.manifest["counts"]["chunks"]
    finally:
        index.close()


@pytest.mark.parametrize("mode,depth", [("dense", 5), ("hybrid", 3)])
def test_paraphrased_question_finds_the_guideline_passage(paths, mode, depth):
    question = "Which risk score decides whether a patient with AF should get an anticoagulant?"
    hits = retrieve(paths, "default", question, k=5, mode=mode, filters=Filters())
    assert any("CHA2DS2-VASc" in h.chunk.text for h in hits[:depth]), [h.chunk.chunk_id for h in hits]
    top = hits[0].chunk
    assert top.doc_id.startswith("open-medicine:acc_aha_af_2023")
    assert top.url.startswith("https://doi.org/") and top.license.startswith("MIT")


def test_scores_are_cosine_similarities_in_dense_mode(paths):
    hits = retrieve(
        paths, "default", "atrial fibrillation rate control", k=5, mode="dense", filters=Filters()
    )
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 + 1e-5 for s in scores) and scores[0] > 0.4
