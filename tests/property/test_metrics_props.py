"""Property tests of the retrieval metrics, multiple-choice accuracy and the paired statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.metrics.choice import wilson_interval, z_value
from evals.metrics.retrieval import (
    average_precision,
    ndcg_at_k,
    precision_at_k,
    ranked,
    recall_at_k,
    reciprocal_rank,
    score_run,
)
from evals.metrics.stats import mcnemar_exact, paired_bootstrap_diff, paired_counts

DOC = st.text(st.characters(exclude_categories=["Cs"]), max_size=4) | st.sampled_from("abcdefghij")
K = st.integers(1, 30)


@st.composite
def run_and_qrels(draw, min_relevant: int = 1):
    """One to three queries; each has a ranking (repeats allowed) and graded judgements with at
    least ``min_relevant`` relevant document."""
    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for qid in draw(st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True)):
        judged = draw(st.dictionaries(DOC, st.integers(-2, 5), max_size=8))
        if min_relevant and not any(g > 0 for g in judged.values()):
            judged[draw(DOC)] = draw(st.integers(1, 5))
        qrels[qid] = judged
        pool = [*judged, *draw(st.lists(DOC, max_size=4))]
        run[qid] = draw(st.lists(st.sampled_from(pool), max_size=12)) if pool and draw(st.booleans()) else []
    return run, qrels


def in_unit_interval(values: np.ndarray) -> bool:
    return bool(np.all((values >= 0.0) & (values <= 1.0)) and np.all(np.isfinite(values)))


@settings(max_examples=200)
@given(run_and_qrels(), K)
def test_every_metric_is_in_the_unit_interval(data, k):
    run, qrels = data
    for metric in (recall_at_k, precision_at_k, ndcg_at_k, reciprocal_rank, average_precision):
        values = metric(run, qrels, k)
        assert values.shape == (len(qrels),) and in_unit_interval(values), metric.__name__


@settings(max_examples=200)
@given(run_and_qrels(), K, K)
def test_recall_and_rr_grow_with_k_and_precision_times_k_too(data, k1, k2):
    run, qrels = data
    lo, hi = sorted((k1, k2))
    assert np.all(recall_at_k(run, qrels, lo) <= recall_at_k(run, qrels, hi))
    assert np.all(reciprocal_rank(run, qrels, lo) <= reciprocal_rank(run, qrels, hi))
    assert np.all(precision_at_k(run, qrels, lo) * lo <= precision_at_k(run, qrels, hi) * hi + 1e-9)
    assert np.all(average_precision(run, qrels, lo) <= average_precision(run, qrels, hi) + 1e-12)


@settings(max_examples=200)
@given(run_and_qrels(), K)
def test_the_ideal_ranking_scores_one(data, k):
    _, qrels = data
    ideal = {q: [d for d, g in sorted(j.items(), key=lambda p: -p[1]) if g > 0] for q, j in qrels.items()}
    assert np.all(ndcg_at_k(ideal, qrels, k) == 1.0)
    assert np.all(recall_at_k(ideal, qrels, max(k, max(map(len, ideal.values())))) == 1.0)
    assert np.all(reciprocal_rank(ideal, qrels, k) == 1.0)
    assert np.all(average_precision(ideal, qrels) == pytest.approx(1.0))


@settings(max_examples=100)
@given(run_and_qrels())
def test_repeated_ids_in_a_ranking_count_once(data):
    run, qrels = data
    doubled = {q: [d for d in ranking for _ in (0, 1)] for q, ranking in run.items()}
    deduped = {q: list(dict.fromkeys(ranking)) for q, ranking in run.items()}
    for metric in (recall_at_k, precision_at_k, ndcg_at_k):
        assert np.array_equal(metric(doubled, qrels, 5), metric(deduped, qrels, 5))


@settings(max_examples=50, deadline=2000)
@given(run_and_qrels(), st.integers(10**6, 10**15))
def test_huge_k_is_cheap(data, k):
    """A cut-off far beyond any ranking (``ndcg@1000000000`` in a config) needs no k-sized array."""
    run, qrels = data
    assert np.array_equal(ndcg_at_k(run, qrels, k), ndcg_at_k(run, qrels, 100))
    assert np.array_equal(recall_at_k(run, qrels, k), recall_at_k(run, qrels, 100))


@settings(max_examples=100)
@given(run_and_qrels(min_relevant=0), st.integers(-5, 0))
def test_k_below_one_is_refused(data, k):
    run, qrels = data
    for metric in (recall_at_k, precision_at_k, ndcg_at_k, reciprocal_rank, average_precision):
        with pytest.raises(ValueError, match="k must be at least 1"):
            metric(run, qrels, k)


@settings(max_examples=200)
@given(st.text(max_size=12) | st.sampled_from(["recall@²", "ndcg@٣", "mrr@", "map@0", "recall@-1", "P@5"]))
def test_score_run_computes_a_metric_name_or_refuses_it_by_name(name):
    run, qrels = {"q": ["a", "b"]}, {"q": {"a": 1}}
    try:
        out = score_run(run, qrels, [name])
    except ValueError as exc:
        assert "metric" in str(exc) or "k must be at least 1" in str(exc)
        return
    assert in_unit_interval(out[name])


@settings(max_examples=100)
@given(st.dictionaries(st.text(max_size=2), st.dictionaries(DOC, st.floats(allow_nan=False), max_size=6)))
def test_scored_runs_rank_every_document_once(run):
    rankings = ranked(run)
    assert {q: sorted(r) for q, r in rankings.items()} == {q: sorted(s) for q, s in run.items()}


# -- multiple choice and paired statistics ----------------------------------------------------


@settings(max_examples=300)
@given(st.integers(1, 10**9), st.data(), st.floats(0.01, 0.999))
def test_wilson_interval_lies_in_unit_interval_and_contains_the_estimate(n, data, confidence):
    correct = data.draw(st.integers(0, n))
    low, high = wilson_interval(correct, n, confidence)
    assert 0.0 <= low <= correct / n <= high <= 1.0


@settings(max_examples=100)
@given(st.integers(1, 1000), st.data(), st.floats(0.5, 0.99), st.floats(0.5, 0.99))
def test_wilson_interval_widens_with_confidence(n, data, c1, c2):
    correct = data.draw(st.integers(0, n))
    (lo1, hi1), (lo2, hi2) = (
        wilson_interval(correct, n, min(c1, c2)),
        wilson_interval(correct, n, max(c1, c2)),
    )
    assert lo2 <= lo1 + 1e-12 and hi1 <= hi2 + 1e-12


@pytest.mark.parametrize(
    ("correct", "n", "confidence"),
    [(0, 0, 0.95), (-1, 5, 0.95), (6, 5, 0.95), (1, 5, 0.0), (1, 5, 1.0), (1, 5, math.nan), (1, 5, 1.5)],
)
def test_wilson_refuses_impossible_counts_and_confidences(correct, n, confidence):
    with pytest.raises(ValueError):
        wilson_interval(correct, n, confidence)


def test_z_value_of_95_percent():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)


@settings(max_examples=200)
@given(st.integers(0, 400) | st.sampled_from([2000, 2001, 5000]), st.integers(0, 400))
def test_mcnemar_p_is_a_probability_and_symmetric(b, c):
    p = mcnemar_exact(b, c)
    assert 0.0 <= p <= 1.0
    assert p == mcnemar_exact(c, b)
    if b == c:
        assert p == 1.0


@settings(max_examples=100)
@given(st.integers(0, 200), st.integers(1, 200))
def test_mcnemar_p_falls_as_the_split_grows_more_lopsided(b, extra):
    assert mcnemar_exact(b, b + extra) <= mcnemar_exact(b, b + extra - 1)


@pytest.mark.parametrize(("b", "c"), [(-1, 0), (0, -1), (-5, -5)])
def test_mcnemar_refuses_negative_counts(b, c):
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(b, c)


BITS = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200)


@settings(max_examples=100, deadline=None)
@given(BITS, st.integers(0, 2**32 - 1))
def test_bootstrap_is_deterministic_with_a_seed_and_brackets_the_difference(pairs, seed):
    a = np.array([x for x, _ in pairs], dtype=float)
    b = np.array([y for _, y in pairs], dtype=float)
    first = paired_bootstrap_diff(a, b, n_resamples=500, seed=seed)
    assert first == paired_bootstrap_diff(a, b, n_resamples=500, seed=seed)
    diff, low, high = first
    assert diff == pytest.approx(b.mean() - a.mean())
    assert -1.0 <= low <= high <= 1.0
    counts = paired_counts(a, b)
    assert counts.n == len(pairs) and diff == pytest.approx((counts.only_b - counts.only_a) / counts.n)
    if counts.only_a == counts.only_b == 0:
        assert low == high == 0.0


@pytest.mark.parametrize(
    ("a", "b", "kwargs"),
    [
        ([], [], {}),
        ([1.0], [1.0, 0.0], {}),
        ([[1.0]], [[1.0]], {}),
        ([1.0], [0.0], {"n_resamples": 0}),
        ([1.0], [0.0], {"confidence": 1.0}),
        ([1.0], [0.0], {"confidence": math.nan}),
    ],
)
def test_bootstrap_refuses_unpaired_or_empty_input(a, b, kwargs):
    with pytest.raises(ValueError):
        paired_bootstrap_diff(np.array(a), np.array(b), **kwargs)
