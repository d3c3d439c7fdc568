"""The faithfulness-separation report, from per-claim rows: how well the judge's margin
``log P(yes) - log P(no)`` ranks supported claims above false ones, and how the shipped verdict
rule (supported when the margin is >= 0) fares.

Pure functions over rows (``{"claim_id", "qid", "rule", "label", "margin", "verdict", ...}``):

- ROC-AUC of the margin, with a 95% interval from a cluster bootstrap over items (an item's
  claims share passages and derive from the same sentences, so they are not independent);
- accuracy, precision and recall of the verdict, "supported" being the positive class, and the
  share of false claims it catches;
- the margin's quantiles per class and the share of claims within 0.1 of the threshold;
- per construction rule the share the verdict gets right (accepted for ``supported``, caught for
  the others) with a Wilson 95% interval, and the ROC-AUC of that rule's claims against the
  supported ones;
- the worst cases: the supported claims with the lowest margins, the false ones with the highest;
- other thresholds on the margin: fixed ones, and one tuned on half of the items and scored on
  the other half (both ways round), by balanced accuracy (the classes' sizes are set by the
  construction, not by answers).

``evals.studies.faithfulness.page`` turns the summary into the report's files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evals.metrics.choice import wilson_interval
from evals.metrics.classification import roc_auc
from evals.studies.faithfulness.labelled import RULES, LabelledItem, visible

Row = Mapping[str, Any]
NEAR = 0.1  # |margin| below this: a verdict decided "by a hair"
THRESHOLDS = (0.0, 0.5, 1.0, 1.5, 2.0)


def auc_interval(
    margins: Sequence[float],
    labels: Sequence[int],
    groups: Sequence[str],
    *,
    resamples: int = 2000,
    seed: int = 13,
) -> tuple[float, float]:
    """95% percentile interval of the ROC-AUC, resampling groups (items) with replacement; draws
    holding one class only are skipped."""
    s, y = np.asarray(margins, dtype=np.float64), np.asarray(labels, dtype=np.int64)
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    blocks = [np.array(m) for m in members.values()]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        rows = np.concatenate([blocks[g] for g in rng.integers(0, len(blocks), len(blocks))])
        if 0 < y[rows].sum() < len(rows):
            draws.append(roc_auc(s[rows], y[rows]))
    if not draws:
        return float("nan"), float("nan")
    low, high = np.quantile(draws, [0.025, 0.975])
    return float(low), float(high)


def verdict_metrics(verdicts: Sequence[bool], labels: Sequence[int]) -> dict[str, Any]:
    """Accuracy, precision and recall of "supported" verdicts, and the share of false claims caught."""
    v, y = np.asarray(verdicts, dtype=bool), np.asarray(labels, dtype=np.int64) == 1
    tp, fp = int(np.sum(v & y)), int(np.sum(v & ~y))
    fn, tn = int(np.sum(~v & y)), int(np.sum(~v & ~y))

    def ratio(a: int, b: int) -> float:
        return a / b if b else float("nan")

    return {
        "accuracy": ratio(tp + tn, len(v)),
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, tp + fn),
        "false_caught": ratio(tn, tn + fp),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
    }


def margin_summary(margins: Sequence[float]) -> dict[str, float | int]:
    """Count, mean, quantiles (0, 10, 25, 50, 75, 90, 100%) and the share within ``NEAR`` of 0."""
    m = np.asarray(margins, dtype=np.float64)
    if not len(m):
        return {"claims": 0}
    q = np.quantile(m, [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    names = ("min", "q10", "q25", "median", "q75", "q90", "max")
    return {
        "claims": len(m),
        "mean": float(m.mean()),
        **{n: float(v) for n, v in zip(names, q, strict=True)},
        "near_threshold": float(np.mean(np.abs(m) < NEAR)),
    }


def by_rule(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per rule: claims, share right (accepted / caught) with a Wilson interval, median margin,
    and (false rules) the ROC-AUC of its claims against every supported claim."""
    supported = [r["margin"] for r in rows if r["rule"] == "supported"]
    out: dict[str, dict[str, Any]] = {}
    for rule in RULES:
        mine = [r for r in rows if r["rule"] == rule]
        if not mine:
            continue
        right = sum(bool(r["verdict"]) == (rule == "supported") for r in mine)
        low, high = wilson_interval(right, len(mine))
        entry: dict[str, Any] = {
            "claims": len(mine),
            "share_right": right / len(mine),
            "ci95": [low, high],
            "median_margin": float(np.median([r["margin"] for r in mine])),
        }
        if rule != "supported" and supported:
            margins = supported + [r["margin"] for r in mine]
            entry["roc_auc_vs_supported"] = roc_auc(margins, [1] * len(supported) + [0] * len(mine))
            entry["below_its_source"] = below_source([r for r in mine if r["rule"] == rule], rows)
        out[rule] = entry
    return out


def source_id(claim_id: str) -> str:
    """The supported claim a rule-made claim derives from: ``q:0:negation`` -> ``q:0:supported``."""
    return claim_id.rsplit(":", 1)[0] + ":supported"


