"""Retrieval sets: BioASQ snippets, LiveQA-Med over MedQuAD, PubMedQA PQA-L, and any BEIR folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError, SourceError
from core.paths import Paths
from evals.datasets import load_retrieval
from evals.datasets.beir import load_beir
from evals.datasets.bioasq import load_bioasq_snippets
from evals.datasets.liveqa import load_liveqa, read_questions, relevance_coverage


@pytest.fixture(scope="module")
def paths() -> Paths:
    paths = Paths.from_env()
    if not (paths.source_data / "bioasq_from_mirage").is_dir():
        pytest.fail(f"benchmark data not found under {paths.source_data}; set MEDCITE_SOURCE_DATA")
    return paths


def test_real_bioasq_snippets(paths: Paths) -> None:
    rset = load_retrieval("bioasq-snippets", paths)
    assert len(rset.queries) == len(rset.qrels) == 2310
    assert rset.counts["relevant"] == 21180 and rset.counts["duplicate_pairs_merged"] == 0
    assert rset.qrels["61f80d5d882a024a1000003c"] == {"bioasq:S000000": 1, "bioasq:S000001": 1}
    assert rset.queries["61f80d5d882a024a1000003c"].startswith("Do only changes in coding regions of MEF2C")
    yesno = load_bioasq_snippets(paths.source_data / "bioasq_from_mirage", ["yesno"])
    assert len(yesno.queries) == 618 == yesno.counts["type_yesno"]
    with pytest.raises(ConfigError, match="unknown BioASQ question type"):
        load_bioasq_snippets(paths.source_data / "bioasq_from_mirage", ["boolean"])


def test_real_liveqa_maps_a_quarter_of_the_judgements(paths: Paths) -> None:
    rset = load_retrieval("liveqa-medquad", paths)
    counts = rset.counts
    assert (counts["judgements_in_file"], counts["judgements_unmapped"]) == (2479, 1914)  # 565 map
    assert counts["judged_pairs"] == 565 - 52 and counts["duplicate_pairs_merged"] == 52
    assert (counts["queries_in_file"], counts["queries_judged"], counts["queries"]) == (104, 86, 60)
    assert counts["queries_without_relevant"] == 26 and counts["relevant"] == 223
    assert all(d.startswith("medquad:") for docs in rset.qrels.values() for d in docs)
    assert set(rset.queries) == set(rset.qrels) and all(q.startswith("TQ") for q in rset.queries)
    assert {g for docs in rset.qrels.values() for g in docs.values()} == {0, 1, 2, 3}
    # TQ1 judged GARD_0004450_Sec3 twice: 2-Related and 3-Incomplete -> max, shifted: 3 - 1
    assert rset.qrels["TQ1"]["medquad:GARD_0004450_Sec3"] == 2
    # why 44 of the 104 cannot be scored: relevant answers only in withheld collections, or none
    coverage = relevance_coverage(paths.source_data / "medquad")
    assert coverage == {
        "judged_questions": 103,
        "relevant_in_medquad": 60,
        "relevant_only_withheld": 36,
        "no_relevant_answer": 7,
    }
    assert coverage["relevant_in_medquad"] == counts["queries"]
    questions = paths.source_data / "medquad" / "liveqa_trec2017_test"
    summary = read_questions(questions / "TREC-2017-LiveQA-Medical-Test-Questions-w-summaries.xml", "summary")
    assert summary["TQ6"] == "Could anesthesia cause brain damage in FXTAS patients?"
    assert (
        load_liveqa(paths.source_data / "medquad", "paraphrase")
        .queries["TQ1"]
        .startswith("What is the relat")
    )


def test_real_pqal_beir_like(paths: Paths) -> None:
    rset = load_retrieval("pubmedqa-pqal", paths)
    assert len(rset.queries) == 1000 and rset.qrels["21645374"] == {"21645374": 1}
    assert rset.corpus == paths.source_data / "pubmedqa" / "pqal_corpus.jsonl"


def write_beir(root: Path) -> None:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "x"}) + "\n")
    queries = [
        {"_id": "q1", "text": "first  query"},
        {"_id": "q2", "text": "second"},
        {"_id": "q3", "text": "third"},
    ]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n\n")
    rows = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\td2\t0", "q1\td1\t2", "q2\td3\t0", "q9\td1\t1"]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")


def test_beir_folder(tmp_path: Path) -> None:
    write_beir(tmp_path / "mine")
    rset = load_beir(tmp_path / "mine")
    assert rset.name == "mine" and rset.corpus == tmp_path / "mine" / "corpus.jsonl"
    assert rset.queries == {"q1": "first query"}
    assert rset.qrels == {"q1": {"d1": 2, "d2": 0}}  # max of the duplicate judgements
    counts = rset.counts
    assert (counts["queries_without_relevant"], counts["qrels_queries_without_text"]) == (1, 1)
    assert counts["duplicate_pairs_merged"] == 1 and counts["queries_in_file"] == 3
    via_registry = load_retrieval(f"beir:{tmp_path / 'mine'}", Paths(source_data=tmp_path))
    assert via_registry.qrels == rset.qrels
    assert load_retrieval("beir:mine", Paths(source_data=tmp_path)).qrels == rset.qrels
    with pytest.raises(SourceError, match="available: test"):
        load_beir(tmp_path / "mine", split="dev")


def test_malformed_beir_files_say_where(tmp_path: Path) -> None:
    write_beir(tmp_path)
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\tyes\n")
    with pytest.raises(SourceError, match=r"test.tsv:2"):
        load_beir(tmp_path)
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td1\t0\n")
    with pytest.raises(SourceError, match="no query has both text and a relevant judgement"):
        load_beir(tmp_path)
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1"}\n')
    with pytest.raises(SourceError, match=r"queries.jsonl:1"):
        load_beir(tmp_path)
    with pytest.raises(SourceError, match="BEIR folder not found"):
        load_beir(tmp_path / "nowhere")
