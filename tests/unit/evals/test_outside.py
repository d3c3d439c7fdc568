"""The outside questions (evals/datasets/outside.py): the test part frozen, the parts apart."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from core.errors import SourceError
from evals.datasets import outside
from evals.datasets.outside import TEST2_SHA256, TEST_SHA256, load_outside, outside_file
from indexes.files import sha256_file

HELD_OUT = Path(__file__).parents[3] / "bench" / "questions" / "nothing_in_the_sources.txt"


def test_the_test_parts_are_frozen():
    assert sha256_file(outside_file("test")) == TEST_SHA256
    assert sha256_file(outside_file("test-2")) == TEST2_SHA256


def test_each_part_has_every_kind_and_no_question_of_another_part_or_the_held_out_twenty():
    dev, test, test2 = load_outside("dev"), load_outside("test"), load_outside("test-2")
    assert Counter(q.kind for q in dev) == {"chit_chat": 10, "general": 30, "homonym": 35, "far": 35}
    assert Counter(q.kind for q in test) == {"chit_chat": 5, "general": 15, "homonym": 20, "far": 20}
    assert Counter(q.kind for q in test2) == {"chit_chat": 5, "general": 15, "homonym": 20, "far": 20}
    asked = [q.question.lower() for q in dev + test + test2]
    assert len(set(asked)) == len(asked)
    held_out = {line.strip().lower() for line in HELD_OUT.read_text(encoding="utf-8").splitlines()}
    assert not held_out & set(asked)
    assert not any(q.answerable for q in dev + test + test2)


def test_the_training_part_has_no_far_question_and_no_trap_word_of_a_scored_part():
    train = load_outside("train")
    assert Counter(q.kind for q in train) == {"chit_chat": 80, "general": 140, "homonym": 140}
    scored = load_outside("dev") + load_outside("test") + load_outside("test-2")
    assert not {q.question.lower() for q in train} & {q.question.lower() for q in scored}
    traps = {json.loads(line).get("trap") for line in outside_file("train").read_text().splitlines()}
    test2 = outside_file("test-2").read_text().splitlines()
    assert not (traps - {""}) & {json.loads(line)["trap"] for line in test2} - {""}


def test_a_malformed_row_is_named(tmp_path, monkeypatch):
    (tmp_path / "outside_questions_dev.jsonl").write_text('{"id": "OD-1", "kind": "weather"}\n')
    monkeypatch.setattr(outside, "FOLDER", tmp_path)
    with pytest.raises(SourceError, match="line 1"):
        load_outside("dev")
