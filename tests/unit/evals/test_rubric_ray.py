"""``[[rubric]]`` sets with ``--engine ray``: the workers write the records a local run writes,
judge verdicts and scores included (a scripted model that replies and judges; local Ray)."""

from __future__ import annotations

import json

import pytest

from evals.engine.engine_ray import RayEngine
from evals.engine.runner import run_eval
from evals.records import read_records
from tests.helpers import guideline_bm25
from tests.ray_support import local_ray
from tests.rubric_support import RubricModel, fresh_paths, rubric_config


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return guideline_bm25(tmp_path_factory.mktemp("rubric-ray-index"), 4).indexes_dir


def comparable(folder) -> dict:
    out = {}
    for r in read_records(folder / "records.jsonl"):
        row = r.to_json()
        row.pop("latency_s")
        row["extra"] = {k: v for k, v in row["extra"].items() if k != "judge_seconds"}
        out[(r.condition, r.dataset, r.qid)] = row
    return out


def test_a_ray_run_grades_as_a_local_run(index_dir, tmp_path):
    cfg = rubric_config(tmp_path)
    local = fresh_paths(index_dir, tmp_path / "a")
    run_eval(cfg, local, out=tmp_path / "local", progress=False, generator=RubricModel())
    log = tmp_path / "ray.log"
    with local_ray(num_cpus=2):
        run_eval(
            cfg,
            fresh_paths(index_dir, tmp_path / "b"),
            out=tmp_path / "ray",
            progress=False,
            generator=RubricModel(log=log),
            engine=RayEngine(workers=2),
        )
    expected, got = comparable(tmp_path / "local"), comparable(tmp_path / "ray")
    assert len(expected) == 12 and got == expected
    assert any(g.get("by") == "judge" for r in got.values() for g in r["extra"]["grades"])
    judged = [json.loads(line) for line in log.read_text().splitlines()]
    assert judged and all("canary" not in text for call in judged for text in call)
