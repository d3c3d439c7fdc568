"""A retrieval run's files re-score to its metrics.json: the per-condition TREC runs and the qrels
beside them, read back by pytrec_eval (and ranx), give medcite's numbers to 1e-6 on runs whose
scores tie the way reciprocal rank fusion makes them tie."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from core.errors import ConfigError
from evals.engine.report.summary import RETRIEVAL_METRICS, write_summary
from evals.engine.report.trec_files import file_name, write_runs
from evals.metrics.retrieval import score_run
from evals.records import ItemRecord
from evals.types import RetrievalSet

# medcite's metric names -> trec_eval's measure (what pytrec_eval is asked) and its result key
TREC_EVAL = {
    "ndcg@10": ("ndcg_cut.10", "ndcg_cut_10"),
    "recall@10": ("recall.10", "recall_10"),
    "recall@20": ("recall.20", "recall_20"),
    "precision@10": ("P.10", "P_10"),
    "mrr": ("recip_rank", "recip_rank"),
    "map": ("map", "map"),
}
SETS = {"bioasq-snippets": "bioasq:S", "liveqa-medquad": "medquad:GHR_"}  # set -> doc id prefix
CONDITIONS = ("retrieval/idx/hybrid/none", "retrieval/idx/bm25/none")


def tied_case(seed: int = 0) -> tuple[list[ItemRecord], dict[str, RetrievalSet]]:
    """Two sets sharing query ids, two conditions; 20 documents per query with RRF-like scores
    (1/(60+a) + 1/(60+b): equal pairs {a, b} tie exactly), listed as a retriever lists them: by
    score, ties by ascending doc id, which is the opposite of trec_eval's order."""
    rng = np.random.default_rng(seed)
    records, sets = [], {}
    for ds, prefix in SETS.items():
        docs = [f"{prefix}{i:04d}" for i in range(40)]
        qrels = {}
        for q in range(8):
            judged = rng.choice(docs, size=12, replace=False)
            grades = {str(d): int(g) for d, g in zip(judged, rng.integers(0, 4, size=12), strict=True)}
            grades[str(judged[0])] = 2  # at least one relevant document
            qrels[f"q{q}"] = grades
        sets[ds] = RetrievalSet(name=ds, queries={q: f"question {q}" for q in qrels}, qrels=qrels)
        for condition in CONDITIONS:
            for qid in qrels:
                retrieved = sorted(str(d) for d in rng.choice(docs, size=20, replace=False))
                a, b = rng.integers(1, 6, size=20), rng.integers(1, 6, size=20)
                scores = [1 / (60 + x) + 1 / (60 + y) for x, y in zip(a, b, strict=True)]
                order = sorted(zip(retrieved, scores, strict=True), key=lambda p: -p[1])  # stable
                records.append(ItemRecord(dataset=ds, qid=qid, condition=condition, retrieved=tuple(order)))
    return records, sets


