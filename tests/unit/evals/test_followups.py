"""The frozen multi-turn benchmark (evals/datasets/followups.py): hashes, the split by guideline
folder, and rows that score what they say."""

from __future__ import annotations

import re

import pytest

from corpora.sources.open_medicine import packaged_guidelines_dir
from evals.datasets.clinician import normalise_answer, part_of
from evals.datasets.followups import FILES, SHA256, load_followups
from indexes.files import sha256_file


@pytest.mark.parametrize("part", ["test", "dev", "test-2", "train"])
def test_each_part_is_frozen(part):
    assert sha256_file(FILES[part]) == SHA256[part]  # written before any change was measured


def test_the_fresh_test_part_and_the_training_set_keep_to_their_side_and_repeat_no_conversation():
    fresh, train = load_followups("test-2"), load_followups("train")
    assert all(part_of(c.guideline) == "test" for c in fresh)
    assert all(part_of(c.guideline) == "dev" for c in train)  # fitted on dev folders only
    earlier = {c.turns for c in load_followups("test") + load_followups("dev")}
    assert not ({c.turns for c in fresh} & earlier) and not ({c.turns for c in train} & earlier)
    assert len(fresh) >= 150 and sum(not c.answerable for c in fresh) >= 40  # what issue 60 asks
    ids = [c.cid for part in ("test", "dev", "test-2", "train") for c in load_followups(part)]
    assert len(ids) == len(set(ids))


def test_the_parts_are_split_by_guideline_folder_with_no_overlap():
    test, dev = load_followups("test"), load_followups("dev")
    assert {c.guideline for c in test}.isdisjoint({c.guideline for c in dev})
    assert all(part_of(c.guideline) == "test" for c in test)
    assert all(part_of(c.guideline) == "dev" for c in dev)
    assert len({c.cid for c in test + dev}) == len(test) + len(dev)
    assert len(test) >= 150 and sum(not c.answerable for c in test) >= 40  # what issue 60 asks


@pytest.mark.parametrize("part", ["test", "dev", "test-2", "train"])
def test_an_answerable_row_quotes_its_guideline_and_its_key_fact_tells_it_from_the_siblings(part):
    root = packaged_guidelines_dir() / "content"
    for c in load_followups(part):
        if not c.answerable:
            continue
        assert c.quote in (root / c.guideline / c.file).read_text(encoding="utf-8"), c.cid
        assert re.search(c.key_fact, normalise_answer(c.quote), re.IGNORECASE), c.cid
        for sibling in c.siblings:
            assert not re.search(c.key_fact, normalise_answer(sibling), re.IGNORECASE), c.cid
            assert re.search(c.sibling_fact, normalise_answer(sibling), re.IGNORECASE), c.cid


def test_a_conversation_is_scored_as_its_last_turn_asked_of_its_guideline():
    rows = load_followups("dev")
    answerable, unanswerable = (
        next(c for c in rows if c.answerable),
        next(c for c in rows if not c.answerable),
    )
    item = answerable.as_item()
    assert item.question == answerable.turns[-1] and item.kind == "answerable"
    assert item.sources == (f"open-medicine:{answerable.guideline}",) and item.key_fact == answerable.key_fact
    assert unanswerable.as_item().kind == "near"  # its subject is in the corpus, the asked aspect is not
    assert answerable.as_item(answerable.text).question.split("\n") == list(answerable.turns)
