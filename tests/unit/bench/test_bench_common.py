"""Benchmark statistics: percentiles, summaries, top-k overlap, recall of an approximate search."""

import numpy as np
import pytest

from bench.common import (
    interleaved,
    overlap_at_k,
    percentile,
    recall_of_approximate,
    record_serving,
    rss_mb,
    same_top_k_up_to_ties,
    summarize,
)


def test_percentile_interpolates_linearly_between_order_statistics():
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert percentile(values, 50) == 30.0
    # p95 sits at position 0.95 * (5 - 1) = 3.8: 40 + 0.8 * (50 - 40)
    assert percentile(values, 95) == pytest.approx(40 + 0.8 * (50 - 40))
    assert percentile([7.0], 95) == 7.0


def test_percentile_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_summary_reports_sequential_throughput_from_the_total_time():
    row = summarize([1.0, 2.0, 3.0, 4.0])
    assert row["n"] == 4
    assert row["median_ms"] == 2.5
    assert row["mean_ms"] == 2.5
    # 4 queries in (1 + 2 + 3 + 4) ms = 0.010 s
    assert row["qps"] == pytest.approx(4 / 0.010)
    assert row["p95_ms"] == pytest.approx(3 + 0.85 * (4 - 3))


def test_overlap_counts_shared_ids_in_the_top_k_only():
    assert overlap_at_k(["a", "b", "c"], ["c", "b", "a"], 3) == 1.0
    assert overlap_at_k(["a", "b", "c", "d"], ["a", "x", "y", "b"], 2) == 1 / 2
    # b is shared but ranks 4th on the right: outside the top 3
    assert overlap_at_k(["a", "b", "c"], ["a", "x", "y", "b"], 3) == 1 / 3


def test_overlap_divides_by_the_longer_list_and_empty_lists_agree():
    assert overlap_at_k(["a"], ["a", "b"], 10) == 1 / 2
    assert overlap_at_k([], [], 10) == 1.0


def test_recall_is_the_share_of_the_exact_top_k_found_per_query():
    exact = [[1, 2, 3, 4], [5, 6, 7, 8]]
    approx = [[1, 2, 9, 4], [8, 7, 6, 5]]
    assert recall_of_approximate(approx, exact, 4) == [3 / 4, 1.0]


def test_recall_never_counts_missing_results():
    # FAISS pads with -1 when it finds fewer than k; -1 must not match a -1 in the truth
    assert recall_of_approximate([[1, -1, -1]], [[1, 2, -1]], 3) == [1 / 2]
    assert recall_of_approximate([[-1]], [[-1]], 1) == [1.0]


def test_recall_needs_one_ranking_per_query():
    with pytest.raises(ValueError, match="2 approximate rankings for 1"):
        recall_of_approximate([[1], [2]], [[1]], 1)


def test_interleaving_rotates_the_order_of_contenders_per_query():
    calls = []
    contenders = {name: (lambda n: lambda q: calls.append((q, n)) or n)(name) for name in "abc"}
    ms, results = interleaved(contenders, [0, 1, 2, 3])
    assert [n for q, n in calls if q == 0] == ["a", "b", "c"]
    assert [n for q, n in calls if q == 1] == ["b", "c", "a"]
    assert [n for q, n in calls if q == 3] == ["a", "b", "c"]
    assert results["b"] == ["b"] * 4
    assert all(len(t) == 4 and min(t) >= 0 for t in ms.values())


def test_rankings_that_differ_only_inside_a_tie_at_the_cut_off_are_the_same():
    scores = np.array([5.0, 4.0, 3.0, 3.0, 1.0])
    # top 3: rows 0 and 1, then either of the tied rows 2 and 3
    assert same_top_k_up_to_ties([0, 1, 2], [0, 1, 3], scores, scores, 3)
    assert not same_top_k_up_to_ties([0, 1, 4], [0, 1, 3], scores, scores, 3)


def test_ties_are_judged_by_each_sides_own_scores():
    lucene = np.array([5.0, 4.0, 3.0, 2.9])
    okapi = np.array([5.0, 4.0, 2.9, 3.0])  # another idf swaps rows 2 and 3
    assert not same_top_k_up_to_ties([0, 1, 2], [0, 1, 3], lucene, okapi, 3)
    assert same_top_k_up_to_ties([0, 1, 2], [0, 1, 2], lucene, lucene, 3)


def test_a_shorter_positive_only_list_matches_zero_score_padding():
    # medcite returns only positive scores; rank-bm25 pads its top 3 with a zero-score row
    scores = np.array([2.0, 0.0, 1.0, 0.0])
    assert same_top_k_up_to_ties([0, 2], [0, 2, 1], scores, scores, 3)


def test_record_serving_runs_every_query_then_records_the_memory_figures():
    asked: list[str] = []
    out = record_serving({"contender": "x"}, asked.append, ["a", "b"], peak_mb=123.456, base_mb=0.0)
    assert asked == ["a", "b"]
    assert out["contender"] == "x" and out["peak_build_or_load_mb"] == 123.5
    assert out["index_mb"] == out["rss_serving_mb"] > 0 and abs(out["rss_serving_mb"] - rss_mb()) < 50
