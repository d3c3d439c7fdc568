"""Free-text sets: ``bioasq-ideal-11b`` is exactly BioASQ Task 11B, the split training never reads."""

from __future__ import annotations

from evals.datasets.bioasq import bioasq_rows
from evals.datasets.freetext import load_bioasq_ideal


def test_bioasq_ideal_11b_is_task_11b_only(source_data):
    rows = bioasq_rows(source_data)
    task_11b = {str(r["id"]) for r in rows if r["task"] == "Task11B"}
    trained_on = {str(r["id"]) for r in rows if r["task"] in {"Task7B", "Task8B", "Task9B", "Task10B"}}
    items = load_bioasq_ideal(source_data / "bioasq_from_mirage", "Task11B")
    assert {i.qid for i in items} == task_11b and len(items) == 327
    assert not task_11b & trained_on
    assert {i.dataset for i in items} == {"bioasq-ideal-11b"}
    assert all(i.reference for i in items)
    assert len(load_bioasq_ideal(source_data / "bioasq_from_mirage")) == len(rows)
