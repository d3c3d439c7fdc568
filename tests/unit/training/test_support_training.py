"""The support model's training data: no test or dev question in it, and its own perturbation rules."""

from __future__ import annotations

import random

from core.paths import Paths
from evals.datasets.bioasq import normalise
from evals.datasets.support_set import change_number, read_questions
from training.leakage import held_out_questions
from training.pairs import PairStats
from training.support import (
    TRAIN_DIRECTIONS,
    SupportConfig,
    best_window,
    every_claim,
    training_questions,
    vary_direction,
    vary_negation,
    vary_number,
)


def test_training_questions_share_nothing_with_dev_test_or_any_evaluation_set(source_data) -> None:
    config = SupportConfig()
    stats = PairStats()
    train, dev = training_questions(Paths(source_data=source_data), config, stats)
    support_set = read_questions(source_data, dev_questions=config.dev_questions, seed=config.seed)
    assert dev == [q for q in support_set if q.split == "dev"] and len(dev) == config.dev_questions
    test = [q for q in support_set if q.split == "test"]
    train_ids, train_texts = {q.qid for q in train}, {normalise(q.body) for q in train}
    for held in (dev, test):
        assert not train_ids & {q.qid for q in held}
        assert not train_texts & {normalise(q.body) for q in held}
    assert not train_texts & held_out_questions(source_data).all()
    assert len(train_texts) == len(train) > 800
    assert stats.dropped["bioasq_support_dev"] > 100


def test_number_changes_differ_from_the_test_rule() -> None:
    claim = "The dose is 12 mg given over 30 minutes in 2 doses."
    test_versions = {change_number(claim)}
    for seed in range(50):
        changed = vary_number(claim, random.Random(seed))
        assert changed is not None and changed != claim and changed not in test_versions
        assert "24" not in changed.split() and "60" not in changed.split() and "4" not in changed.split()
    assert vary_number("No numbers here at all.", random.Random(0)) is None


def test_negation_is_removed_or_added_after_some_auxiliary() -> None:
    assert vary_negation("Aspirin is not recommended for children.", random.Random(0)) == (
        "Aspirin is recommended for children."
    )
    claim = "The drug can be given and is safe."
    added = {vary_negation(claim, random.Random(seed)) for seed in range(20)}
    assert added == {"The drug can not be given and is safe.", "The drug can be given and is not safe."}
    assert vary_negation("Tumours grow fast.", random.Random(0)) is None


def test_best_window_is_the_one_holding_most_claim_words() -> None:
    windows = ["Sepsis and qSOFA scoring.", "Marfan syndrome is autosomal dominant.", "Fibrillin."]
    assert best_window("Marfan syndrome is inherited as an autosomal dominant trait.", windows) == windows[1]


def test_direction_words_trained_on_share_none_with_the_test_rule() -> None:
    from evals.datasets.support_set import _ANTONYMS

    assert not set(TRAIN_DIRECTIONS) & set(_ANTONYMS)
    assert (
        vary_direction("Serum urate is elevated in gout.", random.Random(0))
        == "Serum urate is reduced in gout."
    )
    assert vary_direction("Levels increase in gout.", random.Random(0)) is None  # a test-rule word only


def test_claims_come_from_every_ideal_answer_once() -> None:
    ideal = [
        "Yes. Aspirin lowers the risk of stroke in adults.",
        "Aspirin lowers the risk of stroke in adults.",
        "It inhibits platelet cyclooxygenase irreversibly and for life.",
    ]
    assert every_claim(ideal, 4) == (
        "Aspirin lowers the risk of stroke in adults.",
        "It inhibits platelet cyclooxygenase irreversibly and for life.",
    )
