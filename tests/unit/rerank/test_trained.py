"""The shipped relevance model: it loads only when its hashes verify, and it ranks as trained."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")

from core.errors import ModelError
from core.types import Chunk, Hit
from rag.rerank.trained import SHIPPED_MODEL, TrainedReranker, calibrated


def _hit(n: int, title: str, text: str) -> Hit:
    chunk = Chunk(f"d{n}#0", f"d{n}", title, (), "test", "", "", 0, len(text), text)
    return Hit(chunk, 1.0 / n, n, "hybrid")


def test_shipped_model_is_small_safetensors_with_a_manifest() -> None:
    files = sorted(p.name for p in SHIPPED_MODEL.iterdir())
    assert files == ["manifest.json", "overlay.safetensors"]
    assert sum(p.stat().st_size for p in SHIPPED_MODEL.iterdir()) <= 10 * 1024 * 1024
    manifest = json.loads((SHIPPED_MODEL / "manifest.json").read_text())
    assert 0.0 <= manifest["threshold"] <= 1.0 and manifest["threshold_why"]
    assert manifest["command"].startswith("medcite models train-reranker")
    assert manifest["data"] and manifest["metrics"]["validation_reliability"]["ece"] < 0.2


def test_relevant_passage_ranks_first_with_a_probability() -> None:
    reranker = TrainedReranker()
    hits = [
        _hit(1, "Marfan syndrome", "Marfan syndrome is inherited in an autosomal dominant pattern."),
        _hit(
            2,
            "Sepsis",
            "qSOFA criteria: respiratory rate of 22/min or greater, altered mentation, "
            "systolic blood pressure of 100 mmHg or less.",
        ),
    ]
    ranked = reranker.rerank("What are the qSOFA criteria for sepsis?", hits)
    assert ranked[0].chunk.doc_id == "d2"
    assert all(0.0 <= h.score <= 1.0 for h in ranked)
    assert ranked[0].score > ranked[1].score
    assert ranked[0].retriever == "hybrid+trained"


def test_calibration_is_monotone_in_the_logit_and_penalises_low_ranks() -> None:
    calibration = {"weights": [1.0, -0.5], "bias": 0.0}
    p = calibrated(np.array([-2.0, 0.0, 2.0]), np.array([1, 1, 1]), calibration)
    assert list(p) == sorted(p)
    assert calibrated(np.array([0.0]), np.array([10]), calibration)[0] < p[1]


def test_a_changed_overlay_is_refused(tmp_path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(SHIPPED_MODEL, folder)
    data = bytearray((folder / "overlay.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (folder / "overlay.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="does not match"):
        TrainedReranker(folder).rerank("q", [_hit(1, "t", "x")])


def test_a_missing_model_says_how_to_get_one(tmp_path) -> None:
    with pytest.raises(ModelError, match="train-reranker"):
        TrainedReranker(tmp_path)


def test_a_question_longer_than_the_model_input_is_cut_not_refused() -> None:
    long_question = "Which of these findings suggests sepsis in an adult with fever and cough? " * 30
    hits = [_hit(1, "Sepsis", "qSOFA criteria: respiratory rate of 22/min or greater."), _hit(2, "t", "x")]
    ranked = TrainedReranker().rerank(long_question, hits)
    assert len(ranked) == 2 and all(0.0 <= h.score <= 1.0 for h in ranked)


def test_it_reads_lines_for_the_quote_model() -> None:
    from rag.rerank.sentences import SentenceScorer

    reranker = TrainedReranker()
    assert isinstance(reranker, SentenceScorer)  # what quoting needs of the reranker
    question = "What does qSOFA count?"
    lines = [
        "qSOFA counts a respiratory rate of 22/min or more.",
        "Lens dislocation is common in Marfan syndrome.",
    ]
    logits = reranker.logits(question, lines)
    assert logits.shape == (2,) and logits[0] > logits[1]
