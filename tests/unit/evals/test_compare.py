"""compare(): per-dataset paired rows, unpaired items reported, text/Markdown rendering, run dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from evals.engine.report.compare import compare, compare_runs, render_markdown, render_text, unpaired_datasets
from evals.metrics.stats import mcnemar_exact
from evals.records import ItemRecord, write_records


def rec(
    dataset: str, qid: str, gold: str | None, pred: str | None, cond: str, error: str | None = None
) -> ItemRecord:
    return ItemRecord(dataset=dataset, qid=qid, condition=cond, gold=gold, pred=pred, error=error)


def closed_book() -> list[ItemRecord]:
    # medqa: right on q1..q6 (of 8); q8 has no answer. bioasq: right on b1.
    rows = [rec("medqa", f"q{i}", "A", "A", "closed-book") for i in range(1, 7)]
    rows += [
        rec("medqa", "q7", "B", "C", "closed-book"),
        rec("medqa", "q8", "B", None, "closed-book", "no option letter"),
    ]
    rows += [rec("bioasq", "b1", "A", "A", "closed-book"), rec("bioasq", "b2", "B", "A", "closed-book")]
    rows.append(rec("medqa", "only-a", "A", "A", "closed-book"))
    return rows


def rag() -> list[ItemRecord]:
    # medqa: wrong on q1, q2 (harm), right on q7, q8 (help), same as closed-book elsewhere
    rows = [rec("medqa", "q1", "A", "B", "rag"), rec("medqa", "q2", "A", None, "rag", "several options")]
    rows += [rec("medqa", f"q{i}", "A", "A", "rag") for i in range(3, 7)]
    rows += [rec("medqa", "q7", "B", "B", "rag"), rec("medqa", "q8", "B", "B", "rag")]
    rows += [rec("bioasq", "b1", "A", "A", "rag"), rec("bioasq", "b2", "B", "B", "rag")]
    rows += [rec("pubmedqa", "p1", "A", "A", "rag"), rec("medqa", "no-gold", None, "A", "rag")]
    return rows


def test_rows_per_dataset_then_all() -> None:
    rows = compare(closed_book(), rag(), n_resamples=2000)
    assert [r.dataset for r in rows] == ["medqa", "bioasq", "all"]
    medqa = rows[0]
    assert (medqa.n, medqa.only_a, medqa.only_b) == (8, 1, 0)
    assert (medqa.a.correct, medqa.b.correct) == (6, 6)
    assert (medqa.counts.only_a, medqa.counts.only_b) == (2, 2)
    assert medqa.diff == 0.0 and medqa.mcnemar_p == 1.0
    assert medqa.counts.harm_rate == 2 / 8 and medqa.counts.help_rate == 2 / 8
    assert (medqa.a.no_answer, medqa.b.no_answer) == (1, 1)
    assert dict(medqa.b.reasons) == {"several options": 1}
    bioasq = rows[1]
    assert bioasq.diff == pytest.approx(1 / 2) and bioasq.mcnemar_p == mcnemar_exact(0, 1)
    total = rows[2]
    assert (total.n, total.only_a, total.only_b) == (10, 1, 1)  # pubmedqa p1 is only in B
    assert total.a.correct == 7 and total.b.correct == 8
    assert total.diff == pytest.approx((8 - 7) / 10)
    assert total.diff_ci[0] <= total.diff <= total.diff_ci[1]
    assert unpaired_datasets(closed_book(), rag()) == {"pubmedqa": "B"}


def test_to_json_carries_what_reports_read() -> None:
    row = compare(closed_book(), rag(), n_resamples=500)[0].to_json()
    for key in ("n", "accuracy_a", "accuracy_b", "diff", "diff_ci", "mcnemar_p", "harm_rate", "help_rate"):
        assert key in row
    assert row["no_answer_reasons_a"] == {"no option letter": 1}
    json.dumps(row)  # plain JSON


def test_runs_without_a_shared_item_are_refused() -> None:
    with pytest.raises(ValueError, match="share no scored item"):
        compare([rec("medqa", "1", "A", "A", "x")], [rec("medqa", "2", "A", "A", "y")])


def test_renderers_show_each_row() -> None:
    rows = compare(closed_book(), rag(), n_resamples=500)
    text = render_text(rows, "closed-book", "rag")
    lines = text.splitlines()
    assert lines[0] == "A = closed-book" and lines[1] == "B = rag"
    assert any(line.startswith("medqa ") and "75.00" in line and "+0.00" in line for line in lines)
    markdown = render_markdown(rows, "closed-book", "rag")
    assert "| bioasq | 2 | 50.00 (" in markdown
    assert markdown.count("\n|") == 2 + len(rows)  # header, rule, one line per row


def test_compare_runs_reads_run_directories(tmp_path: Path) -> None:
    for name, records in (("a", closed_book()), ("b", rag())):
        (tmp_path / name).mkdir()
        write_records(tmp_path / name / "records.jsonl", records)
    (tmp_path / "b" / "manifest.json").write_text(json.dumps({"llm": "qwen-1.5b", "condition": "rag"}))
    text = compare_runs(tmp_path / "a", tmp_path / "b")
    assert f"A = closed-book ({tmp_path / 'a'})" in text and f"B = qwen-1.5b rag ({tmp_path / 'b'})" in text
    assert "Datasets in one run only (no row): pubmedqa (B)" in text
    assert "| medqa |" in compare_runs(tmp_path / "a", tmp_path / "b" / "records.jsonl", markdown=True)
    with pytest.raises(ConfigError, match="no records"):
        compare_runs(tmp_path / "a", tmp_path / "missing")


def test_a_run_with_several_conditions_needs_one_picked(tmp_path: Path) -> None:
    write_records(tmp_path / "records.jsonl", [*closed_book(), *rag()])
    with pytest.raises(ConfigError, match=r"several conditions \(it has: closed-book, rag\)"):
        compare_runs(tmp_path, tmp_path)
    by_suffix = compare_runs(f"{tmp_path}#closed-book", f"{tmp_path}#rag")
    assert by_suffix == compare_runs(tmp_path, tmp_path, condition_a="closed-book", condition_b="rag")
    assert f"A = closed-book ({tmp_path})" in by_suffix and "medqa" in by_suffix
    write_records(tmp_path / "other.jsonl", [rec("mmlu", "x", "A", "A", "rag")])
    with pytest.raises(ConfigError, match=r"cannot compare .* share no scored item"):
        compare_runs(f"{tmp_path}#rag", tmp_path / "other.jsonl")
    with pytest.raises(ConfigError, match="no scored records of condition 'rag/k=5'"):
        compare_runs(tmp_path, f"{tmp_path}#rag/k=5", condition_a="rag")