def trec_eval_means(folder: Path, condition: str) -> tuple[dict[str, float], int]:
    """trec_eval's mean of each medcite metric on one written run file and its qrels, and how
    many queries it scored."""
    with (folder / "qrels.txt").open() as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with (folder / f"{file_name(condition)}.trec").open() as fh:
        run = pytrec_eval.parse_run(fh)
    measures = {measure for measure, _ in TREC_EVAL.values()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    means = {m: float(np.mean([v[key] for v in per_query.values()])) for m, (_, key) in TREC_EVAL.items()}
    return means, len(per_query)


def written(tmp_path: Path, records: list[ItemRecord], sets: dict[str, RetrievalSet]) -> dict:
    write_runs(tmp_path, records, sets)
    write_summary(tmp_path, records, sets, cost={})
    return json.loads((tmp_path / "metrics.json").read_text())["retrieval"]


def test_every_metric_of_the_report_has_its_trec_eval_measure():
    assert set(TREC_EVAL) == set(RETRIEVAL_METRICS)


def test_the_written_runs_re_score_to_metrics_json_with_pytrec_eval(tmp_path):
    records, sets = tied_case()
    metrics = written(tmp_path, records, sets)
    assert not (tmp_path / "run.trec").exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(SETS)
    assert "one TREC run per condition are in runs/<set>/" in (tmp_path / "report.md").read_text()
    compared = 0
    for ds, prefix in SETS.items():
        folder = tmp_path / "runs" / ds
        assert sorted(p.name for p in folder.iterdir()) == [
            "idx_bm25_none.trec",
            "idx_hybrid_none.trec",
            "qrels.txt",
        ]
        for condition in CONDITIONS:
            name = condition.removeprefix("retrieval/")
            first = (folder / f"{file_name(name)}.trec").read_text().splitlines()[0].split()
            assert first[0] == "q0" and first[2].startswith(prefix) and first[5] == name  # own ids, tag
            theirs, scored = trec_eval_means(folder, name)
            ours = metrics[condition][ds]
            assert scored == ours["n"] == 8 and ours["failed"] == ours["no_documents"] == 0
            for metric, value in theirs.items():
                assert ours[metric] == pytest.approx(value, abs=1e-6), (condition, ds, metric)
                compared += 1
    assert compared == len(SETS) * len(CONDITIONS) * len(TREC_EVAL)


def test_the_ties_decide_the_numbers_and_metrics_json_is_not_rounded(tmp_path):
    """Without trec_eval's tie-breaking (the records' own order) the numbers move: the case has
    ties that matter, so the agreement above is not an accident of a tie-free run."""
    records, sets = tied_case()
    metrics = written(tmp_path, records, sets)
    moved = 0.0
    for condition in CONDITIONS:
        for ds, rset in sets.items():
            rows = [r for r in records if r.condition == condition and r.dataset == ds]
            as_listed = {r.qid: [d for d, _ in r.retrieved] for r in rows}
            naive = score_run(as_listed, rset.qrels, RETRIEVAL_METRICS, [r.qid for r in rows])
            moved = max(moved, *(abs(float(v.mean()) - metrics[condition][ds][m]) for m, v in naive.items()))
    assert moved > 1e-3
    values = [v for per in metrics.values() for m in per.values() for k, v in m.items() if k in TREC_EVAL]
    assert any(v != round(v, 4) for v in values)


def test_a_failed_query_and_a_reranked_subset_re_score_as_the_docs_say(tmp_path):
    """A failed query has no lines and counts 0 (mean = sum / n); a cell run on some queries only
    (``/llm``) covers those, and its ``[same queries as llm]`` row is the ``/none`` file on them."""
    records, sets = tied_case()
    hybrid = [r for r in records if r.condition == CONDITIONS[0] and r.dataset == "bioasq-snippets"]
    failed = ItemRecord(dataset="bioasq-snippets", qid="q0", condition=CONDITIONS[0], error="IndexError: x")
    records = [failed if r is hybrid[0] else r for r in records]
    llm = [
        ItemRecord(r.dataset, r.qid, "retrieval/idx/hybrid/llm", retrieved=r.retrieved) for r in hybrid[1:4]
    ]
    metrics = written(tmp_path, [*records, *llm], sets)
    folder = tmp_path / "runs" / "bioasq-snippets"
    ours = metrics[CONDITIONS[0]]["bioasq-snippets"]
    theirs, scored = trec_eval_means(folder, "idx/hybrid/none")
    assert (ours["n"], ours["failed"], ours["no_documents"], scored) == (8, 1, 1, 7)
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@10"] * scored / ours["n"], abs=1e-6)
    subset, scored = trec_eval_means(folder, "idx/hybrid/llm")
    baseline = metrics["retrieval/idx/hybrid/none [same queries as llm]"]["bioasq-snippets"]
    assert scored == 3 and not any("same" in p.name for p in folder.iterdir())  # no file of its own
    with (folder / "qrels.txt").open() as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with (folder / "idx_hybrid_none.trec").open() as fh:
        run = {q: docs for q, docs in pytrec_eval.parse_run(fh).items() if q in {"q1", "q2", "q3"}}
    again = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    assert baseline["map"] == pytest.approx(np.mean([v["map"] for v in again.values()]), abs=1e-6)
    assert subset["map"] == pytest.approx(baseline["map"], abs=1e-6)  # the same rankings


def test_ranx_gives_the_same_numbers_from_the_rank_column(tmp_path):
    """ranx sorts by score alone, not breaking ties by doc id as trec_eval does: it is given the
    rank column (as scores) and the qrels of the queries the run file has."""
    import ranx  # the dev extra installs it; imported here, its numba start-up is this test's cost

    records, sets = tied_case()
    metrics = written(tmp_path, records, sets)
    for ds in SETS:
        folder = tmp_path / "runs" / ds
        judged = ranx.Qrels.from_file(str(folder / "qrels.txt"), kind="trec").to_dict()
        for condition in CONDITIONS:
            name = condition.removeprefix("retrieval/")
            ranks: dict[str, dict[str, float]] = {}
            for line in (folder / f"{file_name(name)}.trec").read_text().splitlines():
                qid, _, doc, rank, _, _ = line.split()
                ranks.setdefault(qid, {})[doc] = -float(rank)
            qrels = ranx.Qrels({q: judged[q] for q in ranks})
            theirs = ranx.evaluate(qrels, ranx.Run(ranks), list(RETRIEVAL_METRICS))
            for metric in RETRIEVAL_METRICS:
                assert metrics[condition][ds][metric] == pytest.approx(theirs[metric], abs=1e-6)


def test_scores_are_written_exactly_so_near_ties_stay_apart(tmp_path):
    """Fused scores can differ below 1e-6 (and still in trec_eval's float32): rounded to 6 places,
    ``b`` would tie ``a`` and rank first (the larger id)."""
    scores = (("medquad:a", 1 / 61 + 1 / 62), ("medquad:b", 1 / 61 + 1 / 62 - 1e-7))
    record = ItemRecord(dataset="s", qid="q", condition="retrieval/i/hybrid/none", retrieved=scores)
    rset = RetrievalSet(name="s", queries={"q": "?"}, qrels={"q": {"medquad:b": 1}})
    metrics = written(tmp_path, [record], {"s": rset})
    lines = (tmp_path / "runs" / "s" / "i_hybrid_none.trec").read_text().splitlines()
    assert [(ln.split()[2], float(ln.split()[4])) for ln in lines] == list(scores)
    theirs, _ = trec_eval_means(tmp_path / "runs" / "s", "i/hybrid/none")
    assert metrics["retrieval/i/hybrid/none"]["s"]["mrr"] == theirs["mrr"] == 0.5


def test_names_that_would_share_a_file_are_refused(tmp_path):
    records, sets = tied_case()
    clash = [
        ItemRecord(r.dataset, r.qid, "retrieval/idx/hybrid_none", retrieved=r.retrieved) for r in records
    ]
    with pytest.raises(ConfigError, match="rename one"):
        write_runs(tmp_path, [*records, *clash], sets)


def test_an_id_with_white_space_is_refused_by_name(tmp_path):
    record = ItemRecord("s", "q", "retrieval/i/bm25/none", retrieved=(("docs:my notes.pdf", 1.0),))
    rset = RetrievalSet(name="s", queries={"q": "?"}, qrels={"q": {"docs:my notes.pdf": 1}})
    with pytest.raises(ConfigError, match=r"'docs:my notes\.pdf' is empty or has white space"):
        write_runs(tmp_path, [record], {"s": rset})
