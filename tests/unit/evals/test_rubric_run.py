"""``[[rubric]]`` sets through ``medcite eval run`` on a real BM25 index with a scripted model
(it replies and judges): records, the paired, per-tag and agreement report, the judge in the
manifest, the canary kept out, resume after a kill, and a bad file refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.paths import Paths
from evals.datasets.rubric import RubricFileError
from evals.engine.config import load_config
from evals.engine.runner import report_run, run_eval
from evals.records import read_records
from medcite.commands.evals import _headline
from rag.profile import PROFILES_DIR
from tests.helpers import guideline_bm25
from tests.rubric_support import CANARY, CLINICIAN, FIXTURE, HB, RAG, RubricModel, fresh_paths
from tests.rubric_support import rubric_config as config


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return guideline_bm25(tmp_path_factory.mktemp("rubric-index"), 4).indexes_dir


@pytest.fixture
def paths(index_dir, tmp_path) -> Paths:
    return fresh_paths(index_dir, tmp_path / "data")


def test_every_arm_is_graded_and_reported_paired_per_tag_and_with_agreement(paths, tmp_path):
    model, out = RubricModel(), tmp_path / "run"
    run_eval(config(tmp_path), paths, out=out, progress=False, generator=model)
    records = list(read_records(out / "records.jsonl"))
    assert len(records) == 2 * (3 + 3) == len({(r.condition, r.dataset, r.qid) for r in records})
    closed = {r.qid: r for r in records if r.condition == "rubric/closed-book" and r.dataset == HB}
    fever = closed["hb-fever-child"]
    assert fever.extra["mode"] == "closed-book" and [g["by"] for g in fever.extra["grades"]] == ["judge"] * 3
    # the judge's rule: met when the reply holds the criterion's last word ("weight", "dehydration")
    assert [g["met"] for g in fever.extra["grades"]] == [True, True, False] and fever.extra["score"] == 1.0
    metrics = json.loads((out / "metrics.json").read_text())["rubric"]
    hb = metrics[HB]
    assert hb["reference"] == "rubric/closed-book" and hb["arms"]["rubric/closed-book"]["score"]["n"] == 3
    paired = hb["paired"][RAG]
    assert paired["n"] == 3 and paired["help"] + paired["harm"] + paired["ties"] == 3
    assert {"axis:accuracy", "theme:emergency_referrals"} <= set(hb["tags"][RAG])
    assert (
        set(metrics[CLINICIAN]["agreement"]) <= {"key_fact", "abstains"} and metrics[CLINICIAN]["agreement"]
    )
    report = (out / "report.md").read_text()
    for section in ("## Rubric scores: each arm against rubric/closed-book", "per tag", "Judge agreement"):
        assert section in report
    judge = json.loads((out / "manifest.json").read_text())["rubric_judge"]
    assert judge["same_model_as_run"] and judge["fingerprint"]["name"] == "rubric-model"
    assert judge["prompt_version"] == 1 and judge["matched"] == ["key_fact", "abstains"]


def test_the_canary_reaches_no_prompt_record_or_report(paths, tmp_path):
    model, out = RubricModel(), tmp_path / "run"
    run_eval(config(tmp_path, rubric=[{"dataset": HB}]), paths, out=out, progress=False, generator=model)
    assert model.answers == 6 and model.judged == 2 * 8  # 3 items x 2 arms; 8 criteria per arm
    assert CANARY in FIXTURE.read_text()
    assert not [text for text in model.seen if CANARY in text]
    for written in out.rglob("*"):
        if written.is_file() and written.suffix in {".jsonl", ".json", ".md"}:
            assert CANARY not in written.read_text(encoding="utf-8"), written


def test_a_killed_run_resumes_without_grading_or_answering_anything_twice(paths, index_dir, tmp_path):
    clean, elsewhere = RubricModel(), fresh_paths(index_dir, tmp_path / "clean")
    run_eval(config(tmp_path, "clean"), elsewhere, out=tmp_path / "c", progress=False, generator=clean)
    out, first = tmp_path / "run", RubricModel(budget=9)
    with pytest.raises(KeyboardInterrupt):
        run_eval(config(tmp_path), paths, out=out, progress=False, generator=first)
    kept = (out / "records.jsonl").read_text().splitlines()
    assert 0 < len(kept) < 12
    second = RubricModel()
    run_eval(config(tmp_path), paths, out=out, progress=False, generator=second)
    lines = (out / "records.jsonl").read_text().splitlines()
    assert lines[: len(kept)] == kept  # what was graded before the kill is kept as it was
    records = list(read_records(out / "records.jsonl"))
    assert len(records) == 12 == len({(r.condition, r.dataset, r.qid) for r in records})
    # the killed item's reply and verdicts came back from the caches: no call was made twice
    assert (first.answers + second.answers, first.judged + second.judged) == (clean.answers, clean.judged)
    third = RubricModel()
    run_eval(config(tmp_path), paths, out=out, progress=False, generator=third)
    assert third.seen == []


def test_a_bad_file_stops_the_run_before_anything_runs(paths, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = FIXTURE.read_text().splitlines()
    bad.write_text(lines[0] + "\n" + lines[1].replace('"points": 6', '"points": "six"') + "\n")
    model, out = RubricModel(), tmp_path / "run"
    with pytest.raises(RubricFileError, match=f"{bad}:2: rubrics.0.points"):
        run_eval(config(tmp_path, rubric=[{"dataset": f"rubric:{bad}"}]), paths, out=out, generator=model)
    assert not out.exists() and model.seen == []


def test_criteria_without_a_matcher_need_a_judge(paths, tmp_path):
    with pytest.raises(ConfigError, match="need a judge; add a \\[rubric_judge\\]"):
        run_eval(config(tmp_path, rubric_judge=None), paths, out=tmp_path / "r", generator=RubricModel())
    run_eval(config(tmp_path, rubric=[{"dataset": CLINICIAN, "n": 2}], rubric_judge=None), paths,
             out=tmp_path / "r", progress=False, generator=RubricModel())  # fmt: skip


def test_a_judge_that_disagrees_with_the_matchers_is_a_warning_in_the_report(paths, tmp_path):
    out = tmp_path / "run"
    cfg = config(tmp_path, rubric=[{"dataset": CLINICIAN, "n": 4}])
    run_eval(cfg, paths, out=out, progress=False, generator=RubricModel(always=True))
    headline = _headline(report_run(out, paths).read_text())
    assert "**Warning**" in headline and "plug a stronger judge" in headline


def test_the_shipped_configs_read_and_name_their_arms():
    """rubric_clinician.toml: matchers only on 200 items; its _judge twin: the local judge on 30."""
    folder = PROFILES_DIR.parents[1] / "evals" / "configs"
    cfg, judged = (load_config(folder / f"rubric_clinician{s}.toml") for s in ("", "_judge"))
    for c, n in ((cfg, 200), (judged, 30)):
        (entry,) = c.rubric
        assert (entry.dataset, entry.n, c.profile) == (CLINICIAN, n, "default")
        names = [x["name"] for x in c.rubric_conditions(CLINICIAN)]
        assert names[0] == "closed-book" and names[1].startswith("rag/default/hybrid/trained/k=4")
    assert cfg.rubric_judge is None
    assert (
        judged.rubric_judge is not None
        and judged.rubric_judge.settings(judged.profile).backend == "llama-cpp"
    )


def test_a_bad_judge_setting_is_named_when_the_config_is_read(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(f'[[rubric]]\ndataset = "{HB}"\n[rubric_judge]\ngenerator = {{ temprature = 1 }}\n')
    with pytest.raises(ConfigError, match="\\[rubric_judge\\]: generator: temprature"):
        load_config(path)


def test_profile_arms_pair_with_the_first_arm_without_a_closed_book_one(paths, tmp_path):
    cfg = config(tmp_path, rubric=[{"dataset": CLINICIAN, "n": 2}])
    grid = {**cfg.grid.model_dump(), "closed_book": False}
    bm25 = tmp_path / "bm25.toml"  # the run's profile with BM25 retrieval, as shipped: its own arm
    bm25.write_text(Path(cfg.profile).read_text() + '\n[retrieval]\nmode = "bm25"\n')
    cfg = config(tmp_path, rubric=[{"dataset": CLINICIAN, "n": 2}], grid=grid, rubric_profiles=[str(bm25)])
    out = tmp_path / "run"
    run_eval(cfg, paths, out=out, progress=False, generator=RubricModel())
    rubric = json.loads((out / "metrics.json").read_text())["rubric"][CLINICIAN]
    other = f"rubric/profile={bm25}"
    assert rubric["reference"] == RAG and set(rubric["arms"]) == {RAG, other}
    assert rubric["paired"][other]["n"] == 2


def test_a_rubric_file_runs_from_the_command_line_without_a_config():
    from evals.engine.quick_config import config_for_datasets

    cfg = config_for_datasets([HB, CLINICIAN], n=2)
    assert [(e.dataset, e.n) for e in cfg.rubric] == [(HB, 2), (CLINICIAN, 2)] and not cfg.mcq
    assert cfg.rubric_judge is not None and cfg.name == "healthbench_sample-clinician-rubric-test2"
    assert cfg.rubric_conditions(HB)[0]["name"] == "closed-book"
