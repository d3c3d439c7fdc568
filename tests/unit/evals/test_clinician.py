"""The clinician benchmark (evals/datasets/clinician.py): frozen, split by source, scored by key fact."""

from __future__ import annotations

import json

import pytest

from core.errors import SourceError
from evals.datasets.clinician import (
    FROZEN_SHA256,
    QUESTIONS_FILE,
    TEST2_FILE,
    TEST2_SHA256,
    TEST3_FILE,
    TEST3_SHA256,
    TRAIN_DIR,
    TRAIN_SHA256,
    ClinicianItem,
    file_sha256,
    key_fact_given,
    load_clinician,
    load_training,
    outcome,
    part_of,
    sibling_given,
    training_sha256,
)


def test_the_question_file_is_the_frozen_one():
    """Tuning happened after this hash was taken: a changed file is a different benchmark."""
    assert file_sha256() == FROZEN_SHA256


def test_dev_and_test_share_no_guideline_or_disease():
    items = load_clinician()
    dev = {i.group for i in items if i.part == "dev"}
    test = {i.group for i in items if i.part == "test"}
    assert dev and test and not dev & test
    assert {i.qid for i in load_clinician(part="dev")} | {i.qid for i in load_clinician(part="test")} == {
        i.qid for i in items
    }
    for item in items:  # every question of one guideline folder falls on one side
        if item.guideline:
            assert item.part == part_of(item.guideline)


def test_the_benchmark_has_the_sizes_issue_31_asks_for():
    items = load_clinician()
    answerable = [i for i in items if i.answerable]
    guidelines = {i.guideline for i in answerable if i.guideline}
    assert len([i for i in answerable if i.guideline]) >= 300 and len(guidelines) == 43
    assert len([i for i in answerable if i.group.startswith("hpo:")]) >= 50
    assert len([i for i in items if i.kind == "near"]) >= 150
    assert len([i for i in items if i.kind == "far"]) >= 50
    for item in answerable:  # every key fact is one its own quoted passage states
        assert item.quote and key_fact_given(item, item.quote), item.qid
        assert item.chunk_id and item.sources


def _item(**kw) -> ClinicianItem:
    base = dict(
        qid="q",
        kind="answerable",
        question="?",
        group="bts_cap_2009",
        guideline="bts_cap_2009",
        chunk_id="open-medicine:bts_cap_2009/antibiotic_therapy#1",
        key_fact=r"amoxicillin[^.]{0,40}500\s*mg",
        sources=("open-medicine:bts_cap_2009",),
    )
    return ClinicianItem(**(base | kw))


def test_an_answer_is_correct_only_with_the_key_fact_and_a_citation_to_its_guideline():
    item = _item()
    cited = ["open-medicine:bts_cap_2009/antibiotic_therapy"]
    assert outcome(item, "rag", "Amoxicillin 500 mg TDS orally [1].", cited) == "correct"
    assert outcome(item, "rag", "Amoxicillin 500\u2009mg three times daily [1].", cited) == "correct"
    assert outcome(item, "rag", "Amoxicillin 250 mg TDS [1].", cited) == "wrong"
    assert (
        outcome(item, "rag", "Amoxicillin 500 mg TDS [1].", ["open-medicine:ats_idsa_cap_2019/x"])
        == "other_source"
    )
    assert outcome(item, "abstained", "The sources do not answer.", []) == "abstained"
    assert outcome(item, "degraded", "Generation failed", []) == "degraded"
    far = _item(kind="near", key_fact=None, sources=())
    assert outcome(far, "rag", "Amoxicillin 500 mg [1].", cited) == "answered"
    assert outcome(far, "abstained", "", []) == "abstained"


def test_a_bad_file_is_refused_with_its_line(tmp_path):
    path = tmp_path / "q.jsonl"
    row = {"id": "a", "kind": "answerable", "question": "?", "guideline": "g"}
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(SourceError, match=r"q.jsonl:1: .*chunk_id and key_fact"):
        load_clinician(path)
    path.write_text(json.dumps({**row, "kind": "maybe"}) + "\n")
    with pytest.raises(SourceError, match="kind 'maybe'"):
        load_clinician(path)
    far = {"id": "f", "kind": "far", "question": "?"}
    path.write_text(json.dumps(far) + "\n" + json.dumps(far) + "\n")
    with pytest.raises(SourceError, match="duplicate id 'f'"):
        load_clinician(path)
    assert QUESTIONS_FILE.name == "clinician_questions.jsonl"


def test_test2_is_the_frozen_file_over_test_folders_only():
    """test-2 (issue 46) was hashed before the condition reader's first candidate; its guideline
    folders are all test-part folders, and no question repeats one of the first file's."""
    assert file_sha256(TEST2_FILE) == TEST2_SHA256
    items = load_clinician(TEST2_FILE)
    assert all(i.part == "test" for i in items if i.kind != "far")
    first = {" ".join(i.question.lower().split()) for i in load_clinician()}
    assert not first & {" ".join(i.question.lower().split()) for i in items}


