"""Rubric score arithmetic against hand-computed examples: negative points, clipping, tags, the
bootstrap interval, paired arms with help and harm, and Cohen's kappa."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evals.metrics.rubric import agreement, example_score, mean_interval, paired_scores, tag_scores


def test_an_example_scores_the_points_met_over_the_positive_points():
    points = [5, 3, -4]
    assert example_score(points, [True, True, False]) == 8 / 8
    assert example_score(points, [True, False, True]) == (5 - 4) / (5 + 3)
    assert example_score(points, [False, True, False]) == 3 / 8
    assert example_score(points, [False, False, False]) == 0.0


def test_negative_points_below_zero_are_clipped_and_no_positive_criterion_has_no_score():
    assert example_score([5, 3, -4], [False, False, True]) == 0.0  # -4 / 8 clipped
    assert example_score([2, -9, -1], [True, True, True]) == 0.0  # (2 - 10) / 2 clipped
    assert example_score([-2, -1], [True, False]) is None  # nothing positive to score against
    with pytest.raises(ValueError, match="2 criteria but 1 verdicts"):
        example_score([1, 2], [True])


@given(st.lists(st.tuples(st.floats(-10, 10, allow_nan=False), st.booleans()), min_size=1, max_size=20))
def test_a_defined_score_is_always_in_the_unit_interval(pairs):
    score = example_score([p for p, _ in pairs], [m for _, m in pairs])
    assert score is None or 0.0 <= score <= 1.0
    assert (score is None) == (sum(p for p, _ in pairs if p > 0) <= 0)


def test_tags_score_their_own_criteria_and_example_tags_the_whole_example():
    points = [5, 3, -4, -2]
    met = [True, True, True, False]
    tags = [["axis:accuracy"], ["axis:completeness"], ["axis:accuracy"], ["axis:tone"]]
    scores = tag_scores(points, met, tags, ["theme:fever"])
    assert scores == {
        "theme:fever": (5 + 3 - 4) / 8,
        "axis:accuracy": (5 - 4) / 5,
        "axis:completeness": 3 / 3,
    }  # axis:tone holds only a negative criterion: no score of its own


def test_the_bootstrap_interval_holds_the_mean_and_matches_the_normal_approximation():
    constant = mean_interval([0.5] * 7)  # 0.5 sums exactly in floating point
    assert (constant.n, constant.mean, constant.low, constant.high) == (7, 0.5, 0.5, 0.5)
    values = np.random.default_rng(1).random(400) < 0.3
    m = mean_interval(values.astype(float), seed=2)
    half = 1.96 * math.sqrt(m.mean * (1 - m.mean) / 400)
    assert m.low < m.mean < m.high
    assert abs((m.high - m.low) / 2 - half) < 0.006
    assert mean_interval(values.astype(float), seed=2) == m  # seeded: the same interval
    with pytest.raises(ValueError):
        mean_interval([])


def test_paired_arms_give_the_mean_difference_and_help_harm_counts():
    closed_book = [0.0, 0.5, 1.0, 1.0]
    rag = [1.0, 0.5, 0.5, 1.0]
    p = paired_scores(closed_book, rag, n_resamples=2000)
    assert p.diff == pytest.approx((1.0 + 0.0 - 0.5 + 0.0) / 4)
    assert (p.mean_a, p.mean_b) == (2.5 / 4, 3.0 / 4)
    assert (p.help, p.harm, p.ties, p.n) == (1, 1, 2, 4)
    assert p.low <= p.diff <= p.high
    same = paired_scores([0.2, 0.7], [0.2, 0.7])
    assert (same.diff, same.low, same.high) == (0.0, 0.0, 0.0)


def test_cohens_kappa_against_a_hand_computed_value_and_sklearn():
    from sklearn.metrics import cohen_kappa_score

    a = [True, True, True, False, False, False, False, False, True, False]
    b = [True, True, False, False, False, False, True, False, True, False]
    result = agreement(a, b)
    # p_o = 8/10; p_a = p_b = 4/10, so p_e = 0.4 * 0.4 + 0.6 * 0.6 = 0.52
    assert result.raw == pytest.approx(0.8)
    assert result.kappa == pytest.approx((0.8 - 0.52) / (1 - 0.52))
    assert result.kappa == pytest.approx(cohen_kappa_score(a, b))
    assert (result.both, result.only_a, result.only_b, result.neither, result.n) == (3, 1, 1, 5, 10)
    assert agreement([True, False], [False, True]).kappa == pytest.approx(-1.0)
    assert math.isnan(agreement([True, True], [True, True]).kappa)  # chance agreement is 1
    with pytest.raises(ValueError):
        agreement([], [])
