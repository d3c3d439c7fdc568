"""Leakage check: shingles and containment, the one-pass index scan, the report split, the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.paths import Paths
from evals import datasets as registry
from evals.datasets.gold_passages import gold_lookup, original_set
from evals.engine.report.summary import write_summary
from evals.leakage.check import (
    WordHasher,
    check_index,
    containment,
    make_probes,
    rates,
    scan_chunks,
    shingles,
    tokens,
    windows,
)
from evals.leakage.run import rag_index
from evals.records import ItemRecord
from evals.types import McqItem
from medcite.cli import main
from tests.helpers import make_doc, word_index

PLANTED = (
    "A 45 year old man presents with crushing chest pain radiating to the left arm and "
    "diaphoresis for two hours after climbing stairs at work"
)
PARAPHRASED = (
    "Two hours after walking up the office stairs a man aged forty five reports severe pain in "
    "his chest spreading into his left arm and heavy sweating"
)
ABSENT = "Which enzyme deficiency causes the accumulation of homogentisic acid in connective tissue"
GOLD = (
    "Mutations in the FBN1 gene encoding fibrillin 1 cause Marfan syndrome an autosomal "
    "dominant disorder of connective tissue with aortic root dilatation and lens dislocation"
)
OPTIONS = {"A": "yes", "B": "no"}


# --- text, shingles, containment ------------------------------------------------------------


def test_tokens_are_lower_case_alphanumeric_words():
    assert tokens("Is X-1 safe? CHA2DS2_VASc, 5 mg/kg") == [
        "is",
        "x",
        "1",
        "safe",
        "cha2ds2",
        "vasc",
        "5",
        "mg",
        "kg",
    ]


def test_shingles_of_long_short_and_too_short_texts():
    words = "a b c d e f g h i j".split()
    assert len(shingles(words)) == 3  # 10 words -> 3 eight-grams
    assert shingles(words[:5]) == {tuple("abcde")}  # 4..7 words: one shingle of the whole
    assert shingles(words[:3]) == set()  # under 4 words: not checked
    assert shingles(words[:4], n=8) == {tuple("abcd")}


def test_containment_exact_values():
    probe = "a b c d e f g h i j"  # shingles abcdefgh, bcdefghi, cdefghij
    assert containment(probe, "z " + probe + " z") == 1.0
    assert containment(probe, "x a b c d e f g h i y") == pytest.approx(2 / 3)
    assert containment(probe, "x a b c d e f g h y") == pytest.approx(1 / 3)
    assert containment(probe, "j i h g f e d c b a") == 0.0
    assert containment("A, b; C d e f g h i!", "a b c d e f g h") == 0.5  # case and punctuation ignored


def test_short_probes_match_only_as_a_whole():
    assert containment("left atrial appendage", "the left atrial appendage occluder") == 0.0  # 3 words
    assert containment("left atrial appendage occlusion", "left atrial appendage occlusion device") == 1.0
    assert containment("left atrial appendage occlusion", "left atrial appendage, then occlusion") == 0.0


def test_windows_cut_long_texts_into_near_equal_pieces():
    assert [len(w) for w in windows(list(range(95)))] == [95]
    assert [len(w) for w in windows(list(range(100)))] == [50, 50]
    assert [len(w) for w in windows(list(range(200)))] == [67, 66, 67]
    assert windows([]) == [[]]


def test_the_scan_agrees_with_the_reference_containment():
    chunks = {
        "c1": "z " + PLANTED + " and more words follow here",
        "c2": PLANTED[: len(PLANTED) // 2] + " unrelated ending of the sentence entirely different",
        "c3": PARAPHRASED,
    }
    hasher = WordHasher()
    probes = make_probes(0, "question", PLANTED, hasher) + make_probes(1, "question", PARAPHRASED, hasher)
    found = scan_chunks(chunks.items(), probes, threshold=0.3, hasher=hasher)
    assert found.best[0] == pytest.approx(containment(PLANTED, chunks["c1"])) == 1.0
    assert found.best_chunk[0] == "c1"
    assert dict(found.matches[0]) == {"c1": 1.0, "c2": round(containment(PLANTED, chunks["c2"]), 4)}
    assert found.best[1] == 1.0 and found.best_chunk[1] == "c3"


def test_threshold_edge_is_inclusive():
    probe = "a b c d e f g h i"  # two shingles
    item = McqItem("set", "q", probe, OPTIONS, "A")
    no_gold = gold_lookup(Path("/nonexistent"), ["set"])
    half = [("c", "x a b c d e f g h y")]  # one of the two: containment 0.5
    from evals.leakage.check import scan_items

    row = scan_items([item], no_gold, half, threshold=0.5)[0]
    assert row["question_containment"] == 0.5 and row["leaked"] and row["question_chunks"] == [["c", 0.5]]
    row = scan_items([item], no_gold, half, threshold=0.51)[0]
    assert not row["leaked"] and row["question_chunks"] == [] and row["question_best_chunk"] == "c"


# --- a tiny index with one planted item, one paraphrased, one absent -------------------------

ITEMS = [
    McqItem("tiny", "planted", PLANTED, OPTIONS, "A"),
    McqItem("tiny", "paraphrased", PARAPHRASED, OPTIONS, "B"),
    McqItem("tiny", "absent", ABSENT, OPTIONS, "A"),
    McqItem("tiny", "gold", "Which gene is mutated in this disorder?", OPTIONS, "A", contexts=(GOLD,)),
]


@pytest.fixture(scope="module")
def tiny_paths(tmp_path_factory) -> Paths:
    root = tmp_path_factory.mktemp("leak")
    docs = [
        make_doc("t:chest", {"Case": "Case report. " + PLANTED + ". ECG showed ST elevation."}),
        make_doc("t:other", {"Text": "Alkaptonuria is rare. " + " ".join(PARAPHRASED.split()[:10])}),
        make_doc("t:marfan", {"Genetics": "Background. " + GOLD + ". Treatment follows."}),
    ]
    word_index(root, docs, "tiny")
    return Paths.from_env().model_copy(update={"data_dir": root})


@pytest.fixture()
def tiny_dataset(monkeypatch):
    monkeypatch.setitem(registry.MCQ_LOADERS, "tiny", lambda paths: list(ITEMS))


def test_scan_of_a_built_index(tiny_paths):
    gold = gold_lookup(tiny_paths.source_data, ["tiny"])
    report = check_index(ITEMS, gold, tiny_paths.indexes_dir / "tiny", name="tiny")
    rows = {r["qid"]: r for r in report.rows}
    assert rows["planted"]["leaked_question"] and rows["planted"]["question_containment"] == 1.0
    assert rows["planted"]["question_chunks"][0][0].startswith("t:chest#")
    assert not rows["paraphrased"]["leaked"] and rows["paraphrased"]["question_containment"] < 0.5
    assert rows["absent"]["question_containment"] == 0.0 and rows["absent"]["question_best_chunk"] is None
    assert rows["gold"]["leaked_gold"] and not rows["gold"]["leaked_question"]
    assert rows["gold"]["gold_chunks"][0][0].startswith("t:marfan#")
    assert rows["planted"]["gold_containment"] is None  # no gold passage to check
    assert report.chunks == 3 and report.corpus_fingerprint
    r = report.rates()["tiny"]
    assert (r["question"]["count"], r["gold"]["count"], r["either"]["count"], r["n"]) == (1, 1, 2, 4)
    assert r["either"]["ci"][0] < 0.5 < r["either"]["ci"][1]
    assert rates(report.rows, 0.01)["tiny"]["question"]["count"] == 2  # the paraphrase shares a few 8-grams


def test_gold_lookup_maps_perturbed_copies_to_their_base_set():
    assert original_set("medqa~drug-names") == "medqa" and original_set("medqa") == "medqa"
    assert rag_index("rag/large/bm25/none/k=5") == "large"
    assert rag_index("closed-book") is None and rag_index("retrieval/x/bm25") is None


def test_gold_passages_of_mirage_pubmedqa_and_bioasq(source_data):
    lookup = gold_lookup(source_data, ["pubmedqa~drug-names", "bioasq"])
    pubmed = McqItem(
        "pubmedqa~drug-names", "12377809", "Is anorectal endosonography valuable in dyschesia?", OPTIONS, "A"
    )
    assert any("endosonography" in p.lower() for p in lookup(pubmed))
    bioasq = McqItem(
        "bioasq",
        "no-such-id",
        "Do only changes in coding regions of MEF2C cause developmental disorders?",
        OPTIONS,
        "B",
    )
    assert any("MEF2C" in p for p in lookup(bioasq))  # found by normalised question text
    assert lookup(McqItem("medqa", "0000", "x", OPTIONS, "A")) == ()


# --- the report split ------------------------------------------------------------------------


def _records(condition_index: str) -> list[ItemRecord]:
    rag = f"rag/{condition_index}/bm25/none/k=1"
    right = {"planted": ("B", "A"), "paraphrased": ("B", "B"), "absent": ("A", "B"), "gold": ("A", "A")}
    out = []
    for qid, (closed, with_rag) in right.items():
        gold = next(it.answer for it in ITEMS if it.qid == qid)
        out.append(ItemRecord("tiny", qid, "closed-book", gold=gold, pred=closed))
        out.append(ItemRecord("tiny", qid, rag, gold=gold, pred=with_rag))
    out.append(ItemRecord("tiny~drug-names", "planted", "closed-book", gold="A", pred="B"))
    out.append(ItemRecord("tiny~drug-names", "planted", rag, gold="A", pred="A"))
    return out


def test_report_splits_paired_rows_into_leaked_and_clean(tiny_paths, tiny_dataset, tmp_path):
    metrics = write_summary(tmp_path, _records("tiny"), {}, {}, tiny_paths)
    rows = metrics["paired_vs_closed_book"]["rag/tiny/bm25/none/k=1"]
    split = rows["tiny"]["leakage"]
    assert split["status"] == "ok" and split["index"] == "tiny" and split["unknown"] == 0
    assert split["leaked"]["n"] == 2 and split["clean"]["n"] == 2  # planted + gold leaked
    assert split["leaked"]["help_rate"] == 0.5 and split["leaked"]["accuracy_a"] == 0.5
    assert split["clean"]["accuracy_a"] == 1.0 and split["clean"]["harm_rate"] == 0.5  # absent: A -> B
    copy = rows["tiny~drug-names"]["leakage"]  # the perturbed copy takes its base item's flag
    assert copy["leaked"]["n"] == 1 and copy["clean"]["n"] == 0
    assert "all" not in rows  # one original set; a copy set gets its own row and is never pooled
    cache = json.loads((tmp_path / "leakage-tiny.json").read_text())
    assert cache["corpus_fingerprint"] and {r["qid"] for r in cache["items"]} == {it.qid for it in ITEMS}
    report = (tmp_path / "report.md").read_text()
    assert "### Leaked vs clean items" in report and "| 2/4 |" in report


def test_report_says_when_the_index_is_missing(tiny_paths, tiny_dataset, tmp_path):
    metrics = write_summary(tmp_path, _records("gone"), {}, {}, tiny_paths)
    row = metrics["paired_vs_closed_book"]["rag/gone/bm25/none/k=1"]["tiny"]
    assert row["leakage"] == {"index": "gone", "status": "index not found"}
    assert "leakage: index not found" in (tmp_path / "report.md").read_text()


def test_a_rebuilt_index_is_scanned_again(tiny_paths, tiny_dataset, tmp_path):
    write_summary(tmp_path, _records("tiny"), {}, {}, tiny_paths)
    cache = tmp_path / "leakage-tiny.json"
    stale = json.loads(cache.read_text())
    stale["corpus_fingerprint"] = "old"
    stale["items"] = [dict(r, leaked=False) for r in stale["items"]]
    cache.write_text(json.dumps(stale))
    metrics = write_summary(tmp_path, _records("tiny"), {}, {}, tiny_paths)
    assert metrics["paired_vs_closed_book"]["rag/tiny/bm25/none/k=1"]["tiny"]["leakage"]["leaked"]["n"] == 2
    assert json.loads(cache.read_text())["corpus_fingerprint"] != "old"


# --- the command -----------------------------------------------------------------------------


def test_cli_prints_rates_and_writes_items(tiny_paths, tiny_dataset, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tiny_paths.data_dir))
    out = tmp_path / "leak.json"
    assert (
        main(
            [
                "eval",
                "leakage",
                "--index",
                "tiny",
                "--dataset",
                "tiny",
                "--quiet",
                "--out",
                str(out),
                "--leaked-only",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "tiny: n=4" in text and "leaked (either): 2/4 = 50.00%" in text and "t:chest#" in text
    data = json.loads(out.read_text())
    assert sorted(r["qid"] for r in data["items"]) == ["gold", "planted"]
    assert data["rates_by_threshold"]["0.8"]["tiny"]["either"]["count"] == 2


def test_cli_errors_name_the_fix(tiny_paths, monkeypatch, capsys):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tiny_paths.data_dir))
    assert main(["eval", "leakage", "--index", "nope", "--dataset", "medqa"]) == 2
    assert "medcite index build --name nope" in capsys.readouterr().err
    assert main(["eval", "leakage", "--index", "tiny", "--dataset", "no-such-set"]) == 2
    assert "unknown multiple-choice dataset 'no-such-set'" in capsys.readouterr().err
    assert main(["eval", "leakage", "--index", "tiny", "--dataset", "medqa", "--threshold", "0"]) == 2


def test_short_gold_fragments_are_not_probes():
    item = McqItem(
        "set",
        "q",
        "Which study design was used here?",
        OPTIONS,
        "A",
        contexts=("Multicenter prospective cohort study.",),
    )
    from evals.leakage.check import scan_items

    chunks = [("c", "A multicenter prospective cohort study. Unrelated text about something else.")]
    row = scan_items([item], gold_lookup(Path("/nonexistent"), ["set"]), chunks)[0]
    assert row["gold_passages"] == 1 and row["gold_containment"] is None and not row["leaked"]


def test_pubmedqa_sections_are_one_passage():
    item = McqItem(
        "pubmedqa-pqal",
        "1",
        "Does it work?",
        OPTIONS,
        "A",
        contexts=("Aim one.", "Results two."),
        meta={"long_answer": "It works."},
    )
    assert gold_lookup(Path("/nonexistent"), ["pubmedqa-pqal"])(item) == ("Aim one. Results two. It works.",)
