import numpy as np
import pytest

from evals.metrics.retrieval import recall_at_k


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
