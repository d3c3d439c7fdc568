"""``medcite eval report RUN_DIR`` prints the report's headline table, not only its path, and the
report labels its two seconds-per-item columns by what they are (a median, a mean)."""

from __future__ import annotations

from evals.engine.runner import run_eval
from medcite import cli
from tests.helpers import LetterModel, guideline_bm25, mcq_run_config


def test_eval_report_prints_the_headline_table_and_the_path(tmp_path, monkeypatch, capsys):
    paths = guideline_bm25(tmp_path / "data", 4)
    out = tmp_path / "run"
    run_eval(mcq_run_config("report", seed=3), paths, out=out, progress=False, generator=LetterModel())
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(paths.data_dir))
    capsys.readouterr()
    assert cli.main(["eval", "report", str(out)]) == 0
    printed = capsys.readouterr().out
    header = (
        "| condition | dataset | n | accuracy | 95% CI | no answer | no evidence kept | s/item (median) |"
    )
    assert printed.startswith("## Multiple choice: accuracy (95% Wilson CI)\n") and header in printed
    assert (
        "| closed-book | medqa | 5 |" in printed and "| rag/default/bm25/none/k=2 | pubmedqa | 3 |" in printed
    )
    assert "the report goes on with: RAG vs closed-book (paired); Cost" in printed
    assert printed.rstrip().endswith(f"report: {out / 'report.md'}")
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| condition | items | item seconds | s/item (mean) |" in report
    assert "| s/item |" not in report  # neither column is left with the bare label
