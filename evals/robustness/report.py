"""The robustness section of a run report (from :func:`evals.robustness.metrics.robustness_metrics`)."""

from __future__ import annotations

from typing import Any


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _rate(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "–"
    low, high = rate["ci"]
    return f"{rate['count']}/{rate['n']} = {_pct(rate['rate'])}% ({_pct(low)}-{_pct(high)})"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < 3 else "---:" for i in range(len(header))) + "|",
    ]
    return [*out, *("| " + " | ".join(str(c) for c in row) + " |" for row in rows), ""]


HEADER = [
    "set~perturbation",
    "condition",
    "items changed",
    "acc. original",
    "acc. perturbed",
    "diff (95% bootstrap CI)",
    "answer changed (95% Wilson CI)",
    "right->wrong / wrong->right",
    "McNemar p",
]
EFFECT_HEADER = [
    "set~perturbation",
    "RAG condition",
    "items",
    "changed closed-book",
    "changed with RAG",
    "only closed-book / only RAG changed",
    "McNemar p",
]
NOTE = (
    "Only items the perturbation changed are run and counted (`unchanged`: no drug name, disease name "
    "or vignette to change). Answer changed: another option chosen, letters mapped back."
)


def _row(ds: str, cond: str, m: dict[str, Any]) -> list[Any]:
    low, high = m["diff_ci"]
    diff = f"{100 * m['diff']:+.1f} ({100 * low:+.1f}, {100 * high:+.1f})"
    return [
        ds,
        cond,
        f"{m['n']} (+{m['not_applicable']} unchanged)",
        _pct(m["accuracy_original"]),
        _pct(m["accuracy_perturbed"]),
        diff,
        _rate(m["flips"]),
        f"{m['right_to_wrong']} / {m['wrong_to_right']}",
        f"{m['mcnemar_p']:.3g}",
    ]


def _effect_row(ds: str, cond: str, e: dict[str, Any]) -> list[Any]:
    only = f"{e['only_closed_book_flipped']} / {e['only_rag_flipped']}"
    p = f"{e['mcnemar_p']:.3g}"
    return [ds, cond, e["n"], _rate(e["flips_closed_book"]), _rate(e["flips_rag"]), only, p]


def robustness_lines(metrics: dict[str, Any]) -> list[str]:
    """Markdown for the report; nothing when the run perturbed no item."""
    if not metrics:
        return []
    rows = [_row(ds, c, m) for c, per in metrics["by_condition"].items() for ds, m in sorted(per.items())]
    lines = ["## Robustness: each perturbed item against its original (paired)", ""]
    lines += [*_table(HEADER, rows), NOTE, ""]
    effects = metrics["retrieval_effect"]
    effect = [_effect_row(ds, c, e) for c, per in effects.items() for ds, e in sorted(per.items())]
    if effect:
        lines += ["### Does retrieval make answers more or less robust?", "", *_table(EFFECT_HEADER, effect)]
    return lines
