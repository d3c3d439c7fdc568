"""Robustness metrics: each perturbed item against its original, per condition, and whether
retrieval makes answers more or less robust (RAG's flips against closed-book's, on the same items).

For a condition and a perturbed set (``medqa~drug-names``), over the items both records exist for:
accuracy on the originals and on the copies with the paired bootstrap CI of the difference; the
flip rate, the share of items whose chosen *option* changed (a letter that moved with its option
under shuffling is the same answer), with a Wilson CI; right->wrong and wrong->right counts with
the exact McNemar p. A missing answer counts as wrong, and as an answer of its own for flips.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from evals.metrics.choice import wilson_interval
from evals.metrics.stats import mcnemar_exact, paired_bootstrap_diff
from evals.records import ItemRecord
from evals.robustness import base_dataset

Key = tuple[str, str, str]  # (condition, dataset, qid)


def answer_changed(original: ItemRecord, perturbed: ItemRecord) -> bool:
    """Did the copy's answer pick another option than the original's (letters mapped back)?"""
    option_map = perturbed.extra.get("option_map") or {}
    back = option_map.get(perturbed.pred, perturbed.pred) if perturbed.pred is not None else None
    return back != original.pred


def _pairs(records: Sequence[ItemRecord]) -> dict[tuple[str, str], list[tuple[ItemRecord, ItemRecord]]]:
    """(condition, perturbed set) -> [(original record, perturbed record)] paired by qid."""
    by_key: dict[Key, ItemRecord] = {
        (r.condition, r.dataset, r.qid): r for r in records if r.gold is not None
    }
    out: dict[tuple[str, str], list[tuple[ItemRecord, ItemRecord]]] = defaultdict(list)
    for (cond, ds, qid), record in sorted(by_key.items()):
        origin, perturbation = base_dataset(ds)
        original = by_key.get((cond, origin, qid))
        if perturbation is not None and original is not None:
            out[(cond, ds)].append((original, record))
    return out


def _rate(count: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(count, n) if n else (0.0, 1.0)
    return {
        "count": count,
        "n": n,
        "rate": round(count / n, 4) if n else None,
        "ci": [round(low, 4), round(high, 4)],
    }


def pair_metrics(pairs: Sequence[tuple[ItemRecord, ItemRecord]], n_originals: int) -> dict[str, Any]:
    a = np.array([bool(o.correct) for o, _ in pairs], dtype=np.int8)
    b = np.array([bool(p.correct) for _, p in pairs], dtype=np.int8)
    diff, low, high = paired_bootstrap_diff(a, b)
    right_to_wrong = int(np.sum((a == 1) & (b == 0)))
    wrong_to_right = int(np.sum((a == 0) & (b == 1)))
    return {
        "n": len(pairs),
        "not_applicable": max(n_originals - len(pairs), 0),
        "accuracy_original": round(float(a.mean()), 4),
        "accuracy_perturbed": round(float(b.mean()), 4),
        "diff": round(diff, 4),
        "diff_ci": [round(low, 4), round(high, 4)],
        "flips": _rate(sum(answer_changed(o, p) for o, p in pairs), len(pairs)),
        "right_to_wrong": right_to_wrong,
        "wrong_to_right": wrong_to_right,
        "mcnemar_p": mcnemar_exact(right_to_wrong, wrong_to_right),
    }


def retrieval_effect(
    rag: Sequence[tuple[ItemRecord, ItemRecord]], closed: Sequence[tuple[ItemRecord, ItemRecord]]
) -> dict[str, Any]:
    """Flips with retrieval against flips closed-book, on the items both have (McNemar on flips)."""
    cb = {o.qid: answer_changed(o, p) for o, p in closed}
    shared = [(cb[o.qid], answer_changed(o, p)) for o, p in rag if o.qid in cb]
    only_cb = sum(c and not r for c, r in shared)
    only_rag = sum(r and not c for c, r in shared)
    return {
        "n": len(shared),
        "flips_closed_book": _rate(sum(c for c, _ in shared), len(shared)),
        "flips_rag": _rate(sum(r for _, r in shared), len(shared)),
        "only_closed_book_flipped": only_cb,
        "only_rag_flipped": only_rag,
        "mcnemar_p": mcnemar_exact(only_cb, only_rag),
    }


def robustness_metrics(records: Sequence[ItemRecord], baseline: str = "closed-book") -> dict[str, Any]:
    """``{"by_condition": {cond: {set~perturbation: metrics}}, "retrieval_effect": {rag cond:
    {set~perturbation: ...}}}``; empty when the run has no perturbed sets."""
    pairs = _pairs(records)
    originals: dict[tuple[str, str], int] = defaultdict(int)
    for r in records:
        if r.gold is not None and base_dataset(r.dataset)[1] is None:
            originals[(r.condition, r.dataset)] += 1
    by_condition: dict[str, dict[str, Any]] = defaultdict(dict)
    effect: dict[str, dict[str, Any]] = defaultdict(dict)
    for (cond, ds), rows in pairs.items():
        by_condition[cond][ds] = pair_metrics(rows, originals[(cond, base_dataset(ds)[0])])
        if cond != baseline and (baseline, ds) in pairs:
            effect[cond][ds] = retrieval_effect(rows, pairs[(baseline, ds)])
    if not by_condition:
        return {}
    return {"by_condition": dict(by_condition), "retrieval_effect": dict(effect)}
