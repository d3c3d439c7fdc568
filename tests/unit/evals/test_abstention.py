"""The answerable/unanswerable set and its metrics, on small hand-made inputs."""

from __future__ import annotations

import pytest

from core.types import Answer, SentenceSupport
from evals.datasets.abstention import split_questions
from evals.engine.answers_run import abstention_metrics, cited_sentence_counts
from evals.records import ItemRecord


def _row(qid: str, source: str, qtype: str, focus: str, question: str) -> dict[str, str]:
    return {
        "qid": qid,
        "source": source,
        "qtype": qtype,
        "focus": focus,
        "question": question,
        "answer": "ref",
    }


ROWS = [
    _row("1-1", "GARD", "symptoms", "Marfan syndrome", "What are the symptoms of Marfan syndrome ?"),
    _row("1-2", "GHR", "symptoms", "Marfan syndrome", "What are the signs of Marfan syndrome ?"),  # again
    _row("2-1", "GARD", "symptoms", "Unindexed disease", "What are the symptoms of Unindexed disease ?"),
    _row("3-1", "MPlusDrugs", "usage", "Abacavir", "How should Abacavir be used and what is the dosage ?"),
    _row("3-2", "MPlusDrugs", "side effects", "Abacavir", "What are the side effects of Abacavir ?"),
    _row("4-1", "MPlusDrugs", "usage", "Aspirin", "How should Aspirin be used and what is the dosage ?"),
    _row("5-1", "MPlusDrugs", "usage", "Aspirin Chewable", "How should Aspirin Chewable be used ?"),
]


def test_answerable_need_an_indexed_disease_and_unanswerable_an_unnamed_drug() -> None:
    titles = {"marfan syndrome"}
    words = {"marfan", "syndrome", "aspirin", "reduces", "stroke"}
    yes, no = split_questions(ROWS, titles, words, per_half=10, seed=0)
    assert [i.qid for i in yes] == ["GARD:1-1"]  # one question per disease; the unindexed one is out
    assert [i.qid for i in no] == ["MPlusDrugs:3-1"]  # the index names aspirin: no aspirin question
    assert yes[0].answerable is True and no[0].answerable is False and no[0].reference is None
    assert split_questions(ROWS, titles, words, per_half=1, seed=0, part="dev") == ([], [])  # all in test


def test_dev_and_test_parts_share_no_disease_or_drug() -> None:
    rows = [_row(f"{n}-1", "GARD", "symptoms", f"Disease {n}", f"Disease {n} ?") for n in range(20)]
    rows += [_row(f"{n}-2", "MPlusDrugs", "usage", f"Drugname{n}", f"Drugname{n} ?") for n in range(20)]
    titles = {f"disease {n}" for n in range(20)}
    test = split_questions(rows, titles, set(), per_half=8, seed=3, part="test")
    dev = split_questions(rows, titles, set(), per_half=8, seed=3, part="dev")
    for a, b in zip(test, dev, strict=True):
        assert len(a) == len(b) == 8 and not {i.qid for i in a} & {i.qid for i in b}


def _record(qid: str, answerable: bool, mode: str, counts: tuple[int, int, int, int]) -> ItemRecord:
    cited = dict(zip(("generated", "generated_supported", "shown", "shown_supported"), counts, strict=True))
    return ItemRecord(
        dataset="a",
        qid=qid,
        condition="answers/x",
        extra={"answerable": answerable, "mode": mode, "cited_sentences": cited},
    )


def test_abstention_metrics_count_modes_per_half_and_pool_citations() -> None:
    records = [
        _record("1", True, "rag", (2, 1, 1, 1)),
        _record("2", True, "abstained", (0, 0, 0, 0)),
        _record("3", False, "abstained", (1, 0, 0, 0)),
        _record("4", False, "rag", (1, 0, 1, 0)),
    ]
    m = abstention_metrics(records)
    assert (m["answered_when_answerable"]["count"], m["answered_when_answerable"]["n"]) == (1, 2)
    assert m["abstained_when_unanswerable"]["rate"] == 0.5 and m["answered_when_unanswerable"]["rate"] == 0.5
    low, high = m["abstained_when_unanswerable"]["ci"]
    assert low < 0.5 < high
    assert m["citation_precision_shown"] == pytest.approx(1 / 2)
    assert m["citation_precision_generated"] == pytest.approx(1 / 4)


def test_cited_sentence_counts_separate_what_was_written_from_what_was_shown() -> None:
    sentences = (
        SentenceSupport("A [1].", (1,), 0.9, True),
        SentenceSupport("B [2].", (2,), 0.2, False, status="removed"),
        SentenceSupport("C [1].", (1,), 0.8, True, status="removed", on_topic=False),
        SentenceSupport("No marker.", (), 0.0, False, status="removed"),
    )
    answer = Answer(question="q", text="A [1].", mode="rag", sentences=sentences)
    assert cited_sentence_counts(answer) == {
        "generated": 3,
        "generated_supported": 1,
        "shown": 1,
        "shown_supported": 1,
    }