def test_test2_has_the_sizes_issue_46_asks_for():
    items = load_clinician(TEST2_FILE)
    answerable = [i for i in items if i.kind == "answerable"]
    assert len(answerable) >= 300 and sum(1 for i in items if i.kind == "near") >= 100
    assert sum(1 for i in items if i.kind == "far") >= 30
    assert sum(1 for i in answerable if i.condition) * 2 >= len(answerable)


def test_test2_key_facts_match_the_answer_and_no_sibling():
    """Each answerable key fact matches its answering line and none of its sibling lines, and the
    sibling fact matches every sibling and not the answer, so scoring can tell them apart."""
    for item in load_clinician(TEST2_FILE):
        if item.kind != "answerable":
            continue
        assert item.quote and key_fact_given(item, item.quote), item.qid
        assert not any(key_fact_given(item, s) for s in item.siblings), item.qid
        assert all(sibling_given(item, s) for s in item.siblings), item.qid
        assert not sibling_given(item, item.quote), item.qid


def test_test3_is_the_frozen_file_over_test_folders_only_and_repeats_no_earlier_question():
    """test-3 (issue 55) was hashed before the line reader's first training commit; its guideline
    folders are all test-part folders, and no question repeats one of the earlier files'."""
    assert file_sha256(TEST3_FILE) == TEST3_SHA256
    items = load_clinician(TEST3_FILE)
    assert all(i.part == "test" for i in items if i.kind != "far")
    earlier = load_clinician() + load_clinician(TEST2_FILE)
    asked = {" ".join(i.question.lower().split()) for i in earlier}
    assert not asked & {" ".join(i.question.lower().split()) for i in items}


def test_test3_has_the_sizes_issue_55_asks_for():
    items = load_clinician(TEST3_FILE)
    answerable = [i for i in items if i.kind == "answerable"]
    assert len(answerable) >= 450 and sum(1 for i in answerable if i.condition) >= 250
    assert sum(1 for i in answerable if "bedside" in i.wording) * 4 >= len(answerable)
    assert sum(1 for i in items if i.kind == "near") >= 100 and sum(1 for i in items if i.kind == "far") >= 40


def test_test3_key_facts_match_the_answer_and_no_sibling():
    """As for test-2; ``also_lines`` (lines that answer as well, or complete the answer: the items
    under a lead-in) are recorded beside the quote, and most match the key fact too."""
    items = [i for i in load_clinician(TEST3_FILE) if i.kind == "answerable"]
    for item in items:
        assert item.quote and key_fact_given(item, item.quote), item.qid
        assert not any(key_fact_given(item, s) for s in item.siblings), item.qid
        assert all(sibling_given(item, s) for s in item.siblings), item.qid
        assert not sibling_given(item, item.quote), item.qid
    also = [line for i in items for line in i.also_lines if key_fact_given(i, line)]
    assert len(also) * 10 >= 9 * sum(len(i.also_lines) for i in items)


def test_the_training_set_is_the_frozen_one_from_dev_part_folders_only():
    """The line reader's training set (issue 55): hashed; one file per dev-part guideline folder,
    each row of its file's folder, never a test-part folder; no question of any benchmark file."""
    assert training_sha256() == TRAIN_SHA256
    items = load_training()
    assert len(items) >= 3000 and sum(1 for i in items if i.kind == "near") >= 300
    for path in TRAIN_DIR.glob("*.jsonl"):
        assert part_of(path.stem) == "dev", path.name
        assert {i.guideline for i in load_clinician(path)} == {path.stem}
    assert all(i.part == "dev" and i.kind in ("answerable", "near") for i in items)
    benchmark = load_clinician() + load_clinician(TEST2_FILE) + load_clinician(TEST3_FILE)
    asked = {" ".join(i.question.lower().split()) for i in benchmark}
    assert not asked & {" ".join(i.question.lower().split()) for i in items}


def test_training_rows_hold_their_answering_line_and_siblings_apart():
    for item in load_training():
        if item.kind == "answerable":
            assert item.quote and key_fact_given(item, item.quote), item.qid
            assert not any(key_fact_given(item, s) for s in item.siblings), item.qid
            assert all(sibling_given(item, s) for s in item.siblings), item.qid


def test_a_shown_sibling_makes_an_answer_wrong():
    item = _item(
        key_fact=r"10\s*mmol",
        siblings=("K+ 3.5-5.0: add 20-30 mmol per liter",),
        sibling_fact=r"20\s*-\s*30\s*mmol",
    )
    cited = ["open-medicine:bts_cap_2009/x"]
    assert outcome(item, "rag", "Replace at 10 mmol/hour", cited) == "correct"
    assert outcome(item, "rag", "Replace at 10 mmol/hour. Add 20-30 mmol per liter", cited) == "wrong"
