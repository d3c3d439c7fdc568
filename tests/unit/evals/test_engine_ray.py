"""``eval run --engine ray`` against the local engine, on real MIRAGE items and a real BM25 index with
a scripted model: the same records, resume after a crash, no model call on a rerun, and a server
pool that keeps to its bound per server. One local Ray instance serves the whole file."""

from __future__ import annotations

import os

import pytest

from core.errors import ConfigError
from core.paths import Paths
from evals.engine.config import EvalConfig
from evals.engine.engine_ray import RayEngine
from evals.engine.runner import run_eval
from evals.records import read_records
from rag.profile import PROFILES_DIR
from tests.helpers import guideline_bm25, mcq_run_config
from tests.ray_eval_support import LoggedModel, calls, fake_servers
from tests.ray_support import local_ray


@pytest.fixture(scope="module")
def ray_session():
    with local_ray(num_cpus=2) as ray:
        yield ray


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return guideline_bm25(tmp_path_factory.mktemp("ray-eval-index"), 4).indexes_dir


def fresh_paths(index_dir, folder) -> Paths:
    """A data dir of its own (its own, empty generation cache) that shares the built index."""
    folder.mkdir()
    os.symlink(index_dir, folder / "indexes")
    return Paths.from_env().model_copy(update={"data_dir": folder})


def config(name: str, **changes) -> EvalConfig:
    return mcq_run_config(name, seed=5, **changes)


def comparable(folder) -> dict:
    """Each record by key, without what depends on timing."""
    out = {}
    for r in read_records(folder / "records.jsonl"):
        row = r.to_json()
        row.pop("latency_s")
        extra = dict(row.pop("extra"))
        extra.pop("timings", None)
        extra.pop("judge_seconds", None)
        out[(r.condition, r.dataset, r.qid)] = {**row, "extra": extra}
    return out


def test_a_ray_run_writes_the_records_of_a_local_run(ray_session, index_dir, tmp_path, monkeypatch):
    from evals.datasets import FREE_TEXT_LOADERS
    from evals.datasets.freetext import FreeTextItem

    questions = [
        FreeTextItem("af", "q1", "How is anticoagulation in atrial fibrillation decided?", "CHA2DS2-VASc."),
        FreeTextItem("af", "q2", "Zxqv wobble?", None),
    ]
    monkeypatch.setitem(FREE_TEXT_LOADERS, "af", lambda paths: questions)
    profile = tmp_path / "fast-flag.toml"  # "flag": BM25-only answers are kept (labelled) and judged
    fast = (PROFILES_DIR / "fast.toml").read_text()
    profile.write_text(fast.replace("[verify]\n", '[verify]\npolicy = "flag"\n'))
    cfg = config("same", profile=str(profile), answers=[{"dataset": "af", "n": 2}])

    def run(name: str, data: str, **engine: RayEngine):
        paths = fresh_paths(index_dir, tmp_path / data)
        model = LoggedModel(tmp_path / f"{name}.log")
        return run_eval(cfg, paths, out=tmp_path / name, progress=False, generator=model, **engine)

    local = run("local", "a")
    ray = run("ray", "b", engine=RayEngine(workers=2))

    expected, got = comparable(tmp_path / "local"), comparable(tmp_path / "ray")
    assert len(expected) == 3 * 8 + 2 * 2  # 3 MCQ conditions x 8 items, 2 free-text conditions x 2
    assert got == expected
    assert len({r["pred"] for r in expected.values()} - {None}) > 1  # the model does not always say B
    assert any(r["extra"]["quality"] for r in expected.values() if r["answer"])  # answers were judged
    assert len({line.split()[0] for line in calls(tmp_path / "ray.log")}) == 1  # one local node
    assert "driver" not in {line.split()[0] for line in calls(tmp_path / "ray.log")}  # all on workers
    assert {n: (c.answered, c.failed) for n, c in ray.conditions.items()} == {
        n: (c.answered, c.failed) for n, c in local.conditions.items()
    }


