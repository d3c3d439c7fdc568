"""No evaluation question reaches training: checked on the real shared data."""

from __future__ import annotations

import json

import pytest

from rag.rerank.trained import SHIPPED_MODEL
from training.leakage import duplicated, held_out_questions, normalise
from training.pairs import PairStats, bioasq_training_questions, split_of


def test_normalise_ignores_case_punctuation_and_spacing() -> None:
    assert normalise("Is  IL-6 elevated in COVID-19?") == normalise("is il 6 elevated in covid 19")
    assert normalise("Is IL-6 elevated?") != normalise("Is IL-8 elevated?")


def test_duplicated_finds_texts_that_repeat_after_normalising() -> None:
    assert duplicated(["What is X?", "what is x", "What is Y?"]) == frozenset({"what is x"})


def test_training_questions_exclude_every_evaluation_question(source_data) -> None:
    held_out = held_out_questions(source_data)
    counts = held_out.counts()
    assert counts["mirage-bioasq"] > 500 and counts["bioasq-11b"] > 300
    assert counts["liveqa-med"] >= 104 and counts["pubmedqa-pqal"] > 900
    stats = PairStats()
    rows = bioasq_training_questions(source_data, held_out, stats)
    texts = {normalise(str(r["body"])) for r in rows}
    assert not texts & held_out.all()
    assert {r["task"] for r in rows} <= {"Task7B", "Task8B", "Task9B", "Task10B"}
    assert stats.dropped["bioasq_in_evaluation_sets"] > 400  # MIRAGE's items come from every year
    assert stats.dropped["bioasq_duplicated"] >= 5
    assert len(texts) == len(rows)  # no question twice, so none on both sides of the split


def test_validation_split_is_stable_and_disjoint() -> None:
    qids = [f"q{i}" for i in range(2000)]
    first = {q: split_of(q, 13, 0.1) for q in qids}
    assert first == {q: split_of(q, 13, 0.1) for q in qids}
    share = sum(s == "validation" for s in first.values()) / len(qids)
    assert 0.07 < share < 0.13


def test_shipped_model_was_trained_with_the_filter(source_data) -> None:
    manifest_file = SHIPPED_MODEL / "manifest.json"
    if not manifest_file.is_file():
        pytest.fail(f"no shipped relevance model at {SHIPPED_MODEL}")
    pairs = json.loads(manifest_file.read_text(encoding="utf-8"))["pairs"]
    stats = PairStats()
    rows = bioasq_training_questions(source_data, held_out_questions(source_data), stats)
    for key in ("bioasq_in_evaluation_sets", "bioasq_duplicated"):
        assert pairs["dropped"][key] == stats.dropped[key]
    assert pairs["dropped"].get("medquad_benchmark_pools", 0) > 3000  # trained without the benchmark pools
    used = pairs["questions"]["bioasq_train"] + pairs["questions"]["bioasq_validation"]
    assert used + pairs["dropped"].get("bioasq_no_gold_in_index", 0) == len(rows)


def test_medquad_training_pairs_skip_the_abstention_benchmark_pools(source_data) -> None:
    from corpora.sources.medquad import MedQuADSource, collection_prefix
    from evals.datasets.abstention import _medquad_rows
    from training.leakage import benchmark_pools
    from training.pairs import PairConfig, medquad_pairs

    pools = benchmark_pools()
    assert {("GARD", "symptoms"), ("GHR", "treatment"), ("MPlusDrugs", "forget a dose")} <= pools
    docs = {d.doc_id: d for d in MedQuADSource(source_data / "medquad").documents()}
    stats = PairStats()
    config = PairConfig(medquad_questions=400)
    held_out = held_out_questions(source_data)
    pairs = [row for _, row in medquad_pairs(source_data, held_out, set(), config, stats)]
    assert stats.dropped["medquad_benchmark_pools"] > 3000
    asked = {row["qid"] for row in pairs}
    assert len(asked) == stats.questions["medquad_train"] == 400

    def pooled(doc_id: str) -> bool:
        return (collection_prefix(doc_id), docs[doc_id].metadata["qtype"]) in pools

    assert not any(pooled(doc_id) for doc_id in asked)
    # every question a benchmark can draw (any index, any part) is out of what training asked,
    # whichever collection asked it
    rows = _medquad_rows(source_data)
    drawable = {normalise(r["question"]) for r in rows if (r["source"], r["qtype"]) in pools}
    assert drawable and not drawable & {normalise(row["question"]) for row in pairs}
    assert not any(pooled(row["passage_doc"]) for row in pairs)  # nor any of their answers, as passages
