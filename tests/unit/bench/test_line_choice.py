"""The line-choice bench's pure part: which line each judge puts first, conflicting lines aside."""

from __future__ import annotations

import numpy as np

from bench.answers.line_choice import firsts, paired_interval, summary


def _row(kinds, quote, reader, conflicting=None):
    return {
        "kinds": kinds,
        "quote_model": quote,
        "reader": reader,
        "conflicting": conflicting or [False] * len(kinds),
    }


def test_firsts_reads_the_best_scored_line_and_skips_conflicting_ones() -> None:
    rows = [
        _row(["other", "answer"], [0.9, 0.2], [-1.0, 2.0]),
        _row(["answer", "other"], [0.1, 0.8], [0.0, 1.0], conflicting=[False, True]),
    ]
    quote = firsts(rows, lambda r: np.asarray(r["quote_model"]), 1)
    reader = firsts(rows, lambda r: np.asarray(r["reader"]), 1)
    assert quote.tolist() == [0, 1]  # the second's 0.8 line conflicts: never first
    assert reader.tolist() == [1, 1]
    assert firsts(rows, lambda r: np.asarray(r["quote_model"]), 3).tolist() == [1, 1]


def test_summary_pairs_each_judge_with_the_quote_model() -> None:
    rows = [_row(["other", "answer"], [0.9, 0.2], [-1.0, 2.0]) for _ in range(10)]
    table = summary(rows)
    assert table["questions"] == 10 and table["answer_line_read"] == 10
    assert table["judges"]["quote model"]["top1"] == 0.0
    assert table["judges"]["reader"]["top1"] == 1.0
    assert table["judges"]["reader"]["top1_minus_quote_model_95ci"] == [1.0, 1.0]


def test_paired_interval_holds_the_mean_difference() -> None:
    a, b = np.array([1, 0, 1, 1, 0, 1]), np.array([0, 0, 1, 0, 0, 1])
    low, high = paired_interval(a, b)
    assert low <= float((a - b).mean()) <= high
