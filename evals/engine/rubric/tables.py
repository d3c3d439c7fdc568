"""report.md's rubric sections, from ``metrics.json["rubric"]`` (:mod:`evals.engine.rubric.report`).

Three sections: scores per arm with each arm paired against the reference (the judge warnings
first, so ``medcite eval report`` prints them with its headline), scores per tag, and judge
agreement per criterion kind. Rounded here; metrics.json holds every number unrounded.
"""

from __future__ import annotations

from typing import Any

from evals.engine.report.markdown import table
from evals.engine.rubric.report import KAPPA_FLOOR, warnings


def _score(s: dict[str, Any] | None) -> str:
    if not s:
        return "–"
    return f"{s['mean']:.3f} ({s['ci'][0]:.3f}–{s['ci'][1]:.3f})"


def _diff(p: dict[str, Any] | None) -> str:
    if not p:
        return "–"
    return f"{p['diff']:+.3f} ({p['diff_ci'][0]:+.3f}, {p['diff_ci'][1]:+.3f})"


def _arms(rubric: dict[str, Any]) -> list[list[object]]:
    rows: list[list[object]] = []
    for ds, e in rubric.items():
        for name, a in e["arms"].items():
            modes = ", ".join(f"{m} {n}" for m, n in sorted(a["modes"].items())) or "–"
            per_item = [f"{a.get(k, 0.0) / max(a['n'], 1):.1f}" for k in ("reply_seconds", "judge_seconds")]
            rows.append([name, ds, a["n"], _score(a["score"]), a["ungraded"], a["failed"], modes, *per_item])
    return rows


def _pairs(rubric: dict[str, Any]) -> list[list[object]]:
    rows: list[list[object]] = []
    for ds, e in rubric.items():
        for name, p in e["paired"].items():
            if p is None:
                rows.append([name, ds, 0, "–", "–", "–", "–", "–", "–", "–"])
                continue
            cells = [p["n"], f"{p['mean_a']:.3f}", f"{p['mean_b']:.3f}", _diff(p)]
            rows.append([name, ds, *cells, p["help"], p["harm"], p["ties"], p["unpaired"]])
    return rows


def score_lines(rubric: dict[str, Any]) -> list[str]:
    """Judge warnings, then each arm's mean score and each arm against the reference."""
    refs = ", ".join(sorted({e["reference"] for e in rubric.values()}))
    lines = [f"## Rubric scores: each arm against {refs} (paired, 95% bootstrap CI)", ""]
    lines += [*(f"{w}\n" for w in warnings(rubric))]
    header = ["arm", "dataset", "items", "mean score (95% CI)", "ungraded", "failed", "reply modes"]
    lines += table([*header, "reply s/item", "judge s/item"], _arms(rubric))
    header = ["arm", "dataset", "paired", "reference mean", "arm mean", "arm - reference (95% CI)"]
    lines += table([*header, "help", "harm", "ties", "unpaired"], _pairs(rubric))
    lines += [
        "Score per example: points of the criteria met over the positive points, clipped to [0, 1] "
        "(negative points subtract); ungraded: a criterion the judge left without a parsable "
        "verdict (no score); help / harm: examples the arm scored higher / lower than the reference.",
        "",
    ]
    return lines


def tag_lines(rubric: dict[str, Any]) -> list[str]:
    """Per tag (axes, criteria, example tags such as kind and wording) and arm."""
    rows: list[list[object]] = []
    for ds, e in rubric.items():
        tags = sorted({t for per in e["tags"].values() for t in per})
        for tag in tags:
            for name, per in e["tags"].items():
                if tag in per:
                    t = per[tag]
                    n = t["score"]["n"] if t["score"] else 0
                    rows.append([tag, ds, name, n, _score(t["score"]), _diff(t.get("paired"))])
    lines = ["## Rubric scores per tag", ""]
    lines += table(["tag", "dataset", "arm", "n", "mean (95% CI)", "arm - reference (95% CI)"], rows)
    return [
        *lines,
        "A criterion tag scores the criteria carrying it alone; an example tag the whole example.",
        "",
    ]


def agreement_lines(rubric: dict[str, Any]) -> list[str]:
    """Judge against matcher per criterion kind; empty when the judge graded no matched criterion."""
    rows: list[list[object]] = []
    for ds, e in rubric.items():
        for kind, a in e["agreement"].items():
            kappa = "–" if a.get("kappa") is None else f"{a['kappa']:.2f}"
            raw = "–" if "raw" not in a else f"{100 * a['raw']:.1f}%"
            counts = [a.get(k, 0) for k in ("both", "matcher_only", "judge_only", "neither")]
            rows.append([kind, ds, a["n"], *counts, raw, kappa, a["unparsable"]])
    if not rows:
        return []
    header = ["criterion kind", "dataset", "n", "both met", "matcher only", "judge only", "neither"]
    lines = ["## Judge agreement with the deterministic matchers", ""]
    lines += table([*header, "raw agreement", "Cohen's kappa", "unparsable"], rows)
    return [*lines, f"Pooled over arms; a kappa under {KAPPA_FLOOR} is flagged at the top of the scores.", ""]


def rubric_lines(rubric: dict[str, Any]) -> list[str]:
    if not rubric:
        return []
    return [*score_lines(rubric), *tag_lines(rubric), *agreement_lines(rubric)]