def below_source(false_rows: Sequence[Row], rows: Sequence[Row]) -> float | None:
    """Share of false claims scored below the supported claim they were made from (same item,
    same passages: a within-item ranking, free of how hard the item is); None without pairs."""
    margin = {r["claim_id"]: r["margin"] for r in rows if r["rule"] == "supported"}
    pairs = [
        (r["margin"], margin[source_id(r["claim_id"])])
        for r in false_rows
        if source_id(r["claim_id"]) in margin
    ]
    return sum(f < s for f, s in pairs) / len(pairs) if pairs else None


def worst_cases(rows: Sequence[Row], k: int = 10) -> dict[str, list[dict[str, Any]]]:
    """The ``k`` supported claims with the lowest margins and the ``k`` false ones with the highest."""
    keep = ("claim_id", "rule", "edit", "margin", "verdict")
    low = sorted((r for r in rows if r["label"] == 1), key=lambda r: r["margin"])[:k]
    high = sorted((r for r in rows if r["label"] == 0), key=lambda r: -r["margin"])[:k]
    return {
        "supported_lowest": [{f: r.get(f) for f in keep} for r in low],
        "false_highest": [{f: r.get(f) for f in keep} for r in high],
    }


def at_thresholds(rows: Sequence[Row], thresholds: Sequence[float] = THRESHOLDS) -> list[dict[str, Any]]:
    """The verdict's metrics if "supported" meant ``margin >= t``, for fixed ``t`` (0 is the shipped
    rule), and the balanced accuracy (mean of recall and the share of false claims caught)."""
    labels = [int(r["label"]) for r in rows]
    out = []
    for t in thresholds:
        m = verdict_metrics([r["margin"] >= t for r in rows], labels)
        out.append({"threshold": t, **m, "balanced_accuracy": (m["recall"] + m["false_caught"]) / 2})
    return out


def best_threshold(rows: Sequence[Row]) -> float:
    """The margin threshold with the highest balanced accuracy on ``rows`` (the lowest such one,
    among the observed margins)."""
    candidates = sorted({float(r["margin"]) for r in rows})
    return max(candidates, key=lambda t: (at_thresholds(rows, [t])[0]["balanced_accuracy"], -t))


def cross_fitted(rows: Sequence[Row], seed: int = 13) -> list[dict[str, Any]]:
    """A threshold chosen on one half of the items (seeded split) and scored on the other, both
    ways round: what a re-tuned threshold would do on items it was not tuned on."""
    qids = sorted({r["qid"] for r in rows})
    np.random.default_rng(seed).shuffle(qids)
    halves = [set(qids[: len(qids) // 2]), set(qids[len(qids) // 2 :])]
    out = []
    for tune, test in (halves, halves[::-1]):
        tuned = best_threshold([r for r in rows if r["qid"] in tune])
        scored = at_thresholds([r for r in rows if r["qid"] in test], [tuned])[0]
        out.append({"tuned_on_items": len(tune), "scored_on_items": len(test), **scored})
    return out


def summarise(rows: Sequence[Row], *, resamples: int = 2000, seed: int = 13) -> dict[str, Any]:
    """Everything the report states, as plain JSON."""
    margins = [float(r["margin"]) for r in rows]
    labels = [int(r["label"]) for r in rows]
    low, high = auc_interval(margins, labels, [r["qid"] for r in rows], resamples=resamples, seed=seed)
    return {
        "claims": len(rows),
        "items": len({r["qid"] for r in rows}),
        "supported": sum(labels),
        "false": len(labels) - sum(labels),
        "roc_auc": roc_auc(margins, labels) if rows else float("nan"),
        "roc_auc_ci95": [low, high],
        "bootstrap": {"resamples": resamples, "unit": "item", "seed": seed},
        "verdict": verdict_metrics([bool(r["verdict"]) for r in rows], labels),
        "margin": {
            "supported": margin_summary([m for m, y in zip(margins, labels, strict=True) if y == 1]),
            "false": margin_summary([m for m, y in zip(margins, labels, strict=True) if y == 0]),
        },
        "by_rule": by_rule(rows),
        "verbatim_supported": _share([r for r in rows if r["label"] == 1], "verbatim"),
        "supported_margin_by_copy": {
            name: margin_summary([r["margin"] for r in rows if r["label"] == 1 and r.get("verbatim") is flag])
            for name, flag in (("verbatim", True), ("not_verbatim", False))
        },
        "thresholds": at_thresholds(rows) if rows else [],
        "cross_fitted_threshold": cross_fitted(rows, seed) if len({r["qid"] for r in rows}) > 1 else [],
        "seconds_per_claim": _mean([r["seconds"] for r in rows if "seconds" in r]),
        "worst": worst_cases(rows),
    }


def _share(rows: Sequence[Row], key: str) -> float | None:
    values = [bool(r[key]) for r in rows if key in r]
    return sum(values) / len(values) if values else None


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def claim_rows(items: Sequence[LabelledItem], scores: Mapping[str, Row]) -> list[dict[str, Any]]:
    """Scored claims in set order, each with ``verbatim``: whether the claim (case and spaces
    folded) occurs word for word in a context the judge sees."""
    rows = []
    for item in items:
        seen = " ".join(visible(item.contexts).lower().split())
        for claim in item.claims:
            if claim.claim_id in scores:
                row = dict(scores[claim.claim_id])
                row["verbatim"] = " ".join(claim.text.lower().split()).rstrip(".") in seen
                rows.append(row)
    return rows
