"""Differential test: our retrieval metrics against trec_eval (pytrec_eval) on random and real qrels."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.paths import Paths
from evals.metrics.retrieval import (
    average_precision,
    ndcg_at_k,
    precision_at_k,
    ranked,
    recall_at_k,
    reciprocal_rank,
)

pytrec_eval = pytest.importorskip("pytrec_eval")

K = (1, 3, 5, 10)


def ours(
    run: dict[str, list[str]], qrels: dict[str, dict[str, int]], qids: list[str]
) -> dict[str, np.ndarray]:
    out = {
        "map": average_precision(run, qrels, queries=qids),
        "recip_rank": reciprocal_rank(run, qrels, queries=qids),
    }
    for k in K:
        out[f"P_{k}"] = precision_at_k(run, qrels, k, qids)
        out[f"recall_{k}"] = recall_at_k(run, qrels, k, qids)
        out[f"ndcg_cut_{k}"] = ndcg_at_k(run, qrels, k, qids)
        out[f"map_cut_{k}"] = average_precision(run, qrels, k, qids)
    return out


def check(run_scores: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> int:
    """Compare every measure on the queries trec_eval scores that have a relevant document (ours
    refuse the others); returns how many queries were compared."""
    measures = {f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut") for k in K} | {"map", "recip_rank"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run_scores)
    qids = sorted(q for q in theirs if any(g > 0 for g in qrels[q].values()))
    mine = ours(ranked(run_scores), qrels, qids)
    for name, values in mine.items():
        expected = [theirs[q][name] for q in qids]
        np.testing.assert_allclose(values, expected, atol=1e-12, err_msg=name)
    return len(qids)


def random_case(rng: np.random.Generator, n_queries: int = 20, n_docs: int = 40):
    docs = [f"d{i:03d}" for i in range(n_docs)]
    qrels, run = {}, {}
    for q in range(n_queries):
        judged = rng.choice(docs, size=int(rng.integers(1, 12)), replace=False)
        qrels[f"q{q}"] = {d: int(rng.integers(0, 4)) for d in judged}
        retrieved = rng.choice(docs, size=int(rng.integers(0, 25)), replace=False)
        # few distinct scores, so ties (broken by doc id, as trec_eval does) are common
        run[f"q{q}"] = {d: float(rng.integers(0, 5)) for d in retrieved}
    return run, qrels


def test_scores_equal_in_single_precision_tie_as_in_trec_eval() -> None:
    """trec_eval keeps scores as float32: ``b`` ties ``a`` there (and ranks first, larger id),
    while ``c``, 1e-7 lower, stays below both. Compared in double precision ``a`` would lead."""
    s = 1 / 61 + 1 / 62
    run = {"q": {"a": s, "b": s - 1e-9, "c": s - 1e-7}}
    assert ranked(run) == {"q": ["b", "a", "c"]}
    assert check(run, {"q": {"a": 1, "c": 1}}) == 1


@pytest.mark.parametrize("seed", range(5))
def test_random_runs_match_trec_eval(seed: int) -> None:
    run, qrels = random_case(np.random.default_rng(seed))
    assert check({q: s for q, s in run.items() if s}, qrels) >= 10


grades = st.dictionaries(
    st.sampled_from([f"d{i}" for i in range(12)]), st.integers(0, 3), min_size=1, max_size=8
)
scores = st.dictionaries(
    st.sampled_from([f"d{i}" for i in range(12)]), st.floats(0, 3, allow_nan=False), max_size=12
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(grades, scores), min_size=1, max_size=4))
def test_property_matches_trec_eval(cases: list[tuple[dict[str, int], dict[str, float]]]) -> None:
    qrels = {f"q{i}": g for i, (g, _) in enumerate(cases)}
    run = {f"q{i}": {d: round(s, 3) for d, s in sc.items()} for i, (_, sc) in enumerate(cases) if sc}
    check(run, qrels)


def test_real_bioasq_qrels_match_trec_eval() -> None:
    """50 real BioASQ questions with their snippet qrels; runs mix gold and other questions' snippets."""
    path = Paths.from_env().source_data / "bioasq_from_mirage" / "qrels_snippets.tsv"
    qrels: dict[str, dict[str, int]] = {}
    with Path(path).open(newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if len(qrels) < 50 or row["query-id"] in qrels:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    pool = sorted({d for docs in qrels.values() for d in docs})
    rng = np.random.default_rng(7)
    run: dict[str, dict[str, float]] = {}
    for qid, docs in qrels.items():
        picked = set(rng.choice(sorted(docs), size=max(1, len(docs) // 2), replace=False))
        picked |= set(rng.choice(pool, size=15, replace=False))
        run[qid] = {d: float(rng.random()) for d in picked}
    assert check(run, qrels) == 50
