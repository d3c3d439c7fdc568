"""What medcite told each clinician question, by outcome: answer, closest lines, nothing relevant.

    medcite bench clinician --part dev --out RUN.json     # the run (its records carry the outcome)
    medcite bench outcomes RUN.json [--floors] [--against OTHER.json] [--out REPORT.json]

Per kind of question (``evals/datasets/clinician.py``): how many were shown each outcome, with
Wilson 95% intervals. For answerable questions: the key fact in the answer, in the first closest
line, in the closest lines shown, or neither; and how many were told "nothing relevant" while a kept
passage held the key fact (the target is none). ``--floors`` replays the run's closest lines under
each ``[quote] closest_floor`` (below it: nothing relevant), which is how the floor is chosen on the
dev part. ``--against`` pairs two runs of the same questions (another index or setting): the
questions whose outcome, text or kept evidence changed. The seconds per outcome are those the run
recorded (a warm process).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.metrics.choice import wilson_interval

FLOORS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2)
KINDS = ("answerable", "near", "far")


def _share(k: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(k, n) if n else (0.0, 0.0)
    return {
        "count": k,
        "n": n,
        "share": round(k / n, 4) if n else 0.0,
        "wilson95": [round(low, 4), round(high, 4)],
    }


def key_fact_where(record: dict[str, Any]) -> str:
    """Where an answerable question's key fact stood in what medcite showed."""
    closest = record.get("closest") or {}
    if record["shown"] == "answer":
        return "answer" if record["outcome"] in ("correct", "other_source") else "answer_without_it"
    if closest.get("key_first"):
        return "closest_first"
    if closest.get("key_shown"):
        return "closest_later"
    return "neither"


