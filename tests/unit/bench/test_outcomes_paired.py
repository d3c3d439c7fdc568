"""Two runs of the same clinician questions compared question by question (``--against``)."""

from __future__ import annotations

import pytest

from bench.answers.outcomes import paired_changes


def record(qid: str, outcome: str, shown: str, text: str = "t", evidence: tuple[str, ...] = ("c1",)) -> dict:
    return {"qid": qid, "outcome": outcome, "shown": shown, "text": text, "evidence": list(evidence)}


def test_counts_each_kind_of_change_once_per_question() -> None:
    base = [
        record("a", "correct", "answer"),
        record("b", "abstained", "closest_lines"),
        record("c", "wrong", "answer"),
    ]
    other = [
        record("c", "abstained", "closest_lines", text="lines"),  # outcome and text changed
        record("a", "correct", "answer", evidence=("c2",)),  # the same outcome from other evidence
        record("b", "abstained", "closest_lines"),
    ]
    got = paired_changes(base, other)
    assert got["questions"] == 3 and got["outcome_changed"] == 1 and got["outcome_changed_share"] == 0.3333
    assert got["text_changed"] == 1 and got["kept_evidence_changed"] == 1
    assert got["changed"] == [{"qid": "c", "base": "wrong/answer", "other": "abstained/closest_lines"}]
    assert got["counts"]["other"] == {"abstained/closest_lines": 2, "correct/answer": 1}


def test_runs_of_different_questions_are_refused() -> None:
    with pytest.raises(SystemExit, match="different questions"):
        paired_changes([record("a", "correct", "answer")], [record("b", "correct", "answer")])
