"""The eval loop end to end on real MIRAGE items and a real BM25 index, with a scripted model:
records, resume after an interruption, cache on re-run, metrics and report files."""

from __future__ import annotations

import json
import math

import pytest

from core.errors import ConfigError
from core.paths import Paths
from evals.engine.config import EvalConfig, condition_profile
from evals.engine.runner import report_run, run_eval
from evals.records import read_records
from rag.profile import PROFILES_DIR, load_profile
from tests.helpers import LetterModel, guideline_bm25, mcq_run_config, written_answer


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> Paths:
    return guideline_bm25(tmp_path_factory.mktemp("eval-data"), 4)


def config(name: str, **changes) -> EvalConfig:
    return mcq_run_config(name, seed=3, **changes)


def test_grid_conditions_and_profile_overrides():
    cells = config("x").conditions()
    assert [c["name"] for c in cells] == [
        "closed-book",
        "rag/default/bm25/none/k=1",
        "rag/default/bm25/none/k=2",
    ]
    profile = condition_profile(load_profile("default"), cells[2])
    assert (profile.rerank.backend, profile.rerank.keep, profile.rerank.threshold) == ("none", 2, None)
    assert profile.retrieval.mode == "bm25" and profile.index == "default"
    assert profile.verify == load_profile("default").verify  # "profile": the base profile's verifier


def test_a_verify_axis_swaps_the_backend_with_its_own_threshold():
    grid = {
        "index": ["default"],
        "mode": ["hybrid"],
        "rerank": ["trained"],
        "k": [4],
        "closed_book": False,
        "threshold": "profile",
        "verify": ["profile", "heuristic", "trained"],
    }
    cells = config("v", grid=grid).conditions()
    assert [c["name"] for c in cells] == [
        "rag/default/hybrid/trained/k=4/threshold=profile",
        "rag/default/hybrid/trained/k=4/threshold=profile/verify=heuristic",
        "rag/default/hybrid/trained/k=4/threshold=profile/verify=trained",
    ]
    base = load_profile("default").model_copy(
        update={"verify": load_profile("default").verify.model_copy(update={"threshold": 0.9})}
    )
    heuristic, trained = (condition_profile(base, c).verify for c in cells[1:])
    assert (heuristic.backend, heuristic.threshold) == ("heuristic", None)
    assert (trained.backend, trained.threshold) == ("trained", None)
    assert condition_profile(base, cells[0]).verify.threshold == 0.9


def test_interrupted_run_resumes_and_a_finished_run_reruns_from_cache(paths, tmp_path):
    cfg = config("resume")
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_eval(cfg, paths, out=out, progress=False, generator=LetterModel(budget=10))
    kept = list(read_records(out / "records.jsonl"))
    assert len(kept) == 10  # every finished item was written before the interruption
    report_run(out, paths)  # a stopped run can be summarised as it stands
    partial = json.loads((out / "metrics.json").read_text())
    assert (
        partial["mcq"]["closed-book"]["medqa"]["n"] == 5 and "pubmedqa" not in partial["mcq"]["closed-book"]
    )

    model = LetterModel()
    summary = run_eval(cfg, paths, out=out, progress=False, generator=model)
    records = list(read_records(out / "records.jsonl"))
    assert len(records) == 3 * (5 + 3) == len({(r.condition, r.dataset, r.qid) for r in records})
    assert model.calls == 24 - 10  # only the unfinished items were asked
    assert sum(c.skipped for c in summary.conditions.values()) == 10

    again = LetterModel()
    rerun = run_eval(cfg, paths, out=out, restart=True, progress=False, generator=again)
    assert again.calls == 0  # same prompts, same model: every answer comes from the cache
    assert sum(c.cache_hits for c in rerun.conditions.values()) == 24

    metrics = json.loads((out / "metrics.json").read_text())
    medqa = metrics["mcq"]["closed-book"]["medqa"]
    gold_b = sum(
        1 for r in records if r.condition == "closed-book" and r.dataset == "medqa" and r.gold == "B"
    )
    assert medqa["n"] == 5 and medqa["correct"] == gold_b  # the model always says B
    assert medqa["ci"][0] <= medqa["accuracy"] <= medqa["ci"][1]
    paired = metrics["paired_vs_closed_book"]["rag/default/bm25/none/k=1"]["medqa"]
    assert paired["n"] == 5 and paired["harm_rate"] == 0.0  # same answers with and without sources
    rag = [r for r in records if r.condition == "rag/default/bm25/none/k=2"]
    assert all(len(r.retrieved) == 2 for r in rag) and all(
        math.isclose(sum(r.option_probs.values()), 1) for r in rag
    )
    report = (out / "report.md").read_text()
    assert "RAG vs closed-book" in report and (out / "accuracy_by_dataset.png").stat().st_size > 1000
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["indexes"]["default"]["chunks"] > 0 and manifest["git_commit"]


