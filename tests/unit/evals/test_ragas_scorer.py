"""The standalone ragas scorer (evals/ragas_env/score.py) without ragas: resuming, input checks,
which ragas metric each sample gets, NaN-with-reason on failures, and token counts from usage.

The scorer runs in .venv-ragas and imports nothing from medcite; its module level is stdlib only,
so it is loaded here by path. ragas itself is replaced by fake metrics (ragas is not the subject).
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import math
import os
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import httpx
import pytest

SCORER = Path(__file__).resolve().parents[3] / "evals" / "ragas_env" / "score.py"


@pytest.fixture(scope="module")
def score() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ragas_scorer", SCORER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scorer_imports_nothing_from_medcite() -> None:
    tree = ast.parse(SCORER.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "ragas" in imported
    assert not imported & {"core", "rag", "evals", "indexes", "medcite", "corpora", "api", "training"}


def test_finished_ids_cut_a_torn_last_line(score: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert score.finished_ids(out) == set()
    out.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "sc')
    assert score.finished_ids(out) == {"a", "b"}
    assert out.read_text() == '{"id": "a"}\n{"id": "b"}\n'  # the next append starts on a fresh line


def test_read_samples_names_missing_fields(score: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"id": 1, "question": "q", "answer": "a"}) + "\n")
    with pytest.raises(score.SetupError, match=r"samples.jsonl:1: .*'contexts'"):
        score.read_samples(path)


class FakeMetric:
    """Stands in for a ragas metric: returns, raises or hangs, and records its arguments."""

    def __init__(self, outcome: Any) -> None:
        self.outcome, self.calls = outcome, list[dict[str, Any]]()

    async def ascore(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if self.outcome == "hang":
            await asyncio.sleep(10)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return SimpleNamespace(value=self.outcome)


def metrics(**outcomes: Any) -> dict[str, FakeMetric]:
    names = ("faithfulness", "answer_relevancy", "context_precision", "context_utilization", "context_recall")
    return {n: FakeMetric(outcomes.get(n, 0.5)) for n in names}


SAMPLE = {"id": "s1", "question": "q?", "answer": "a.", "contexts": ["c1", "c2"], "reference": "r."}


def test_each_metric_gets_ragas_arguments_and_no_reference_falls_back(score: ModuleType) -> None:
    m = metrics()
    run = score.score_sample({**SAMPLE, "reference": None}, list(score.METRICS), m, score.Usage(), [], 5)
    row = asyncio.run(run)
    assert m["faithfulness"].calls == [
        {"user_input": "q?", "response": "a.", "retrieved_contexts": ["c1", "c2"]}
    ]
    assert m["answer_relevancy"].calls == [{"user_input": "q?", "response": "a."}]
    assert m["context_precision"].calls == []  # no reference: ragas' "without reference" variant
    assert m["context_utilization"].calls[0]["response"] == "a."
    assert row["scores"]["context_recall"] is None and row["reasons"]["context_recall"] == "no reference"
    assert row["scores"]["faithfulness"] == 0.5


def test_failures_are_nan_with_a_reason_and_the_sample_goes_on(score: ModuleType) -> None:
    m = metrics(
        faithfulness=ValueError("bad JSON\n from judge"),
        answer_relevancy="hang",
        context_precision=math.nan,
        context_recall=1.0,
    )
    row = asyncio.run(score.score_sample(SAMPLE, list(score.METRICS), m, score.Usage(), [], 0.2))
    assert row["scores"] == {
        "faithfulness": None,
        "answer_relevancy": None,
        "context_precision": None,
        "context_recall": 1.0,
    }
    assert row["reasons"]["faithfulness"] == "ValueError: bad JSON from judge"
    assert row["reasons"]["answer_relevancy"].startswith("timeout after 0 s")
    assert row["reasons"]["context_precision"].startswith("ragas returned NaN")
    assert "context_recall" not in row["reasons"]
    json.dumps(row, allow_nan=False)  # a line of strict JSON


def test_no_contexts_skips_the_judge(score: ModuleType) -> None:
    m = metrics()
    row = asyncio.run(
        score.score_sample({**SAMPLE, "contexts": []}, ["faithfulness"], m, score.Usage(), [], 5)
    )
    assert row["reasons"] == {"faithfulness": "no contexts"} and m["faithfulness"].calls == []


def test_usage_sums_the_servers_token_counts(score: ModuleType) -> None:
    usage = score.Usage()
    counts = usage.reset()
    request = httpx.Request("POST", "http://127.0.0.1:8765/v1/chat/completions")
    for p, c in ((100, 7), (50, 3)):
        body = {"usage": {"prompt_tokens": p, "completion_tokens": c}}
        asyncio.run(usage.on_response(httpx.Response(200, json=body, request=request)))
    other = httpx.Response(200, json={"data": []}, request=httpx.Request("GET", "http://x/v1/models"))
    asyncio.run(usage.on_response(other))
    assert counts == {"prompt": 150, "completion": 10, "calls": 2}


def test_ragas_requirements_are_exact_pins_without_the_broken_langchain_community() -> None:
    lines = (SCORER.parent / "requirements.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in lines if line.strip() and not line.startswith("#"))
    assert pins["ragas"] == "0.4.3" and pins["torch"] == "2.13.0"
    assert all(v.replace(".", "").isdigit() for v in pins.values())  # exact versions, no ranges
    major, minor, patch = (int(p) for p in pins["langchain-community"].split("."))
    assert (major, minor, patch) < (0, 4, 2)  # 0.4.2 breaks `import ragas` (chat_models.vertexai)


def test_limit_counts_the_samples_already_scored(
    score: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("RAGAS_DO_NOT_TRACK", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM"):
        monkeypatch.setenv(name, "false")  # restored after the test; main() overrides them
    samples, out = tmp_path / "samples.jsonl", tmp_path / "scores.jsonl"
    samples.write_text("".join(json.dumps({**SAMPLE, "id": i}) + "\n" for i in "abc"))
    out.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "other"}\n')  # "other" is not among these samples
    # two of these samples are scored: --limit 2 has nothing left to do and needs no judge server
    assert score.main([str(samples), str(out), "--limit", "2", "--base-url", "http://127.0.0.1:9/v1"]) == 0
    err = capsys.readouterr().err
    assert "3 samples, 2 of them already in" in err and "scoring 0" in err
    assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"  # ragas' telemetry off even if a user set it on
    assert os.environ["HF_HUB_OFFLINE"] == "1"
