"""MIRAGE's published predictions: import into run directories, reproduce the paper's table."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from core.paths import Paths
from evals.datasets.mirage import load_mirage
from evals.engine.report.compare import compare, compare_runs
from evals.metrics.choice import accuracy
from evals.records import ItemRecord, read_records
from evals.studies.reference.predictions import (
    PUBLISHED,
    SOURCE_FILE,
    import_reference,
    mirage_scored,
    read_reference,
    run_name,
)

GPT4, GPT35 = "OpenAI/gpt-4-32k", "OpenAI/gpt-35-turbo-16k"


@pytest.fixture(scope="module")
def paths() -> Paths:
    paths = Paths.from_env()
    if not (paths.source_data / SOURCE_FILE).is_file():
        pytest.fail(f"{SOURCE_FILE} not found under {paths.source_data}; set MEDCITE_SOURCE_DATA")
    return paths


@pytest.fixture(scope="module")
def runs(paths: Paths) -> dict[tuple[str, str], list[ItemRecord]]:
    options = {item.key: tuple(item.options) for item in load_mirage(paths.source_data / "mirage")}
    return read_reference(paths.source_data / SOURCE_FILE, options)


def pct(records: list[ItemRecord], dataset: str) -> float:
    return 100 * accuracy([r for r in records if r.dataset == dataset]).accuracy


def test_every_prediction_is_read(runs: dict[tuple[str, str], list[ItemRecord]]) -> None:
    assert sorted(runs) == [(GPT35, "cot"), (GPT35, "rag_32"), (GPT4, "cot"), (GPT4, "rag_32")]
    assert [len(r) for r in runs.values()] == [7663] * 4
    no_answer = {key: sum(r.pred is None for r in records) for key, records in runs.items()}
    assert no_answer == {
        (GPT35, "cot"): 369,
        (GPT35, "rag_32"): 656,
        (GPT4, "cot"): 241,
        (GPT4, "rag_32"): 619,
    }
    assert {r.condition for r in runs[(GPT4, "cot")]} == {"closed-book"}
    assert {r.condition for r in runs[(GPT4, "rag_32")]} == {"rag"}


def test_published_pred_that_only_looked_like_a_letter_is_no_answer(
    runs: dict[tuple[str, str], list[ItemRecord]],
) -> None:
    records = [r for run in runs.values() for r in run]
    cannot = [r for r in records if r.extra["published_pred"] == "C" and r.pred is None]
    # "Cannot be determined" (149) and "C/D"-like answers (25) were published as C
    assert Counter(r.error for r in cannot) == {"no option letter": 149, "several options": 25}
    assert all(r.error for r in records if r.pred is None)


def test_strict_scoring_reproduces_the_headline_numbers_within_half_a_point(
    runs: dict[tuple[str, str], list[ItemRecord]],
) -> None:
    for dataset, before, after in (("mmlu", 89.4, 87.2), ("pubmedqa", 39.6, 70.6)):
        assert pct(runs[(GPT4, "cot")], dataset) == pytest.approx(before, abs=0.5)
        assert pct(runs[(GPT4, "rag_32")], dataset) == pytest.approx(after, abs=0.5)


def test_mirage_rule_reproduces_all_twenty_published_numbers(
    runs: dict[tuple[str, str], list[ItemRecord]],
) -> None:
    for key, published in PUBLISHED.items():
        scored = mirage_scored(runs[key])
        for dataset, value in published.items():
            assert pct(scored, dataset) == pytest.approx(value, abs=0.005), (key, dataset)


def test_strict_scoring_differs_where_mirage_credits_a_default(
    runs: dict[tuple[str, str], list[ItemRecord]],
) -> None:
    """MedMCQA is where strict and published part most: 549 GPT-4 MedRAG outputs name no single option."""
    strict = pct(runs[(GPT4, "rag_32")], "medmcqa")
    assert strict == pytest.approx(62.06, abs=0.005)
    assert PUBLISHED[(GPT4, "rag_32")]["medmcqa"] - strict == pytest.approx(4.59, abs=0.01)


def test_paired_comparison_of_gpt4(runs: dict[tuple[str, str], list[ItemRecord]]) -> None:
    rows = {row.dataset: row for row in compare(runs[(GPT4, "cot")], runs[(GPT4, "rag_32")])}
    assert list(rows) == ["mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq", "all"]
    pubmed = rows["pubmedqa"]
    assert (pubmed.n, pubmed.counts.only_a, pubmed.counts.only_b) == (500, 35, 189)
    assert pubmed.diff == pytest.approx((189 - 35) / 500)
    assert pubmed.mcnemar_p < 1e-20
    assert rows["mmlu"].counts.harm_rate == pytest.approx(68 / 1089)
    assert rows["all"].n == 7663 and rows["all"].only_a == rows["all"].only_b == 0


def test_import_writes_run_directories(paths: Paths, tmp_path: Path) -> None:
    stale = tmp_path / "mirage-gpt-4-32k-cot"
    stale.mkdir()
    (stale / "old.txt").write_text("from an earlier import")
    dirs = import_reference(paths, tmp_path)
    assert [d.name for d in dirs] == [
        "mirage-gpt-35-turbo-16k-cot",
        "mirage-gpt-35-turbo-16k-rag_32",
        "mirage-gpt-4-32k-cot",
        "mirage-gpt-4-32k-rag_32",
    ]
    manifest = json.loads((dirs[3] / "manifest.json").read_text())
    source = paths.source_data / SOURCE_FILE
    assert manifest["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert manifest["corpus_retriever"] == "medcorp/RRF-4" and manifest["condition"] == "rag"
    assert (manifest["records"], manifest["no_answer"]) == (7663, 619)
    records = list(read_records(dirs[3] / "records.jsonl"))
    assert len(records) == 7663 and all(r.answer is not None or r.error == "empty output" for r in records)
    text = compare_runs(dirs[2], dirs[3])
    assert "A = OpenAI/gpt-4-32k closed-book" in text and "pubmedqa" in text and "+30.80" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == [d.name for d in dirs]  # no temporary left
    assert not (stale / "old.txt").exists()  # an earlier run of the same name is replaced


def test_run_name() -> None:
    assert run_name("OpenAI/gpt-4-32k", "rag_32") == "mirage-gpt-4-32k-rag_32"


def test_a_prediction_for_an_unknown_item_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl.gz"
    row = {
        "dataset": "medqa",
        "setting": "cot",
        "llm": "x/y",
        "qid": "nope",
        "pred": "A",
        "gold": "A",
        "raw": [],
    }
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps(row) + "\n")
    with pytest.raises(Exception, match="not in MIRAGE"):
        read_reference(path, {("medqa", "0000"): ("A", "B", "C", "D")})
