import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.metrics.retrieval import (
    average_precision,
    condensed,
    judged_at_k,
    ndcg_at_k,
    precision_at_k,
    ranked,
    recall_at_k,
    reciprocal_rank,
    score_run,
)


def test_recall_counts_relevant_documents_in_the_top_k():
    run = {"q1": ["a", "x", "b", "c"], "q2": ["y", "z"]}
    qrels = {"q1": {"a": 1, "b": 2, "c": 1, "d": 0}, "q2": {"z": 1}}
    np.testing.assert_allclose(recall_at_k(run, qrels, 2), [1 / 3, 1 / 1])
    np.testing.assert_allclose(recall_at_k(run, qrels, 10), [3 / 3, 1 / 1])


def test_missing_query_scores_zero_and_duplicates_count_once():
    qrels = {"q": {"a": 1, "b": 1}}
    assert recall_at_k({}, qrels, 5).tolist() == [0.0]
    assert recall_at_k({"q": ["a", "a", "a"]}, qrels, 2).tolist() == [0.5]


def test_query_without_relevant_documents_is_refused():
    with pytest.raises(ValueError, match="undefined"):
        recall_at_k({"q": ["a"]}, {"q": {"a": 0}}, 1)


RUN = {"q1": ["a", "x", "b", "c"], "q2": ["y", "z"]}
QRELS = {"q1": {"a": 1, "b": 2, "c": 1, "d": 0}, "q2": {"z": 3}}


def test_precision_divides_by_k_even_for_short_rankings():
    np.testing.assert_allclose(precision_at_k(RUN, QRELS, 2), [1 / 2, 1 / 2])
    np.testing.assert_allclose(precision_at_k(RUN, QRELS, 4), [3 / 4, 1 / 4])
    assert precision_at_k({"q": ["a"]}, {"q": {"a": 0}}, 3).tolist() == [0.0]  # defined without relevant


def test_ndcg_uses_linear_gain_and_log2_discount():
    dcg = 1 / np.log2(2) + 0 + 2 / np.log2(4) + 1 / np.log2(5)
    idcg = 2 / np.log2(2) + 1 / np.log2(3) + 1 / np.log2(4)
    expected_q2 = (3 / np.log2(3)) / (3 / np.log2(2))
    np.testing.assert_allclose(ndcg_at_k(RUN, QRELS, 10), [dcg / idcg, expected_q2])
    # cut at 2: the ideal list is cut too
    np.testing.assert_allclose(ndcg_at_k(RUN, QRELS, 2)[0], (1 / 1) / (2 / 1 + 1 / np.log2(3)))
    assert ndcg_at_k({"q": ["b", "a"]}, {"q": {"a": 1, "b": 1}}, 2).tolist() == [1.0]
    with pytest.raises(ValueError, match="undefined"):
        ndcg_at_k(RUN, {"q": {"a": 0}}, 5)


def test_reciprocal_rank_optionally_cut_at_k():
    np.testing.assert_allclose(reciprocal_rank(RUN, QRELS), [1 / 1, 1 / 2])
    np.testing.assert_allclose(reciprocal_rank({"q": ["x", "y", "a"]}, {"q": {"a": 1}}), [1 / 3])
    assert reciprocal_rank({"q": ["x", "y", "a"]}, {"q": {"a": 1}}, k=2).tolist() == [0.0]
    assert reciprocal_rank({}, {"q": {"a": 1}}).tolist() == [0.0]


def test_average_precision_divides_by_all_relevant_documents():
    # q1: relevant a@1, b@3, c@4 -> (1/1 + 2/3 + 3/4) / 3
    np.testing.assert_allclose(average_precision(RUN, QRELS), [(1 + 2 / 3 + 3 / 4) / 3, (1 / 2) / 1])
    np.testing.assert_allclose(average_precision(RUN, QRELS, k=3)[0], (1 + 2 / 3) / 3)
    np.testing.assert_allclose(average_precision({"q": ["a", "a", "b"]}, {"q": {"a": 1, "b": 1}}), [1.0])
    with pytest.raises(ValueError, match="undefined"):
        average_precision(RUN, {"q": {"a": 0}})


def test_inputs_are_not_mutated_and_k_is_checked():
    run = {"q1": ["a", "a", "b"]}
    qrels = {"q1": {"a": 1}}
    for metric in (precision_at_k, ndcg_at_k, recall_at_k):
        with pytest.raises(ValueError, match="at least 1"):
            metric(run, qrels, 0)
    with pytest.raises(ValueError, match="at least 1"):
        reciprocal_rank(run, qrels, k=0)
    assert run == {"q1": ["a", "a", "b"]} and qrels == {"q1": {"a": 1}}


def test_ranked_breaks_ties_like_trec_eval():
    assert ranked({"q": {"a": 1.0, "c": 1.0, "b": 2.0}}) == {"q": ["b", "c", "a"]}


def test_score_run_by_metric_name():
    scores = score_run(RUN, QRELS, ["recall@2", "ndcg@10", "mrr", "mrr@1", "map", "precision@4"])
    np.testing.assert_allclose(scores["recall@2"], recall_at_k(RUN, QRELS, 2))
    np.testing.assert_allclose(scores["mrr@1"], [1.0, 0.0])
    np.testing.assert_allclose(scores["precision@4"], [3 / 4, 1 / 4])
    for bad in ("ndcg", "recall@x", "bleu@3"):
        with pytest.raises(ValueError, match="unknown metric"):
            score_run(RUN, QRELS, [bad])


docs = st.sampled_from([f"d{i}" for i in range(10)])


@settings(max_examples=80, deadline=None)
@given(st.lists(docs, max_size=15), st.dictionaries(docs, st.integers(0, 3), min_size=1), st.integers(1, 12))
def test_every_metric_lies_in_zero_one_and_a_perfect_ranking_scores_one(ranking, grades, k):
    grades = {**grades, "d0": 2}  # at least one relevant document
    run, qrels = {"q": ranking}, {"q": grades}
    for values in score_run(
        run, qrels, [f"recall@{k}", f"precision@{k}", f"ndcg@{k}", "mrr", "map"]
    ).values():
        assert 0.0 <= values[0] <= 1.0
    ideal = {"q": sorted(grades, key=lambda d: -grades[d])}
    assert ndcg_at_k(ideal, qrels, k)[0] == pytest.approx(1.0)
    assert average_precision(ideal, qrels)[0] == pytest.approx(1.0)


def test_judged_at_k_counts_judged_documents_of_any_grade():
    run = {"q1": ["a", "x", "d", "a", "c"], "q2": ["y"]}
    # a (1) and d (0) are judged in the top 3, x is not; q2's one document is unjudged; k is the denominator
    np.testing.assert_allclose(judged_at_k(run, QRELS, 3), [2 / 3, 0.0])
    np.testing.assert_allclose(judged_at_k(run, QRELS, 10), [3 / 10, 0.0])


def test_condensed_lists_drop_unjudged_documents_and_can_change_ndcg():
    run = {"q1": ["x", "y", "b", "a"], "q2": ["z"]}
    assert condensed(run, QRELS) == {"q1": ["b", "a"], "q2": ["z"]}
    full = ndcg_at_k(run, QRELS, 2)
    kept = ndcg_at_k(condensed(run, QRELS), QRELS, 2)
    assert full[0] == 0.0 and kept[0] == 1.0  # two unjudged documents hid the ideal order
    assert full[1] == kept[1] == 1.0
