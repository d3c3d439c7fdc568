"""Paired statistics: exact McNemar, the multinomial paired bootstrap, harm/help, pairing by key."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals.metrics.stats import correctness, mcnemar_exact, pair, paired_bootstrap_diff, paired_counts
from evals.records import ItemRecord


def rec(qid: str, gold: str, pred: str | None, dataset: str = "medqa") -> ItemRecord:
    return ItemRecord(dataset=dataset, qid=qid, condition="x", gold=gold, pred=pred)


def test_mcnemar_exact_by_hand() -> None:
    # 1 vs 5 discordant: p = 2 * (C(6,0) + C(6,1)) / 2^6
    assert mcnemar_exact(1, 5) == 2 * (1 + 6) / 64
    assert mcnemar_exact(5, 1) == mcnemar_exact(1, 5)
    assert mcnemar_exact(3, 3) == 1.0  # 2 * P(X <= 3 | 6) > 1, capped
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) == 2 / 2**10
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_mcnemar_matches_scipy_binomtest_for_large_counts() -> None:
    stats = pytest.importorskip("scipy.stats")
    for b, c in ((40, 60), (585, 326), (1200, 1300)):
        assert mcnemar_exact(b, c) == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_paired_bootstrap_is_seeded_and_brackets_the_difference() -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(400) < 0.6).astype(float)
    b = np.where(rng.random(400) < 0.2, 1 - a, a)  # B flips 20% of A's answers
    diff, low, high = paired_bootstrap_diff(a, b, seed=11)
    assert diff == pytest.approx(b.mean() - a.mean())
    assert low < diff < high
    assert paired_bootstrap_diff(a, b, seed=11) == (diff, low, high)
    assert paired_bootstrap_diff(a, b, n_resamples=30, seed=1) != paired_bootstrap_diff(
        a, b, n_resamples=30, seed=2
    )


def test_multinomial_bootstrap_matches_index_resampling() -> None:
    """Resampling counts of {-1, 0, 1} is the same distribution as resampling item indices."""
    rng = np.random.default_rng(0)
    a = (rng.random(300) < 0.7).astype(float)
    b = (rng.random(300) < 0.75).astype(float)
    _, low, high = paired_bootstrap_diff(a, b, n_resamples=20_000, seed=1)
    idx = np.random.default_rng(2).integers(0, 300, size=(20_000, 300))
    means = (b[idx] - a[idx]).mean(axis=1)
    ref_low, ref_high = np.quantile(means, [0.025, 0.975])
    assert low == pytest.approx(ref_low, abs=0.006) and high == pytest.approx(ref_high, abs=0.006)


def test_bootstrap_of_identical_runs_is_a_point() -> None:
    a = np.array([1.0, 0.0, 1.0])
    assert paired_bootstrap_diff(a, a.copy()) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="equal length"):
        paired_bootstrap_diff(a, a[:2])
    with pytest.raises(ValueError, match="non-empty"):
        paired_bootstrap_diff(np.array([]), np.array([]))


def test_harm_and_help_rates() -> None:
    counts = paired_counts(np.array([1, 1, 1, 0, 0, 1, 0, 0]), np.array([1, 0, 0, 1, 0, 1, 0, 0]))
    assert (counts.both, counts.only_a, counts.only_b, counts.neither) == (2, 2, 1, 3)
    assert counts.harm_rate == 2 / 8 and counts.help_rate == 1 / 8
    assert counts.harm_given_a_right == 2 / 4
    assert math.isnan(paired_counts(np.zeros(2), np.ones(2)).harm_given_a_right)


def test_pair_reports_unmatched_items_and_sorts_by_key() -> None:
    a = [rec("2", "A", "A"), rec("1", "B", None), rec("9", "C", "C")]
    b = [rec("1", "B", "B"), rec("2", "A", "D"), rec("7", "A", "A"), rec("1", "B", "B", dataset="mmlu")]
    paired = pair(a, b)
    assert [r.qid for r in paired.a] == ["1", "2"] == [r.qid for r in paired.b]
    assert paired.only_a == (("medqa", "9"),)
    assert paired.only_b == (("medqa", "7"), ("mmlu", "1"))
    correct_a, correct_b = correctness(paired)
    assert correct_a.tolist() == [0.0, 1.0] and correct_b.tolist() == [1.0, 0.0]


def test_pair_refuses_duplicates_and_conflicting_gold() -> None:
    with pytest.raises(ValueError, match="twice"):
        pair([rec("1", "A", "A"), rec("1", "A", "B")], [])
    with pytest.raises(ValueError, match="gold"):
        pair([rec("1", "A", "A")], [rec("1", "B", "B")])


def test_paired_bootstrap_mean_diff_on_continuous_values() -> None:
    from evals.metrics.stats import paired_bootstrap_mean_diff

    a = np.array([0.2, 0.5, 0.9, 0.4])
    b = a + 0.1
    diff, low, high = paired_bootstrap_mean_diff(a, b)
    assert diff == pytest.approx(0.1)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)  # a constant difference
    diff, low, high = paired_bootstrap_mean_diff(a, np.array([0.3, 0.4, 1.0, 0.4]))
    assert diff == pytest.approx((0.1 - 0.1 + 0.1 + 0.0) / 4)
    assert low < diff < high
