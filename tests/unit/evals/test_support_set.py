"""The labelled support set: perturbations change what they claim to, and the splits never meet."""

from __future__ import annotations

from collections import Counter

from evals.datasets.bioasq import normalise
from evals.datasets.support_set import (
    build_pairs,
    change_direction,
    change_entity,
    change_negation,
    change_number,
    read_questions,
)


def test_number_is_doubled_and_identifiers_inside_words_are_left_alone() -> None:
    assert change_number("A respiratory rate of 22/min.") == "A respiratory rate of 44/min."
    assert change_number("Give 0.5 mg.") == "Give 1.0 mg."
    assert change_number("MEF2C variants cause disease.") is None


def test_negation_is_removed_or_added() -> None:
    assert change_negation("It is not inherited.") == "It is inherited."
    assert change_negation("It doesn't spread.") == "It does spread."
    assert change_negation("Aspirin can reduce risk.") == "Aspirin can not reduce risk."
    assert change_negation("Aspirin reduces risk.") is None


def test_direction_word_flips_keeping_case() -> None:
    assert change_direction("Increased IL-6 levels predict death.") == "Decreased IL-6 levels predict death."
    assert change_direction("It is autosomal recessive.") == "It is autosomal dominant."
    assert change_direction("Nothing to flip here.") is None


def test_entity_swap_replaces_the_exact_answer() -> None:
    claim = "Milvexian is an inhibitor of factor XIa."
    assert change_entity(claim, ["XIa"], "thrombin") == "Milvexian is an inhibitor of factor thrombin."
    assert change_entity(claim, ["Xa"], "thrombin") is None


def test_support_set_from_the_real_data_is_split_by_question_and_year(source_data) -> None:
    questions = read_questions(source_data, dev_questions=100)
    by_split = Counter(q.split for q in questions)
    assert by_split["test"] > 250 and by_split["dev"] == 100
    dev = {normalise(q.body) for q in questions if q.split == "dev"}
    test = {normalise(q.body) for q in questions if q.split == "test"}
    assert not dev & test
    ids = {split: {q.qid for q in questions if q.split == split} for split in ("dev", "test")}
    assert not ids["dev"] & ids["test"]
    pairs = build_pairs(questions, lambda group: {})
    kinds = Counter(p.kind for p in pairs)
    assert kinds["own"] >= len(questions) and kinds["other"] == kinds["own"]
    assert min(kinds[k] for k in ("number", "negation", "antonym", "entity")) > 20
    own = {(p.qid, p.claim) for p in pairs if p.kind == "own"}
    for p in pairs:
        assert p.label == (p.kind == "own")
        if p.kind in ("number", "negation", "antonym", "entity"):
            assert (p.qid, p.claim) not in own  # a perturbation always changes the claim
        if p.kind == "other":
            assert p.passage.doc_id != f"support:{p.qid}"
