"""Paired abstention counts within one run and across two runs of one config."""

from __future__ import annotations

import json
from pathlib import Path

from bench.answers.abstention_paired import paired, paired_runs


def _run(folder: Path, rows: list[tuple[str, str, bool, str]]) -> Path:
    folder.mkdir()
    with (folder / "records.jsonl").open("w", encoding="utf-8") as fh:
        for condition, qid, answerable, mode in rows:
            fh.write(
                json.dumps(
                    {"condition": condition, "qid": qid, "extra": {"answerable": answerable, "mode": mode}}
                )
                + "\n"
            )
    return folder


def test_across_runs_each_condition_is_compared_with_itself(tmp_path):
    before = _run(
        tmp_path / "before",
        [
            ("c", "1", False, "rag"),
            ("c", "2", False, "rag"),
            ("c", "3", False, "abstained"),
            ("c", "4", True, "rag"),
        ],
    )
    after = _run(
        tmp_path / "after",
        [
            ("c", "1", False, "abstained"),
            ("c", "2", False, "abstained"),
            ("c", "3", False, "abstained"),
            ("c", "4", True, "abstained"),
            ("other", "1", False, "rag"),
        ],
    )
    (row,) = paired_runs(before, after)
    assert row["condition"] == "c" and row["questions"] == 4
    assert row["unanswerable"] | {"mcnemar_p": None} == {
        "outcome": "abstained",
        "n": 3,
        "a": 1,
        "b": 3,
        "only_a": 0,
        "only_b": 2,
        "mcnemar_p": None,
    }
    assert row["answerable"]["only_a"] == 1 and row["answerable"]["b"] == 0
    assert 0 < row["unanswerable"]["mcnemar_p"] <= 1


def test_within_a_run_every_two_conditions_are_compared(tmp_path):
    rows = [("a", "1", True, "rag"), ("b", "1", True, "abstained"), ("c", "1", True, "rag")]
    run = _run(tmp_path / "run", rows)
    assert [(r["a"], r["b"], r["answerable"]["only_a"]) for r in paired(run)] == [
        ("a", "b", 1),
        ("a", "c", 0),
        ("b", "c", 0),
    ]
