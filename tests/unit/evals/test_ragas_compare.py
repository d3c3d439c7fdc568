"""The side-by-side report of medcite's and ragas' answer-quality scores: correlations, intervals,
joins, NaN tallies, judge notes, and the export of samples from a run directory."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from core.paths import Paths
from core.types import Chunk
from evals.records import ItemRecord, write_records
from evals.studies.ragas import compare as rc
from evals.studies.ragas import samples as rs
from indexes.chunkstore import write_chunks


def test_ranks_share_the_average_rank_on_ties() -> None:
    assert rc._ranks(np.array([10.0, 20.0, 20.0, 30.0])).tolist() == [1, (2 + 3) / 2, (2 + 3) / 2, 4]


def test_pearson_and_spearman_by_hand() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert rc.pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert rc.pearson(x, -x) == pytest.approx(-1.0)
    # monotone but not linear: rho is 1, r is below 1
    assert rc.spearman(x, x**3) == pytest.approx(1.0)
    assert rc.pearson(x, x**3) < 0.99
    # r = cov / (sd sd): x = 1,2,3; y = 1,3,2 -> cov-sum 1*0 + ... = (-1)(-1) + 0 + (1)(0) = 1, ss 2 and 2
    assert rc.pearson(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])) == pytest.approx(1 / 2)
    assert math.isnan(rc.pearson(x, np.ones(4)))  # a constant side has no correlation
    assert math.isnan(rc.spearman(x[:2], x[:2]))  # nor do two pairs


def test_correlations_match_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 5, 40) / 4  # many ties, as judge scores have
    y = np.clip(x + rng.normal(0, 0.3, 40), 0, 1).round(1)
    assert rc.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], rel=1e-9)
    assert rc.spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], rel=1e-9)


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(1)
    x = rng.random(60)
    y = x + rng.normal(0, 0.2, 60)
    low, high = rc.bootstrap_ci(x, y, rc.spearman, seed=3)
    assert low < rc.spearman(x, y) < high <= 1.0
    assert (low, high) == rc.bootstrap_ci(x, y, rc.spearman, seed=3)
    assert (low, high) != rc.bootstrap_ci(x, y, rc.spearman, seed=4)
    assert all(math.isnan(v) for v in rc.bootstrap_ci(x[:2], y[:2], rc.pearson))


def test_index_of_reads_the_answer_condition() -> None:
    assert rs.index_of("answers/literature/hybrid/trained/k=4/threshold=profile") == "literature"
    with pytest.raises(ValueError, match="not an answer condition"):
        rs.index_of("closed-book")


def record(qid: str, mode: str = "rag", error: str | None = None, **quality: float | None) -> ItemRecord:
    return ItemRecord(
        dataset="pubmedqa-long",
        qid=qid,
        condition="answers/tiny/hybrid/trained/k=4/threshold=profile",
        answer="Aspirin lowers fever [1]. It also thins blood [2].",
        retrieved=(("d#0", 0.9), ("d#1", 0.5)),
        error=error,
        extra={
            "mode": mode,
            "reference": "Aspirin is an antipyretic.",
            "judge_seconds": 12.5,
            "quality": dict(quality),
            "quality_nan_reasons": {k: "unparsable" for k, v in quality.items() if v is None},
        },
    )


def test_to_sample_strips_markers_and_carries_our_scores() -> None:
    s = rs.to_sample(
        record("1", faithfulness=0.5, context_recall=None), "Does aspirin lower fever?", ["a", "b"]
    )
    assert s["id"] == "pubmedqa-long:1"
    assert s["answer"] == "Aspirin lowers fever. It also thins blood."
    assert s["contexts"] == ["a", "b"] and s["reference"] == "Aspirin is an antipyretic."
    assert s["medcite"]["scores"]["faithfulness"] == 0.5
    assert s["medcite"]["scores"]["answer_relevancy"] is None
    assert s["medcite"]["reasons"] == {"context_recall": "unparsable"}


def test_exportable_keeps_answered_rag_records_only() -> None:
    rows = [record("1"), record("2", mode="abstained"), record("3", error="GeneratorTimeout: slow")]
    assert [r.qid for r in rs.exportable(rows, ["rag"])] == ["1"]
    assert [r.qid for r in rs.exportable(rows)] == ["1", "2"]  # an abstention is judged too


def test_export_reads_questions_and_passage_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = Paths(data_dir=tmp_path / "data", source_data=tmp_path / "src")
    index = paths.indexes_dir / "tiny"
    index.mkdir(parents=True)
    chunks = [
        Chunk(f"d#{i}", "d", "T", (), "s", "u", "l", 0, len(t), t)
        for i, t in enumerate(["first passage", "second"])
    ]
    write_chunks(index, chunks)
    run = tmp_path / "run"
    run.mkdir()
    write_records(run / "records.jsonl", [record("1", faithfulness=1.0), record("2", mode="abstained")])
    (run / "config.json").write_text(json.dumps({"answers": [{"dataset": "pubmedqa-long"}]}))

    items = [
        SimpleNamespace(qid="1", question="Does aspirin lower fever?"),
        SimpleNamespace(qid="2", question="?"),
    ]
    monkeypatch.setattr("evals.datasets.load_freetext", lambda name, paths, columns=None: items)
    assert [s["mode"] for s in rs.export_samples(run, paths)] == ["rag", "abstained"]
    samples = rs.export_samples(run, paths, modes=["rag"])
    assert [s["id"] for s in samples] == ["pubmedqa-long:1"]
    assert samples[0]["question"] == "Does aspirin lower fever?"
    assert samples[0]["contexts"] == ["first passage", "second"]  # retrieval order


def scored(sid: str, **scores: float | None) -> dict:
    judge = {
        "faithfulness": [
            {"step": "StatementGeneratorOutput", "output": {"statements": ["a", "b"]}},
            {
                "step": "NLIStatementOutput",
                "output": {
                    "statements": [
                        {"statement": "a", "verdict": 1},
                        {"statement": "b is made up", "verdict": 0},
                    ]
                },
            },
        ]
    }
    reasons = {k: "timeout after 60 s" for k, v in scores.items() if v is None}
    return {
        "id": sid,
        "scores": scores,
        "reasons": reasons,
        "seconds": {"total": 100.0},
        "tokens": {"total": {"prompt": 900, "completion": 80, "calls": 3}},
        "judge": judge,
    }


def sample(sid: str, **ours: float | None) -> dict:
    return {
        "id": sid,
        "question": "q",
        "dataset": "ds",
        "medcite": {
            "scores": ours,
            "reasons": {k: "unparsable" for k, v in ours.items() if v is None},
            "judge_seconds": 10.0,
        },
    }


def test_join_and_summary_pair_only_samples_with_both_scores() -> None:
    samples = [
        sample("a", faithfulness=1.0),
        sample("b", faithfulness=0.0),
        sample("c", faithfulness=None),
        sample("d", faithfulness=0.5),
        sample("unscored", faithfulness=1.0),
    ]
    rows = rc.join(
        samples,
        [
            scored("a", faithfulness=0.5),
            scored("b", faithfulness=0.25),
            scored("c", faithfulness=1.0),
            scored("d", faithfulness=None),
        ],
    )
    assert [r["id"] for r in rows] == ["a", "b", "c", "d"]
    s = rc.metric_summary(rows, "faithfulness", top=1)
    assert (s["n"], s["n_pairs"]) == (4, 2)
    assert s["mean_medcite"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert s["mean_ragas"] == pytest.approx((0.5 + 0.25 + 1.0) / 3)
    assert s["mean_ragas_paired"] == pytest.approx((0.5 + 0.25) / 2)
    assert s["nan_medcite"] == {"unparsable": 1} and s["nan_ragas"] == {"timeout after 60 s": 1}
    assert [d["id"] for d in s["disagreements"]] == ["a"]  # |1 - 0.5| > |0 - 0.25|
    assert [d["id"] for d in rc.metric_summary(rows, "faithfulness", top=5)["disagreements"]] == ["a", "b"]
    assert s["disagreements"][0]["ragas_judge"] == "1/2 statements supported; e.g. unsupported: b is made up"
    assert math.isnan(s["spearman"])  # two pairs: no correlation claimed
    assert rc.metric_summary(rows, "context_recall")["n"] == 0  # ragas did not run it


def test_judge_notes_read_each_metric() -> None:
    ar = [
        {"step": "AnswerRelevanceOutput", "output": {"question": "What lowers fever?", "noncommittal": 0}}
    ] * 2
    assert rc.judge_note("answer_relevancy", ar).endswith("noncommittal 0/2")
    cp = [{"step": "ContextPrecisionOutput", "output": {"verdict": v}} for v in (1, 0, 1)]
    assert rc.judge_note("context_precision", cp) == "useful verdicts in retrieval order: 101"
    cr = [
        {
            "step": "ContextRecallOutput",
            "output": {
                "classifications": [{"statement": "x", "attributed": 1}, {"statement": "y", "attributed": 0}]
            },
        }
    ]
    assert rc.judge_note("context_recall", cr) == "1/2 reference statements attributed; e.g. not: y"
    assert rc.judge_note("faithfulness", []) == "no judge output"


def test_build_report_writes_markdown_and_nan_free_json(tmp_path: Path) -> None:
    samples, scores = tmp_path / "samples.jsonl", tmp_path / "scores.jsonl"
    ours, theirs = zip("abcd", (1, 0, 0.5, 1), strict=True), zip("abc", (1, 0.2, 0.5), strict=True)
    samples.write_text("".join(json.dumps(sample(i, faithfulness=v)) + "\n" for i, v in ours))
    torn = '{"id": "d", "sco'  # the scorer was killed mid-write
    scores.write_text("".join(json.dumps(scored(i, faithfulness=v)) + "\n" for i, v in theirs) + torn)
    summary = rc.build_report(samples, scores, tmp_path / "out", "timings: shared cores")
    assert (summary["n_samples"], summary["n_scored"]) == (4, 3)
    assert summary["metrics"]["faithfulness"]["spearman"] == pytest.approx(1.0)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "scored by ragas so far: 3" in report and "timings: shared cores" in report
    assert "| faithfulness | 3 | 1.00" in report
    assert "`b`: medcite 0.00, ragas 0.20" in report and "`a`: medcite" not in report  # only differing pairs
    data = json.loads((tmp_path / "out" / "samples.json").read_text())  # strict JSON: NaN became null
    assert data["summary"]["metrics"]["answer_relevancy"]["spearman"] is None
    assert [s["id"] for s in data["samples"]] == ["a", "b", "c"]
    assert data["summary"]["cost"]["ragas_prompt_tokens"]["median"] == 900


def test_an_item_in_two_runs_is_exported_once_the_first_kept() -> None:
    rows = [{"id": "x", "run": 1}, {"id": "y", "run": 1}, {"id": "x", "run": 2}, {"id": "z", "run": 2}]
    assert [(r["id"], r["run"]) for r in rs.unique_by_id(rows)] == [("x", 1), ("y", 1), ("z", 2)]


def test_a_bioasq_sample_reaches_the_report_without_bioasq_text():
    from evals.studies.ragas.compare import without_licensed_text

    row = {
        "dataset": "bioasq-ideal-11b",
        "ragas_judge": {"context_recall": [{"step": "x", "output": {"classifications": []}}]},
        "ragas_notes": {
            "context_recall": "1/2 reference statements attributed; e.g. not: EXPERT TEXT",
            "faithfulness": "2/2 statements supported",
        },
    }
    public = without_licensed_text(row)
    assert public["ragas_judge"] == {} and "EXPERT TEXT" not in str(public)
    assert public["ragas_notes"] == {
        "context_recall": "1/2 reference statements attributed",
        "faithfulness": "2/2 statements supported",
    }
    pubmed = {**row, "dataset": "pubmedqa-long"}
    assert without_licensed_text(pubmed) is pubmed  # MIT-licensed: kept whole
