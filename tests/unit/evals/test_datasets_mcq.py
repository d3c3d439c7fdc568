"""Multiple-choice loaders: MIRAGE's five sets and PubMedQA PQA-L with its gold contexts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from core.errors import ConfigError, SourceError
from core.paths import Paths
from evals.datasets import load_mcq
from evals.datasets.mirage import load_mirage
from evals.datasets.pubmedqa import load_pqal


@pytest.fixture(scope="module")
def paths() -> Paths:
    paths = Paths.from_env()
    if not (paths.source_data / "mirage" / "benchmark.json").is_file():
        pytest.fail(f"MIRAGE not found under {paths.source_data}; set MEDCITE_SOURCE_DATA")
    return paths


def test_real_mirage_counts_and_gold(paths: Paths) -> None:
    items = load_mcq("mirage", paths)
    sizes = Counter(i.dataset for i in items)
    assert sizes == {"mmlu": 1089, "medqa": 1273, "medmcqa": 4183, "pubmedqa": 500, "bioasq": 618}
    assert all(i.answer in i.options for i in items)
    options = {d: {tuple(i.options) for i in items if i.dataset == d} for d in sizes}
    assert options["bioasq"] == {("A", "B")} and options["pubmedqa"] == {("A", "B", "C")}
    assert options["medqa"] == {("A", "B", "C", "D")}
    bioasq = next(i for i in items if i.qid == "6402c910201352f04a00000c")
    assert (bioasq.answer, bioasq.options["B"], bioasq.meta["pmids"]) == ("B", "no", ["34687634"])
    assert Counter(i.answer for i in items if i.dataset == "pubmedqa") == {"A": 276, "B": 169, "C": 55}
    assert [i.qid for i in load_mcq("bioasq", paths)] == [i.qid for i in items if i.dataset == "bioasq"]


def test_real_pqal_carries_gold_contexts_and_pairs_with_mirage(paths: Paths) -> None:
    test = load_mcq("pubmedqa-pqal", paths)
    assert len(test) == 500 and all(i.contexts for i in test)
    first = next(i for i in test if i.qid == "12377809")
    assert first.key == ("pubmedqa", "12377809") and first.answer == "A" and first.meta["split"] == "test"
    mirage = {i.key: i.answer for i in load_mcq("pubmedqa", paths)}
    assert {i.key: i.answer for i in test} == mirage  # same questions, same gold, so runs pair
    assert len(load_pqal(paths.source_data / "pubmedqa", "trainval")) == 500
    assert len(load_pqal(paths.source_data / "pubmedqa", "all")) == 1000
    with pytest.raises(ConfigError, match="split"):
        load_pqal(paths.source_data / "pubmedqa", "dev")


def test_mirage_subset_and_bad_files(tmp_path: Path) -> None:
    bench = {"medqa": {"q1": {"question": "Q?", "options": {"B": "b", "A": "a"}, "answer": "B"}}}
    (tmp_path / "benchmark.json").write_text(json.dumps(bench))
    (item,) = load_mirage(tmp_path, ["medqa"])
    assert list(item.options) == ["A", "B"] and item.meta == {}
    with pytest.raises(SourceError, match="has no 'mmlu'"):
        load_mirage(tmp_path, ["mmlu"])
    with pytest.raises(ConfigError, match="unknown MIRAGE dataset 'usmle'"):
        load_mirage(tmp_path, ["usmle"])
    bench["medqa"]["q1"]["answer"] = "E"
    (tmp_path / "benchmark.json").write_text(json.dumps(bench))
    with pytest.raises(SourceError, match="not one of the options"):
        load_mirage(tmp_path, "medqa")
    with pytest.raises(SourceError, match="MEDCITE_SOURCE_DATA"):
        load_mirage(tmp_path / "missing")
