"""The near-miss unanswerable set: which MedQuAD questions qualify, and parts that never overlap."""

from __future__ import annotations

import pytest

from evals.datasets.near_miss import near_miss_questions


def _row(qid: str, source: str, qtype: str, focus: str) -> dict[str, str]:
    return {"qid": qid, "source": source, "qtype": qtype, "focus": focus, "question": f"{qtype} {focus} ?"}


ROWS = [
    _row("1-5", "GHR", "treatment", "Marfan syndrome"),  # the same disease again (GARD sorts first): out
    _row("1-6", "GARD", "treatment", "Marfan syndrome"),  # HPO title, no guideline names it: in
    _row("2-5", "GHR", "treatment", "Atrial fibrillation"),  # a guideline names it: answerable, out
    _row("3-5", "GHR", "treatment", "Unindexed disease"),  # no passage about it: not a near miss
    _row("4-1", "GHR", "symptoms", "Fabry disease"),  # not a treatment question
    _row("5-6", "MPlusDrugs", "forget a dose", "Apixaban"),  # named by a guideline: in
    _row("5-7", "MPlusDrugs", "storage and disposal", "Apixaban"),  # same drug, other type
    _row("5-2", "MPlusDrugs", "usage", "Apixaban"),  # a guideline may give the dose: never asked
    _row("6-6", "MPlusDrugs", "forget a dose", "Abacavir"),  # never named: the other set's kind
]
HPO = {"marfan syndrome", "atrial fibrillation", "fabry disease"}
GUIDELINES = "atrial fibrillation anticoagulation with apixaban 5 mg twice daily"


def test_only_near_misses_qualify_one_question_per_disease_or_drug() -> None:
    items = near_miss_questions(ROWS, HPO, GUIDELINES, per_part=10, seed=0)
    assert [i.qid for i in items] == ["GARD:1-6", "MPlusDrugs:5-6"]
    assert all(i.answerable is False and i.reference is None for i in items)
    assert {i.dataset for i in items} == {"abstention-near-miss"}


def test_dev_and_test_parts_share_no_disease_drug_or_question() -> None:
    rows = [_row(f"{n}-5", "GHR", "treatment", f"Disease {n}") for n in range(20)]
    rows += [_row(f"{n}-6", "MPlusDrugs", "forget a dose", f"Drugname{n}") for n in range(20)]
    hpo = {f"disease {n}" for n in range(20)}
    text = " ".join(f"drugname{n}" for n in range(20))
    test = near_miss_questions(rows, hpo, text, per_part=16, seed=3, part="test")
    dev = near_miss_questions(rows, hpo, text, per_part=16, seed=3, part="dev")
    assert len(test) == len(dev) == 16
    assert not {i.qid for i in test} & {i.qid for i in dev}
    assert {i.dataset for i in dev} == {"abstention-near-miss-dev"}
    with pytest.raises(ValueError, match="part"):
        near_miss_questions(rows, hpo, text, per_part=4, seed=3, part="train")