def test_a_resumed_retrieval_run_counts_what_it_skipped(paths, tmp_path):
    cfg = config(
        "retrieval",
        mcq=[],
        retrieval=[{"dataset": "liveqa-medquad", "n": 6, "index": ["default"]}],
        retrieval_grid={"mode": ["bm25"], "depth": 3},
    )
    out = tmp_path / "run"
    first = run_eval(cfg, paths, out=out, progress=False, generator=LetterModel())
    (name,) = first.conditions
    queries = first.conditions[name].answered
    assert queries > 0 and first.conditions[name].skipped == 0
    again = run_eval(cfg, paths, out=out, progress=False, generator=LetterModel())
    assert (again.conditions[name].answered, again.conditions[name].skipped) == (0, queries)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["conditions"][name]["skipped"] == queries


def test_a_retrieval_run_writes_files_that_re_score_to_its_metrics(paths, tmp_path):
    """A real BM25 run on a BEIR-layout set judged on the index's own documents: runs/<set>/ holds
    the qrels and one run per condition, trec_eval reads them to metrics.json's numbers, and
    `eval report` writes the same files again (and drops what it did not write)."""
    import pytrec_eval

    from evals.engine.report.trec_files import file_name
    from rag.indexing import make_retriever, open_index

    questions = {"q1": "first-line therapy", "q2": "treatment of the patient", "q3": "dose"}
    index, _ = open_index(paths, "default", with_embedder=False)
    try:
        retriever = make_retriever(index, None, "bm25", candidates=30)
        found = {q: [h.chunk.doc_id for h in retriever.retrieve(t, 30)] for q, t in questions.items()}
    finally:
        index.close()
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in questions.items())
    )
    judged = [f"{q}\t{docs[-1]}\t2\n{q}\topen-medicine:not-indexed\t1" for q, docs in found.items()]
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(judged) + "\n")
    cfg = config(
        "files",
        mcq=[],
        retrieval=[{"dataset": f"beir:{beir}", "index": ["default"]}],
        retrieval_grid={"mode": ["bm25"], "depth": 3},
    )
    out = tmp_path / "run"
    run_eval(cfg, paths, out=out, progress=False, generator=LetterModel())
    folder = out / "runs" / file_name(f"beir:{beir}")
    assert sorted(p.name for p in folder.iterdir()) == ["default_bm25_none.trec", "qrels.txt"]
    assert not (out / "run.trec").exists()
    with (folder / "qrels.txt").open() as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with (folder / "default_bm25_none.trec").open() as fh:
        run = pytrec_eval.parse_run(fh)
    measures = {
        "ndcg_cut_10": "ndcg@10",
        "recall_20": "recall@20",
        "P_10": "precision@10",
        "recip_rank": "mrr",
        "map": "map",
    }
    theirs = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "recall.20", "P.10", "recip_rank", "map"}
    ).evaluate(run)
    ours = json.loads((out / "metrics.json").read_text())["retrieval"]["retrieval/default/bm25/none"][
        f"beir:{beir}"
    ]
    assert ours["n"] == len(theirs) == 3 and 0 < ours["mrr"] < 1
    for key, metric in measures.items():
        assert ours[metric] == pytest.approx(sum(v[key] for v in theirs.values()) / 3, abs=1e-6), metric
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    (folder / "stale.trec").write_text("x Q0 y 1 1.0 old\n")
    report_run(out, paths)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_changed_config_under_the_same_name_is_refused(paths, tmp_path):
    def run(n: int) -> None:
        cfg = config("same", mcq=[{"dataset": "medqa", "n": n}])
        run_eval(cfg, paths, out=tmp_path / "run", progress=False, generator=LetterModel())

    run(2)
    with pytest.raises(ConfigError, match="different config"):
        run(3)