def tally(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: outcomes shown; for answerable questions, where the key fact stood."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        rows = [r for r in records if r["kind"] == kind]
        if not rows:
            continue
        shown = Counter(r["shown"] for r in rows)
        out[kind] = {
            name: _share(shown.get(name, 0), len(rows))
            for name in ("answer", "closest_lines", "nothing_relevant")
        }
        if kind == "answerable":
            where = Counter(key_fact_where(r) for r in rows)
            out[kind]["key_fact"] = {name: _share(k, len(rows)) for name, k in sorted(where.items())}
            kept = [r for r in rows if r.get("key_in_kept")]
            out[kind]["key_in_kept"] = _share(len(kept), len(rows))
            out[kind]["nothing_relevant_while_kept"] = sum(r["shown"] == "nothing_relevant" for r in kept)
            siblings = [r for r in rows if (r.get("closest") or {}).get("sibling_shown")]
            out[kind]["closest_with_a_sibling_line"] = len(siblings)
    return out


def seconds(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Median and largest seconds per outcome shown, as the run recorded them."""
    by: dict[str, list[float]] = {}
    for r in records:
        by.setdefault(r["shown"], []).append(float(r["seconds"]))
    return {
        k: {"n": len(v), "median": round(statistics.median(v), 2), "max": round(max(v), 2)}
        for k, v in by.items()
    }


def with_floor(record: dict[str, Any], floor: float) -> dict[str, Any]:
    """The record as a run with ``closest_floor = floor`` would have shown it (the lines are the
    same; below the floor the outcome is nothing relevant)."""
    best = (record.get("closest") or {}).get("best_p")
    if record["shown"] == "closest_lines" and best is not None and best < floor:
        return {**record, "shown": "nothing_relevant", "closest": None}
    return record


def floors(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per floor: key fact shown (answer or closest) for answerable questions, answerable told
    nothing relevant while a kept passage held the key fact, far and near told nothing relevant."""
    rows = []
    for floor in FLOORS:
        replay = [with_floor(r, floor) for r in records]
        counts = tally(replay)
        answerable = counts.get("answerable", {})
        shown = sum(
            answerable.get("key_fact", {}).get(k, {}).get("count", 0)
            for k in ("answer", "closest_first", "closest_later")
        )
        rows.append(
            {
                "floor": floor,
                "answerable_key_shown": shown,
                "answerable_nothing_while_kept": answerable.get("nothing_relevant_while_kept", 0),
                "near_nothing_relevant": counts.get("near", {}).get("nothing_relevant", {}).get("count", 0),
                "far_nothing_relevant": counts.get("far", {}).get("nothing_relevant", {}).get("count", 0),
            }
        )
    return rows


def best_line(record: dict[str, Any]) -> tuple[float | None, bool]:
    """The probability of the best line a question was shown (its answer's first, or its first
    closest line) and whether that line, taken as the answer, would be right."""
    lines = [x for x in record.get("sentences", ()) if x.get("probability") is not None]
    if record["shown"] == "answer" and lines:
        return float(lines[0]["probability"]), record["outcome"] in ("correct", "other_source")
    closest = record.get("closest") or {}
    right = (
        record["kind"] == "answerable" and bool(closest.get("key_first")) and not closest.get("sibling_shown")
    )
    return closest.get("best_p"), right


def risk_coverage(records: Sequence[dict[str, Any]], step: float = 0.05) -> list[dict[str, Any]]:
    """Per threshold on the best line's probability, the run replayed as if that were the answer
    threshold (the best line shown as the answer): the share answered and the share of those
    right. Lines under the run's own threshold are shown as closest lines in the run, so the
    replay reads their key fact from the first closest line."""
    best = [best_line(r) for r in records]
    rows = []
    for t in [round(x * step, 4) for x in range(int(1 / step) + 1)]:
        answered = [right for p, right in best if p is not None and p >= t]
        rows.append(
            {
                "threshold": t,
                "answered": len(answered),
                "coverage": round(len(answered) / len(records), 4),
                "right_among_answered": round(sum(answered) / len(answered), 4) if answered else None,
            }
        )
    return rows


def paired_changes(base: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per question, what ``other`` (a run of the same questions under another setting) told
    differently from ``base``: the outcome shown, the text, the evidence kept."""
    first, second = {r["qid"]: r for r in base}, {r["qid"]: r for r in other}
    if set(first) != set(second):
        raise SystemExit("the two runs asked different questions; compare runs of the same part")

    def shown(record: dict[str, Any]) -> str:
        return f"{record['outcome']}/{record['shown']}"

    changed = [q for q in first if shown(first[q]) != shown(second[q])]
    return {
        "questions": len(first),
        "outcome_changed": len(changed),
        "outcome_changed_share": round(len(changed) / len(first), 4),
        "text_changed": sum(first[q]["text"] != second[q]["text"] for q in first),
        "kept_evidence_changed": sum(first[q]["evidence"] != second[q]["evidence"] for q in first),
        "counts": {
            "base": dict(Counter(shown(r) for r in first.values())),
            "other": dict(Counter(shown(r) for r in second.values())),
        },
        "changed": [{"qid": q, "base": shown(first[q]), "other": shown(second[q])} for q in changed],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a `medcite bench clinician` result file")
    parser.add_argument("--floors", action="store_true", help="replay the closest lines under each floor")
    parser.add_argument(
        "--against", type=Path, default=None, help="another run of the same part: what it told differently"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    part, records = _records(args.run)
    result: dict[str, Any] = {"run": str(args.run), "part": part, "tally": tally(records)}
    result["seconds"] = seconds(records)
    if args.floors:
        result["floors"] = floors(records)
    result["risk_coverage"] = risk_coverage(records)
    if args.against is not None:
        result["against"] = {"run": str(args.against), **paired_changes(records, _records(args.against)[1])}
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def _records(path: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """A run's part and its records, refused when they carry no outcome."""
    run = json.loads(path.read_text(encoding="utf-8"))
    records = run["records"]
    if not records or not all("shown" in r for r in records):
        raise SystemExit(f"{path} has no outcome per record; rerun it with `medcite bench clinician`")
    return run.get("part"), records


if __name__ == "__main__":
    main()