def test_a_crashed_ray_run_resumes_with_the_rest_and_reruns_from_the_cache(ray_session, index_dir, tmp_path):
    cfg = config("resume")
    paths = fresh_paths(index_dir, tmp_path / "data")
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="crashed"):
        run_eval(
            cfg,
            paths,
            out=out,
            progress=False,
            engine=RayEngine(workers=2),
            generator=LoggedModel(tmp_path / "first.log", fail_after=4),
        )
    kept = list(read_records(out / "records.jsonl"))
    assert 0 < len(kept) < 24 and all(r.error is None for r in kept)

    summary = run_eval(
        cfg,
        paths,
        out=out,
        progress=False,
        engine=RayEngine(workers=2),
        generator=LoggedModel(tmp_path / "second.log"),
    )
    records = list(read_records(out / "records.jsonl"))
    assert len(records) == 24 == len({(r.condition, r.dataset, r.qid) for r in records})
    assert len(calls(tmp_path / "second.log")) == 24 - len(kept)  # only the unfinished items
    assert sum(c.skipped for c in summary.conditions.values()) == len(kept)
    assert sum(c.cache_misses for c in summary.conditions.values()) == 24 - len(kept)

    rerun = run_eval(
        cfg,
        paths,
        out=out,
        restart=True,
        progress=False,
        engine=RayEngine(workers=2),
        generator=LoggedModel(tmp_path / "third.log"),
    )
    assert calls(tmp_path / "third.log") == []  # every answer came from the driver's cache
    assert sum(c.cache_hits for c in rerun.conditions.values()) == 24
    assert sum(c.cache_misses for c in rerun.conditions.values()) == 0
    assert comparable(out).keys() == {(r.condition, r.dataset, r.qid) for r in records}


def test_a_server_pool_keeps_its_bound_per_server(ray_session, index_dir, tmp_path):
    grid = {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [1], "closed_book": True}
    with fake_servers(2, delay_s=0.3) as servers:
        profile = tmp_path / "pool.toml"
        openai = f'backend = "openai"\nbase_url = "{servers[0].url}"\nmodel = "fake"'
        profile.write_text((PROFILES_DIR / "fast.toml").read_text() + f"\n[generator]\n{openai}\n")
        cfg = config("pool", profile=str(profile), grid=grid, mcq=[{"dataset": "medqa", "n": 6}])
        engine = RayEngine(workers=3, servers=tuple(s.url for s in servers), per_server=1)
        summary = run_eval(
            cfg,
            fresh_paths(index_dir, tmp_path / "data"),
            out=tmp_path / "pool",
            progress=False,
            engine=engine,
        )
    assert [s.most_in_flight for s in servers] == [1, 1]  # three workers, yet one item per server
    assert all(s.requests >= 3 for s in servers) and sum(s.requests for s in servers) == 12
    assert sum(c.cache_misses for c in summary.conditions.values()) == 12
    local = run_eval(
        cfg.model_copy(update={"profile": "fast"}),
        fresh_paths(index_dir, tmp_path / "local"),
        out=tmp_path / "local",
        progress=False,
        generator=LoggedModel(tmp_path / "local.log"),
    )
    preds = {k: r["pred"] for k, r in comparable(tmp_path / "pool").items()}
    assert preds == {k: r["pred"] for k, r in comparable(tmp_path / "local").items()}
    assert local.conditions.keys() == summary.conditions.keys()


def test_a_server_pool_needs_an_openai_compatible_profile(index_dir, tmp_path):
    engine = RayEngine(servers=("http://127.0.0.1:9/v1",))
    with pytest.raises(ConfigError, match="OpenAI-compatible backend"):
        run_eval(
            config("nopool"),
            fresh_paths(index_dir, tmp_path / "data"),
            out=tmp_path / "run",
            progress=False,
            engine=engine,
        )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--server", "http://127.0.0.1:9/v1"],
            "--server, --address and --max-restarts go with --engine ray",
        ),
        (["--max-restarts", "2"], "--server, --address and --max-restarts go with --engine ray"),
        (["--engine", "ray", "--workers", "0"], "--workers must be at least 1"),
        (["--engine", "ray", "--max-restarts", "-1"], "--max-restarts must be 0 or more"),
    ],
)
def test_engine_flags_that_cannot_work_are_refused_before_any_work(flags, message, capsys):
    from medcite.cli import main

    assert main(["eval", "run", "evals/configs/rag_vs_closed_book.toml", *flags]) == 2
    assert message in capsys.readouterr().err