def test_a_run_from_before_a_config_field_existed_still_resumes(paths, tmp_path):
    out = tmp_path / "run"
    cfg = config("older", mcq=[{"dataset": "medqa", "n": 2}])
    run_eval(cfg, paths, out=out, progress=False, generator=LetterModel())
    stored = json.loads((out / "config.json").read_text())
    del stored["answer_metrics"]  # written by a medcite that had no such field
    (out / "config.json").write_text(json.dumps(stored))
    model = LetterModel()
    run_eval(cfg, paths, out=out, progress=False, generator=model)
    assert model.calls == 0  # every record was kept, nothing re-scored


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mcq": [{"dataset": "medqa-xl", "n": 2}]}, "unknown multiple-choice dataset"),
        ({"mcq": [{"dataset": "pubmedqa", "n": 100000}]}, "cannot sample"),
        ({"retrieval": [{"dataset": "nope"}], "mcq": []}, "unknown retrieval dataset"),
    ],
)
def test_bad_configs_fail_before_any_work(paths, tmp_path, changes, message):
    with pytest.raises(ConfigError, match=message):
        run_eval(
            config("bad", **changes), paths, out=tmp_path / "bad", progress=False, generator=LetterModel()
        )
    assert not (tmp_path / "bad").exists()


class WriterModel(LetterModel):
    """Answers with a cited sentence, splits statements, and says yes to every judgement."""

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        from core.types import Generation

        text = written_answer(messages[-1].content)
        return Generation(text=text, prompt_tokens=50, completion_tokens=10, seconds=0.0)

    def next_token_logprobs(self, messages, candidates):
        self.calls += 1
        return {c: (-0.1 if c.lower() == "yes" else -3.0) for c in candidates}


def test_free_text_answers_are_judged_per_item_with_nan_accounting(paths, tmp_path, monkeypatch):
    from evals.datasets import FREE_TEXT_LOADERS
    from evals.datasets.freetext import FreeTextItem

    questions = [
        FreeTextItem("af", "q1", "How is anticoagulation in atrial fibrillation decided?", "CHA2DS2-VASc."),
        FreeTextItem("af", "q2", "Zxqv wobble?", None),  # nothing to retrieve: an abstention
    ]
    monkeypatch.setitem(FREE_TEXT_LOADERS, "af", lambda paths: questions)
    # A BM25-only index has no support verifier, so under the default policy ("drop") nothing is
    # verified and every answer abstains; "flag" keeps the answer, labelled [UNVERIFIED], to judge.
    profile = tmp_path / "fast-flag.toml"
    fast = (PROFILES_DIR / "fast.toml").read_text()
    profile.write_text(fast.replace("[verify]\n", '[verify]\npolicy = "flag"\n'))
    cfg = config(
        "answers",
        mcq=[],
        answers=[{"dataset": "af", "n": 2}],
        profile=str(profile),
        grid={"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [2]},
    )
    out = tmp_path / "answers"
    run_eval(cfg, paths, out=out, progress=False, generator=WriterModel())
    records = {r.qid: r for r in read_records(out / "records.jsonl")}
    answered, abstained = records["q1"], records["q2"]
    assert (
        answered.extra["mode"] == "rag"
        and answered.citations
        and answered.extra["reference"] == "CHA2DS2-VASc."
    )
    assert answered.answer.startswith("[UNVERIFIED] "), answered
    assert answered.extra["quality"]["faithfulness"] == 1.0  # one statement, judged supported
    assert answered.extra["quality"]["answer_relevancy"] is None  # BM25-only index: no embedder
    assert answered.extra["quality_nan_reasons"]["answer_relevancy"] == "no embedder"
    assert abstained.extra["mode"] == "abstained"
    assert abstained.extra["quality_nan_reasons"]["faithfulness"] == "answer mode abstained"
    summary = json.loads((out / "metrics.json").read_text())["answers"]["answers/default/bm25/none/k=2"]["af"]
    assert summary["modes"] == {"rag": 1, "abstained": 1}
    assert summary["metrics"]["faithfulness"] == {
        "mean": 1.0,
        "n_valid": 1,
        "n_nan": 1,
        "reasons": {"answer mode abstained": 1},
    }
    assert "Free-text answers" in (out / "report.md").read_text()
    again = WriterModel()
    run_eval(cfg, paths, out=out, progress=False, generator=again)
    assert again.calls == 0  # finished items are neither answered nor judged again
