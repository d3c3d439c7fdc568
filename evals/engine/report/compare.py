"""Paired comparison of two runs per dataset: accuracies, their difference, McNemar, harm and help.

``compare(A, B)`` pairs records by ``(dataset, qid)`` and returns one row per dataset (plus an
``all`` row pooling the items when there are several datasets). A is the reference arm (e.g.
closed-book), B the treatment (e.g. RAG): the difference is acc(B) - acc(A), harm counts items
A got right and B got wrong. Accuracies are over the paired items only; items that only one run
has are counted in the row, never silently dropped from the report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from evals.datasets.mirage import DATASETS as MIRAGE_ORDER
from evals.metrics.choice import Accuracy, accuracy
from evals.metrics.stats import (
    PairedCounts,
    correctness,
    mcnemar_exact,
    pair,
    paired_bootstrap_diff,
    paired_counts,
)
from evals.records import ItemRecord, read_records

ALL = "all"


@dataclass(frozen=True)
class CompareRow:
    dataset: str
    only_a: int  # items in run A only (not in any figure below)
    only_b: int
    a: Accuracy
    b: Accuracy
    diff: float  # acc(B) - acc(A)
    diff_ci: tuple[float, float]  # paired bootstrap percentile interval
    mcnemar_p: float
    counts: PairedCounts

    @property
    def n(self) -> int:
        return self.counts.n

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "n": self.n,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "accuracy_a": self.a.accuracy,
            "accuracy_a_ci": [self.a.ci_low, self.a.ci_high],
            "accuracy_b": self.b.accuracy,
            "accuracy_b_ci": [self.b.ci_low, self.b.ci_high],
            "diff": self.diff,
            "diff_ci": list(self.diff_ci),
            "mcnemar_p": self.mcnemar_p,
            "harm_rate": self.counts.harm_rate,
            "help_rate": self.counts.help_rate,
            "harm_given_a_right": self.counts.harm_given_a_right,
            "both_right": self.counts.both,
            "only_a_right": self.counts.only_a,
            "only_b_right": self.counts.only_b,
            "both_wrong": self.counts.neither,
            "no_answer_a": self.a.no_answer,
            "no_answer_b": self.b.no_answer,
            "no_answer_reasons_a": dict(self.a.reasons),
            "no_answer_reasons_b": dict(self.b.reasons),
        }


def _order(datasets: Iterable[str]) -> list[str]:
    known = [d for d in MIRAGE_ORDER if d in datasets]
    return known + sorted(set(datasets) - set(known))


def _row(name: str, a: list[ItemRecord], b: list[ItemRecord], **boot: Any) -> CompareRow | None:
    """The row of one dataset, or None when the runs share no item of it."""
    paired = pair(a, b)
    if paired.n == 0:
        return None
    correct_a, correct_b = correctness(paired)
    diff, low, high = paired_bootstrap_diff(correct_a, correct_b, **boot)
    counts = paired_counts(correct_a, correct_b)
    return CompareRow(
        dataset=name,
        only_a=len(paired.only_a),
        only_b=len(paired.only_b),
        a=accuracy(paired.a),
        b=accuracy(paired.b),
        diff=diff,
        diff_ci=(low, high),
        mcnemar_p=mcnemar_exact(counts.only_a, counts.only_b),
        counts=counts,
    )


def compare(
    records_a: Iterable[ItemRecord],
    records_b: Iterable[ItemRecord],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[CompareRow]:
    """One row per dataset the runs share (MIRAGE's order first), then ``all`` over every item
    when the runs hold several datasets; its ``only_a``/``only_b`` count every unpaired item,
    including those of a dataset only one run has (see :func:`unpaired_datasets`).

    Only scored multiple-choice records (with a gold letter) take part. Raises ValueError when
    the runs share no item at all.
    """
    a = [r for r in records_a if r.gold is not None]
    b = [r for r in records_b if r.gold is not None]
    datasets = _order({r.dataset for r in a} | {r.dataset for r in b})
    boot = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    rows = [
        _row(d, [r for r in a if r.dataset == d], [r for r in b if r.dataset == d], **boot) for d in datasets
    ]
    found = [row for row in rows if row is not None]
    if not found:
        raise ValueError(
            f"the runs share no scored item ({len(a)} in A, {len(b)} in B); "
            "compare runs over the same questions"
        )
    if len(datasets) > 1:
        total = _row(ALL, a, b, **boot)
        if total is not None:  # always: some dataset paired
            found.append(total)
    return found


def compare_sets(
    records_a: Iterable[ItemRecord], records_b: Iterable[ItemRecord], **options: Any
) -> list[CompareRow]:
    """:func:`compare` over the original sets (with their ``all`` row), then each perturbed copy
    set (``medqa~drug-names``, :mod:`evals.robustness`) on its own row: pooled with the originals,
    a copy would count its item twice. Raises ValueError when no set pairs."""
    from evals.robustness import base_dataset

    a, b = list(records_a), list(records_b)

    def copies(rs: list[ItemRecord], copy: bool) -> list[ItemRecord]:
        return [r for r in rs if (base_dataset(r.dataset)[1] is not None) == copy]

    rows: list[CompareRow] = []
    if copies(a, False) and copies(b, False):
        rows += compare(copies(a, False), copies(b, False), **options)
    boot = {"n_resamples": 10_000, "seed": 0, "confidence": 0.95, **options}
    for ds in _order({r.dataset for r in copies(b, True)}):
        row = _row(ds, [r for r in a if r.dataset == ds], [r for r in b if r.dataset == ds], **boot)
        rows += [row] if row is not None else []
    if not rows:
        raise ValueError(f"the runs share no scored item ({len(a)} in A, {len(b)} in B)")
    return rows


def unpaired_datasets(records_a: Iterable[ItemRecord], records_b: Iterable[ItemRecord]) -> dict[str, str]:
    """Datasets that only one run has: ``{dataset: "A"|"B"}`` (they get no row of their own)."""
    in_a = {r.dataset for r in records_a if r.gold is not None}
    in_b = {r.dataset for r in records_b if r.gold is not None}
    return {d: "A" if d in in_a else "B" for d in sorted(in_a ^ in_b)}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _cells(row: CompareRow) -> list[str]:
    return [
        row.dataset,
        str(row.n),
        f"{_pct(row.a.accuracy)} ({_pct(row.a.ci_low)}–{_pct(row.a.ci_high)})",
        f"{_pct(row.b.accuracy)} ({_pct(row.b.ci_low)}–{_pct(row.b.ci_high)})",
        f"{100 * row.diff:+.2f} ({100 * row.diff_ci[0]:+.2f}, {100 * row.diff_ci[1]:+.2f})",
        f"{row.mcnemar_p:.2g}",
        _pct(row.counts.harm_rate),
        _pct(row.counts.help_rate),
        f"{row.a.no_answer}/{row.b.no_answer}",
        f"{row.only_a}/{row.only_b}",
    ]


HEADER = ["dataset", "n", "acc A (95% CI)", "acc B (95% CI)", "B-A (95% CI)", "McNemar p", "harm %", "help %"]
HEADER += ["no answer A/B", "unpaired A/B"]
LEGEND = (
    "Accuracy in % over paired items (Wilson CI); B-A with a paired bootstrap CI; McNemar exact "
    "two-sided p; harm: A right and B wrong, help: B right and A wrong, as % of paired items; "
    "no answer: items without a parsable answer (counted wrong); unpaired: items in one run only."
)


def render_text(rows: Sequence[CompareRow], label_a: str = "A", label_b: str = "B") -> str:
    """A fixed-width table for the terminal."""
    table = [HEADER, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = [f"A = {label_a}", f"B = {label_b}", ""]
    for n, line in enumerate(table):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join([*lines, "", LEGEND]) + "\n"


def render_markdown(rows: Sequence[CompareRow], label_a: str = "A", label_b: str = "B") -> str:
    """A Markdown table (GitHub flavour) with the legend underneath."""
    lines = [f"A = {label_a}; B = {label_b}", ""]
    lines.append("| " + " | ".join(HEADER) + " |")
    lines.append("|---|" + "---:|" * (len(HEADER) - 1))
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join([*lines, "", LEGEND]) + "\n"


def _run(spec: Path | str, condition: str | None) -> tuple[list[ItemRecord], str]:
    """The scored records of one condition of a run, and a label for the table.

    ``spec`` is a run directory or its records.jsonl, optionally with ``#<condition>`` appended
    (a run of `medcite eval` holds every condition of its grid in one records.jsonl).
    """
    text = str(spec)
    if condition is None and "#" in text:
        text, condition = text.rsplit("#", 1)
    path = Path(text)
    records_file = path / "records.jsonl" if path.is_dir() else path
    if not records_file.is_file():
        raise ConfigError(
            f"no records.jsonl at {path}; pass a run directory (from `medcite eval`) or its records.jsonl"
        )
    records = [r for r in read_records(records_file) if r.gold is not None]
    conditions = sorted({r.condition for r in records})
    if condition is not None:
        records = [r for r in records if r.condition == condition]
    if not records or (condition is None and len(conditions) > 1):
        problem = f"no scored records of condition {condition!r}" if condition else "several conditions"
        raise ConfigError(
            f"{path} has {problem} (it has: {', '.join(conditions) or 'none'}); "
            f"choose one as {path}#<condition>"
        )
    label = f"{records[0].condition} ({path})"
    manifest = records_file.parent / "manifest.json"
    if manifest.is_file():
        llm = json.loads(manifest.read_text(encoding="utf-8")).get("llm")
        label = f"{llm} {label}" if isinstance(llm, str) and llm else label
    return records, label


def compare_runs(
    run_dir_a: Path | str,
    run_dir_b: Path | str,
    *,
    condition_a: str | None = None,
    condition_b: str | None = None,
    markdown: bool = False,
    seed: int = 0,
) -> str:
    """The paired comparison of two runs (A = reference arm), rendered for the terminal or Markdown.

    A run with several conditions needs one picked, by ``condition_a``/``condition_b`` or as
    ``<run dir>#<condition>``; A and B may be two conditions of the same run.
    """
    a, label_a = _run(run_dir_a, condition_a)
    b, label_b = _run(run_dir_b, condition_b)
    try:
        rows = compare(a, b, seed=seed)
    except ValueError as exc:  # runs that share nothing, duplicate items, conflicting gold
        raise ConfigError(f"cannot compare {label_a} with {label_b}: {exc}") from exc
    render = render_markdown if markdown else render_text
    text = render(rows, label_a, label_b)
    alone = unpaired_datasets(a, b)
    if alone:
        text += (
            "Datasets in one run only (no row): " + ", ".join(f"{d} ({s})" for d, s in alone.items()) + "\n"
        )
    return text
