"""Calibration helpers: logistic fit, reliability/ECE and threshold choice, on hand-made numbers."""

from __future__ import annotations

import numpy as np
import pytest

from training.calibrate import choose_threshold, fit_logistic, reliability, sigmoid


def test_fit_logistic_recovers_the_generating_parameters() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20_000, 2))
    y = (rng.random(20_000) < sigmoid(1.5 * x[:, 0] - 0.7 * x[:, 1] + 0.3)).astype(float)
    weights, bias = fit_logistic(x, y, l2=0.0)
    assert weights == pytest.approx([1.5, -0.7], abs=0.08)
    assert bias == pytest.approx(0.3, abs=0.08)


def test_a_row_of_weight_two_counts_as_that_row_twice() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 3))
    y = (rng.random(300) < sigmoid(x[:, 0] - x[:, 2])).astype(float)
    weight = np.where(np.arange(300) < 100, 2.0, 1.0)
    weighted = fit_logistic(x, y, l2=1e-3, sample_weight=weight)
    repeated = fit_logistic(np.vstack([x, x[:100]]), np.concatenate([y, y[:100]]), l2=1e-3)
    assert weighted[0] == pytest.approx(repeated[0], abs=1e-8)
    assert weighted[1] == pytest.approx(repeated[1], abs=1e-8)
    with pytest.raises(ValueError, match="one non-negative weight per row"):
        fit_logistic(x, y, sample_weight=-weight)


def test_fit_logistic_refuses_one_class() -> None:
    with pytest.raises(ValueError, match="both relevant and non-relevant"):
        fit_logistic(np.zeros((3, 1)), np.ones(3))


def test_reliability_bins_and_ece_by_hand() -> None:
    p = np.array([0.05, 0.15, 0.85, 0.95])
    y = np.array([0, 1, 1, 1])
    result = reliability(p, y, bins=2)
    # bin [0, 0.5): mean p 0.1, observed 0.5; bin [0.5, 1]: mean p 0.9, observed 1.0
    assert result["ece"] == pytest.approx(2 / 4 * abs(0.1 - 0.5) + 2 / 4 * abs(0.9 - 1.0))
    assert [b["n"] for b in result["bins"]] == [2, 2]


def test_choose_threshold_maximises_f1() -> None:
    p = np.array([0.9, 0.8, 0.4, 0.3, 0.1])
    y = np.array([1, 1, 0, 1, 0])
    best = choose_threshold(p, y)
    # keep >= 0.3: precision 3/4, recall 1 -> F1 6/7 beats keep >= 0.8 (precision 1, recall 2/3 -> 0.8)
    assert best["threshold"] == 0.3
    assert best["f1"] == pytest.approx(2 * 0.75 * 1.0 / 1.75)
