"""End to end with the real Qwen2.5-Coder-1.5B judge and the real embedder: RAGAS-style faithfulness
tells a faithful answer from one that contradicts its passage, and a rerun is served from the cache.

Two hand-made items over one short passage; nine judge calls (two statement splits, one yes/no
per statement with the passage prefix reused from llama.cpp's KV cache, three questions written
from the faithful answer). Measured: faithfulness 1.0 vs 0.33 (the judge's split of the
contradicting answer added a third statement it then accepted), answer relevancy 0.72; 86 s on
2 cores at load 4-5 (each generation 15-20 s, each yes/no 1-7 s).
"""

from __future__ import annotations

import pytest

from core.paths import Paths
from evals.engine.judge.answer_quality import AnswerItem, evaluate_answers
from indexes.dense.embedder import MiniLmEmbedder
from rag.generate.llamacpp import LlamaCppGenerator
from rag.generate.models import model_path

pytestmark = pytest.mark.e2e

PASSAGE = (
    "Metformin is the first-line drug for type 2 diabetes. "
    "Metformin should not be used when the eGFR is below 30 mL/min/1.73 m2."
)
QUESTION = "Which drug is first-line for type 2 diabetes, and when is it avoided?"


FAITHFUL = (
    "Metformin is the first-line drug for type 2 diabetes [1]. It is avoided when eGFR is below 30 [1]."
)
CONTRADICTING = "Insulin is the first-line drug for type 2 diabetes [1]. Metformin is safe at any eGFR [1]."


def test_faithful_answer_scores_higher_than_a_contradicting_one(tmp_path):
    judge = LlamaCppGenerator(model_path(Paths.from_env().model_dir), n_ctx=2048)
    embedder = MiniLmEmbedder()
    items = [
        AnswerItem(QUESTION, FAITHFUL, (PASSAGE,), qid="faithful"),
        AnswerItem(QUESTION, CONTRADICTING, (PASSAGE,), qid="contradicting"),
    ]
    cache = tmp_path / "judge.sqlite"
    report = evaluate_answers(items, judge, embedder, cache, ["faithfulness"])
    faithful, contradicting = (row.scores["faithfulness"] for row in report.rows)
    assert report.metrics["faithfulness"].n_valid == 2, report.to_json()
    assert faithful > contradicting, report.to_json()
    # the real embedder: questions written from the faithful answer are close to the question asked
    relevancy = evaluate_answers(items[:1], judge, embedder, cache, ["answer_relevancy"])
    assert 0.5 < relevancy.rows[0].scores["answer_relevancy"] <= 1.0, relevancy.to_json()
    again = evaluate_answers(items, judge, embedder, cache, ["faithfulness"])
    assert again.judge_calls == 0 and again.to_json()["rows"] == report.to_json()["rows"]
