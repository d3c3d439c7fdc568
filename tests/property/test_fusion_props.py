"""Property tests of rank fusion: finite scores, deterministic order, invariances, bad numbers refused."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.retrieve.fusion import min_max, ranked, reciprocal_rank_fusion, weighted_score_fusion

IDS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6) | st.sampled_from("abcdefgh")
RUN = st.lists(IDS, max_size=12)  # duplicates allowed: a retriever may repeat a chunk
FINITE = st.floats(allow_nan=False, allow_infinity=False)
SCORES = st.dictionaries(IDS, FINITE, max_size=10)
BAD = st.sampled_from([math.nan, math.inf, -math.inf])


@settings(max_examples=200)
@given(st.lists(RUN, max_size=4), st.floats(0, 1e6))
def test_rrf_scores_are_positive_finite_and_bounded(runs, k):
    fused = reciprocal_rank_fusion(runs, k=k)
    assert set(fused) == {d for run in runs for d in run}
    for doc_id, score in fused.items():
        appearances = sum(doc_id in run for run in runs)
        assert 0 < score <= appearances / (k + 1) * (1 + 1e-12)
        assert math.isfinite(score)


@settings(max_examples=200)
@given(st.lists(RUN, max_size=4), st.randoms(use_true_random=False))
def test_rrf_does_not_depend_on_the_order_of_runs(runs, rng):
    shuffled = list(runs)
    rng.shuffle(shuffled)
    assert reciprocal_rank_fusion(shuffled) == pytest.approx(reciprocal_rank_fusion(runs), rel=1e-12)


@settings(max_examples=100)
@given(RUN)
def test_a_repeated_id_counts_once_at_its_first_rank(run):
    assert reciprocal_rank_fusion([run], k=0) == {d: 1 / r for r, d in enumerate(dict.fromkeys(run), 1)}


@pytest.mark.parametrize("k", [-1.0, -60.0, -0.5, math.nan, -math.inf, math.inf])
def test_rrf_refuses_a_negative_or_non_finite_k(k):
    with pytest.raises(ValueError, match="k"):
        reciprocal_rank_fusion([["a", "b"]], k=k)


def test_rrf_of_nothing_is_empty():
    assert reciprocal_rank_fusion([]) == {} and reciprocal_rank_fusion([[], []]) == {}


@settings(max_examples=200)
@given(SCORES)
def test_min_max_maps_finite_scores_into_unit_interval_keeping_order(scores):
    scaled = min_max(scores)
    assert set(scaled) == set(scores)
    assert all(0.0 <= v <= 1.0 for v in scaled.values())
    for a in scores:
        for b in scores:
            if scores[a] < scores[b]:
                assert scaled[a] <= scaled[b]
    if scores and len(set(scores.values())) > 1:
        assert min(scaled.values()) == 0.0 and max(scaled.values()) == 1.0


@settings(max_examples=100)
@given(SCORES, IDS, BAD)
def test_min_max_refuses_nan_and_infinite_scores(scores, bad_id, bad):
    with pytest.raises(ValueError, match="finite"):
        min_max({**scores, bad_id: bad})


@settings(max_examples=200)
@given(st.lists(st.tuples(SCORES, st.floats(0, 10)), max_size=4))
def test_weighted_fusion_is_finite_bounded_and_order_free(pairs):
    runs, weights = [r for r, _ in pairs], [w for _, w in pairs]
    fused = weighted_score_fusion(runs, weights)
    assert set(fused) == {d for run in runs for d in run}
    assert all(math.isfinite(v) and 0.0 <= v <= sum(weights) * (1 + 1e-9) for v in fused.values())
    assert weighted_score_fusion(runs[::-1], weights[::-1]) == pytest.approx(fused)


@settings(max_examples=100)
@given(st.lists(SCORES, min_size=1, max_size=3), BAD, st.data())
def test_weighted_fusion_refuses_non_finite_weights_and_scores(runs, bad, data):
    weights = [0.5] * len(runs)
    position = data.draw(st.integers(0, len(runs) - 1))
    with pytest.raises(ValueError, match="finite"):
        weighted_score_fusion(runs, [*weights[:position], bad, *weights[position + 1 :]])
    broken = [dict(r) for r in runs]
    broken[position]["x"] = bad
    with pytest.raises(ValueError, match="finite"):
        weighted_score_fusion(broken, weights)


@settings(max_examples=50)
@given(st.lists(SCORES, max_size=3), st.lists(FINITE, max_size=3))
def test_weighted_fusion_needs_one_weight_per_run(runs, weights):
    if len(runs) == len(weights):
        return
    with pytest.raises(ValueError, match="weights"):
        weighted_score_fusion(runs, weights)


@settings(max_examples=200)
@given(SCORES, st.randoms(use_true_random=False))
def test_ranked_is_a_deterministic_descending_permutation(scores, rng):
    items = list(scores.items())
    rng.shuffle(items)
    order = ranked(scores)
    assert order == ranked(dict(items))  # insertion order does not matter
    assert sorted(order) == sorted(scores.items())
    for (id_a, a), (id_b, b) in itertools.pairwise(order):
        assert a > b or (a == b and id_a < id_b)


@settings(max_examples=100)
@given(SCORES, IDS)
def test_ranked_refuses_nan(scores, bad_id):
    with pytest.raises(ValueError, match="NaN"):
        ranked({**scores, bad_id: math.nan})


def test_ranked_puts_infinities_at_the_ends():
    assert ranked({"a": 1.0, "b": math.inf, "c": -math.inf}) == [
        ("b", math.inf),
        ("a", 1.0),
        ("c", -math.inf),
    ]
