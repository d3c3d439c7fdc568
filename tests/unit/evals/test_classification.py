"""ROC-AUC, precision/recall and the recall-targeted threshold, against hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals.metrics.classification import precision_recall, roc_auc, threshold_for_recall


def test_roc_auc_counts_ordered_pairs_and_ties_as_half() -> None:
    assert roc_auc([0.9, 0.8, 0.1, 0.2], [1, 1, 0, 0]) == 1.0
    assert roc_auc([0.1, 0.2, 0.9, 0.8], [1, 1, 0, 0]) == 0.0
    # positives 0.9, 0.4; negatives 0.5, 0.4: pairs (0.9>0.5, 0.9>0.4, 0.4<0.5, 0.4=0.4) -> 2.5/4
    assert roc_auc([0.9, 0.4, 0.5, 0.4], [1, 1, 0, 0]) == pytest.approx(0.625)
    assert math.isnan(roc_auc([0.3, 0.4], [1, 1]))


def test_roc_auc_matches_the_pairwise_definition_on_random_scores() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 20, 300) / 20.0  # many ties
    y = rng.integers(0, 2, 300)
    pos, neg = s[y == 1], s[y == 0]
    pairwise = (np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])) / (
        len(pos) * len(neg)
    )
    assert roc_auc(s, y) == pytest.approx(pairwise)


def test_precision_recall_at_a_threshold() -> None:
    result = precision_recall([0.9, 0.6, 0.4, 0.7, 0.2], [1, 1, 1, 0, 0], 0.5)
    assert (result["tp"], result["fp"], result["fn"]) == (2, 1, 1)
    assert result["precision"] == pytest.approx(2 / 3) and result["recall"] == pytest.approx(2 / 3)


def test_threshold_for_recall_is_the_highest_that_reaches_it() -> None:
    scores, labels = [0.9, 0.8, 0.3, 0.1, 0.85], [1, 1, 1, 1, 0]
    t = threshold_for_recall(scores, labels, 0.75)
    assert t == 0.3 and precision_recall(scores, labels, t)["recall"] >= 0.75
    assert precision_recall(scores, labels, t + 1e-9)["recall"] < 0.75


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        roc_auc([0.1], [1, 0])
    with pytest.raises(ValueError, match="0 or 1"):
        roc_auc([0.1, 0.2], [1, 2])
