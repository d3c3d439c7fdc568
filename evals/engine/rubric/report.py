"""The rubric part of metrics.json and report.md: arms, paired differences, tags, judge agreement.

Scores are recomputed from each record's grades (:mod:`evals.metrics.rubric`): an example with an
ungraded criterion, or whose reply failed, has no score and is counted, never dropped silently.
Every arm is paired with the reference arm (``rubric/closed-book`` when the run has it, else its
first arm) over the examples both scored. Judge agreement pools, per criterion kind, every
criterion graded by a matcher and by the judge; a kappa under :data:`KAPPA_FLOOR` is a warning
at the top of the section.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from evals.metrics.rubric import agreement, example_score, mean_interval, paired_scores, tag_scores
from evals.records import ItemRecord

PREFIX = "rubric/"
REFERENCE = "rubric/closed-book"
KAPPA_FLOOR = 0.6


def record_score(record: ItemRecord) -> float | None:
    grades = record.extra.get("grades") or []
    if record.error or not grades or any(g.get("met") is None for g in grades):
        return None
    return example_score([g["points"] for g in grades], [bool(g["met"]) for g in grades])


def record_tags(record: ItemRecord) -> dict[str, float]:
    """The example's score per tag; none for a reply without a score."""
    if record_score(record) is None:
        return {}
    grades = record.extra["grades"]
    points, met = [g["points"] for g in grades], [bool(g["met"]) for g in grades]
    return tag_scores(points, met, [g.get("tags", []) for g in grades], record.extra.get("example_tags", []))


def _interval(values: Sequence[float]) -> dict[str, Any] | None:
    if not values:
        return None
    m = mean_interval(values)
    return {"n": m.n, "mean": m.mean, "ci": [m.low, m.high]}


def _paired(a: dict[str, float], b: dict[str, float]) -> dict[str, Any] | None:
    shared = sorted(a.keys() & b.keys())
    if not shared:
        return None
    p = paired_scores([a[q] for q in shared], [b[q] for q in shared])
    return {
        "n": p.n,
        "mean_a": p.mean_a,
        "mean_b": p.mean_b,
        "diff": p.diff,
        "diff_ci": [p.low, p.high],
        "help": p.help,
        "harm": p.harm,
        "ties": p.ties,
        "unpaired": len(a.keys() ^ b.keys()),
    }


def _arm(rows: list[ItemRecord]) -> dict[str, Any]:
    scores = [s for s in map(record_score, rows) if s is not None]
    return {
        "n": len(rows),
        "scored": len(scores),
        "failed": sum(r.error is not None for r in rows),
        "ungraded": sum(r.error is None and record_score(r) is None for r in rows),
        "modes": dict(Counter(str(r.extra.get("mode", "?")) for r in rows if r.error is None)),
        "score": _interval(scores),
        "reply_seconds": round(sum(r.latency_s for r in rows), 1),  # what each part of the run cost
        "judge_seconds": round(sum(float(r.extra.get("judge_seconds") or 0.0) for r in rows), 1),
        "judge_calls": sum(int(r.extra.get("judge_calls") or 0) for r in rows),
    }


def _tags(rows: list[ItemRecord], ref_rows: list[ItemRecord] | None) -> dict[str, Any]:
    per: dict[str, dict[str, float]] = {}
    for r in rows:
        for tag, value in record_tags(r).items():
            per.setdefault(tag, {})[r.qid] = value
    ref: dict[str, dict[str, float]] = {}
    for r in ref_rows or []:
        for tag, value in record_tags(r).items():
            ref.setdefault(tag, {})[r.qid] = value
    out = {}
    for tag in sorted(per):
        entry: dict[str, Any] = {"score": _interval(list(per[tag].values()))}
        if ref_rows is not None:
            entry["paired"] = _paired(ref.get(tag, {}), per[tag])
        out[tag] = entry
    return out


def _agreement(rows: list[ItemRecord]) -> dict[str, Any]:
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    unparsable: Counter[str] = Counter()
    for r in rows:
        for g in r.extra.get("grades") or []:
            if g.get("by") == "judge" or "judge_met" not in g:
                continue
            if g["judge_met"] is None:
                unparsable[g["kind"]] += 1
            else:
                pairs.setdefault(g["kind"], []).append((bool(g["met"]), bool(g["judge_met"])))
    out = {}
    for kind in sorted(pairs.keys() | unparsable.keys()):
        got = pairs.get(kind, [])
        entry: dict[str, Any] = {"n": len(got), "unparsable": unparsable[kind]}
        if got:
            a = agreement([m for m, _ in got], [j for _, j in got])
            kappa = None if math.isnan(a.kappa) else a.kappa
            entry.update(both=a.both, matcher_only=a.only_a, judge_only=a.only_b, neither=a.neither)
            entry.update(raw=a.raw, kappa=kappa)
        out[kind] = entry
    return out


def rubric_metrics(records: list[ItemRecord]) -> dict[str, Any]:
    """Per dataset: each arm's score, each arm paired with the reference, per-tag scores (with
    the paired difference), and judge agreement per criterion kind; ``{}`` without rubric records."""
    rows = [r for r in records if r.condition.startswith(PREFIX)]
    out: dict[str, Any] = {}
    for ds in dict.fromkeys(r.dataset for r in rows):
        arms: dict[str, list[ItemRecord]] = {}
        for r in rows:
            if r.dataset == ds:
                arms.setdefault(r.condition, []).append(r)
        ref = REFERENCE if REFERENCE in arms else next(iter(arms))
        ref_scores = {r.qid: s for r in arms[ref] if (s := record_score(r)) is not None}
        paired = {}
        for name, arm_rows in arms.items():
            if name != ref:
                scores = {r.qid: s for r in arm_rows if (s := record_score(r)) is not None}
                paired[name] = _paired(ref_scores, scores)
        out[ds] = {
            "reference": ref,
            "arms": {name: _arm(arm_rows) for name, arm_rows in arms.items()},
            "paired": paired,
            "tags": {n: _tags(a, None if n == ref else arms[ref]) for n, a in arms.items()},
            "agreement": _agreement([r for a in arms.values() for r in a]),
        }
    return out


def warnings(rubric: dict[str, Any]) -> list[str]:
    """One line per criterion kind whose judge agrees with its matcher under the floor."""
    lines = []
    for ds, entry in rubric.items():
        for kind, a in entry["agreement"].items():
            if a.get("kappa") is not None and a["kappa"] < KAPPA_FLOOR:
                lines.append(
                    f"**Warning** ({ds}, {kind}): the judge agrees with the deterministic matcher at "
                    f"kappa {a['kappa']:.2f} < {KAPPA_FLOOR} (raw {100 * a['raw']:.0f}% over {a['n']}): do "
                    "not trust its verdicts on criteria without a matcher; plug a stronger judge "
                    "([rubric_judge] generator = an OpenAI-compatible endpoint, docs/evaluation.md)."
                )
    return lines
