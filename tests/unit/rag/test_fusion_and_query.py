import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import QueryError
from rag.retrieve.fusion import ranked, reciprocal_rank_fusion
from rag.retrieve.query import clean_query


def test_rrf_sums_reciprocal_ranks_and_dedupes_by_id():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60)
    assert fused["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2))
    assert fused["c"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert fused["b"] == pytest.approx(1 / (60 + 2))
    assert [d for d, _ in ranked(fused)] == ["a", "c", "b"]


def test_repeated_id_within_a_run_counts_once_at_its_best_rank():
    assert reciprocal_rank_fusion([["a", "a", "b"]], k=0) == {"a": 1.0, "b": 0.5}


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True), max_size=4))
def test_rrf_is_independent_of_run_order(runs):
    assert reciprocal_rank_fusion(runs) == pytest.approx(reciprocal_rank_fusion(runs[::-1]))


@pytest.mark.parametrize(
    "bad,why",
    [("", "empty"), ("   \n\t", "empty"), ("?!...", "no words"), ("x" * 100_000, "limit"), (None, "text")],
)
def test_unusable_queries_get_a_clear_error(bad, why):
    with pytest.raises(QueryError, match=why):
        clean_query(bad)


def test_control_characters_are_removed():
    assert clean_query("IL-6\x00 levels\x1b") == "IL-6  levels"


def test_weighted_fusion_min_max_normalises_each_run():
    from rag.retrieve.fusion import weighted_score_fusion

    bm25 = {"a": 12.0, "b": 4.0, "c": 8.0}
    dense = {"b": 0.9, "d": 0.5}
    fused = weighted_score_fusion([bm25, dense], [0.7, 0.3])
    assert fused["a"] == pytest.approx(0.7 * 1.0)
    assert fused["b"] == pytest.approx(0.7 * 0.0 + 0.3 * 1.0)
    assert fused["c"] == pytest.approx(0.7 * (8 - 4) / (12 - 4))
    assert fused["d"] == pytest.approx(0.3 * 0.0)


def test_weighted_fusion_needs_one_weight_per_run():
    from rag.retrieve.fusion import weighted_score_fusion

    with pytest.raises(ValueError, match="weights"):
        weighted_score_fusion([{"a": 1.0}], [0.5, 0.5])
