"""The blend bench fits on validation questions the shipped relevance model never trained on and
that no evaluation set asks; its scoring and fitting are plain functions."""

from __future__ import annotations

import numpy as np
import pytest

from bench.retrieval.reranker_blends import fit, medquad_validation, ndcg10
from core.paths import Paths
from evals.datasets.bioasq import normalise
from rag.rerank.trained import SHIPPED_MODEL, read_manifest
from training.leakage import held_out_questions
from training.pairs import PairConfig, PairStats, liveqa_judged_documents, medquad_pairs


def _row(qid: str, docs: list[str], relevant: set[str], logits: list[float]) -> dict:
    pairs = enumerate(zip(docs, logits, strict=True))
    top = [{"doc": d, "logit": s, "log_rank": float(np.log(i + 1))} for i, (d, s) in pairs]
    return {"qid": qid, "qrels": {d: 1 for d in relevant}, "top": top, "rest": []}


def test_blend_orders_by_weighted_features_and_hybrid_by_rank() -> None:
    row = _row("q", ["a", "b", "c"], {"c"}, [0.0, 1.0, 5.0])
    assert ndcg10([row], None)[0] == pytest.approx(0.5)  # c at rank 3: 1 / log2(4)
    assert ndcg10([row], {"logit": 1.0})[0] == 1.0
    assert ndcg10([row], {"logit": 1.0, "log_rank": -100.0})[0] == pytest.approx(0.5)  # rank dominates


def test_fit_gives_the_informative_feature_the_positive_weight() -> None:
    rows = [_row(f"q{i}", ["r", "n"], {"r"}, [2.0 + i % 3, -1.0 - i % 2]) for i in range(30)]
    weights = fit(rows, ("logit", "log_rank"))
    assert weights["logit"] > 0 and set(weights) == {"logit", "log_rank"}


def test_medquad_validation_never_trained_on_and_no_evaluation_question(source_data) -> None:
    manifest = read_manifest(SHIPPED_MODEL)
    config = PairConfig(**manifest["pair_config"])
    paths = Paths(source_data=source_data)
    queries, qrels = medquad_validation(paths, config)
    assert len(queries) == 150 and set(queries) == set(qrels)
    stats = PairStats()
    live = liveqa_judged_documents(source_data)
    held_out = held_out_questions(source_data)
    trained = [row for _, row in medquad_pairs(source_data, held_out, live, config, stats)]
    # the refactored eligibility rule reproduces the shipped run: same drops, same sample size
    shipped = manifest["pairs"]
    assert stats.questions["medquad_train"] == shipped["questions"]["medquad_train"]
    for reason in ("medquad_liveqa_judged", "medquad_benchmark_pools"):
        assert stats.dropped[reason] == shipped["dropped"][reason]
    asked = {normalise(q) for q in queries.values()}
    assert not asked & {normalise(row["question"]) for row in trained}
    assert not asked & held_out.all()
    assert not {d for docs in qrels.values() for d in docs} & live  # LiveQA's judged answers stay test-only
