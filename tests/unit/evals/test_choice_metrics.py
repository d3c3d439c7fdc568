"""Multiple-choice accuracy: Wilson interval, and no-answer records counted wrong with their reasons."""

from __future__ import annotations

import math

import pytest

from evals.metrics.choice import accuracy, correct_array, wilson_interval, z_value
from evals.records import ItemRecord


def rec(qid: str, gold: str | None, pred: str | None, error: str | None = None) -> ItemRecord:
    return ItemRecord(dataset="medqa", qid=qid, condition="closed-book", gold=gold, pred=pred, error=error)


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)  # the textbook example
    z = z_value(0.95)
    assert z == pytest.approx(1.959964, abs=1e-6)
    # at 0 successes: (0, z²/(n + z²))
    assert wilson_interval(0, 10) == (0.0, pytest.approx(z * z / (10 + z * z)))
    assert wilson_interval(10, 10) == (pytest.approx(10 / (10 + z * z)), 1.0)


def test_wilson_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for k, n in ((0, 1), (3, 7), (55, 500), (4182, 4183)):
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="wilson")
        assert wilson_interval(k, n, 0.9) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_wilson_refuses_impossible_counts() -> None:
    for k, n in ((1, 0), (-1, 5), (6, 5)):
        with pytest.raises(ValueError):
            wilson_interval(k, n)
    with pytest.raises(ValueError, match="confidence"):
        z_value(1.0)


def test_missing_answers_are_wrong_and_counted_with_reasons() -> None:
    records = [
        rec("1", "A", "A"),
        rec("2", "B", "B"),
        rec("3", "A", None, "several options"),  # never defaulted to "A"
        rec("4", "C", None, "no option letter"),
        rec("5", "D", None, "no option letter"),
        rec("6", "A", None),
        rec("7", "B", "C"),
    ]
    acc = accuracy(records)
    assert (acc.n, acc.correct, acc.no_answer) == (7, 2, 4)
    assert acc.accuracy == 2 / 7
    assert dict(acc.reasons) == {"no option letter": 2, "several options": 1, "no reason given": 1}
    assert (acc.ci_low, acc.ci_high) == wilson_interval(2, 7)
    assert correct_array(records).tolist() == [1, 1, 0, 0, 0, 0, 0]


def test_unscored_or_empty_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no gold"):
        accuracy([rec("1", None, "A")])
    with pytest.raises(ValueError, match="no records"):
        accuracy([])
    assert not math.isnan(accuracy([rec("1", "A", "B")]).ci_high)
