"""The condition reader against hand labels: what it reads right, what it misses, what it invents.

    medcite bench condition-reader --out docs/results/conditions/reader_accuracy.json

``evals/datasets/condition_labels.jsonl`` holds 120 texts labelled by hand (issue 46): 50
clinician questions of the dev part and 70 lines of dev-part guidelines (with their headings and
lead-in or table header), each with the patient conditions a reader should see (value bands,
ages, sexes, pregnancy, drugs, route / vessel / circulation / episode / setting / type; the
indications read since are not labelled, so not scored). Per
field, precision and recall of ``rag.reading.conditions`` over all texts. A value counts when its
bounds match (a question's point, or a line's range or threshold); its measure is scored apart.
With ``quantulum3`` installed (the ``bench`` extra), the same value recall for it: it reads a
range as its mean and drops comparators, which is why the reader has its own grammar.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rag.reading.conditions import (
    INDICATION,
    Conditions,
    LineContext,
    drugs,
    line_conditions,
    merge,
    question_conditions,
)

LABELS = Path(__file__).resolve().parents[2] / "evals" / "datasets" / "condition_labels.jsonl"


def _bound(x: float | None, default: float) -> float:
    return default if x is None else float(x)


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(
        (math.isinf(x) and math.isinf(y) and x * y > 0) or abs(x - y) <= 0.02
        for x, y in zip(a, b, strict=True)
    )


def read_row(row: dict[str, Any]) -> Conditions:
    if row["kind"] == "question":
        return question_conditions(row["text"])
    headings = tuple(row.get("headings", ()))
    own, headed = line_conditions(LineContext(row["text"], row.get("lead", ""), headings))
    # every drug the line's context names (the judgement then weighs only its subject's)
    named = drugs(" / ".join([*headings, row.get("lead", ""), row["text"]]))
    return dataclasses.replace(merge([own, headed]), drugs=named)


def _sets(conditions: Conditions) -> dict[str, set[Any]]:
    return {
        "sexes": set(conditions.sexes),
        "pregnancy": {conditions.pregnancy} - {""},
        "drugs": {d.split()[0] for d in conditions.drugs},
        # indications came after the labels (issue 59): only the labelled families are scored
        "attributes": {f"{k}:{v}" for k, vs in conditions.attributes.items() if k != INDICATION for v in vs},
    }


def _gold_sets(gold: dict[str, Any]) -> dict[str, set[Any]]:
    return {
        "sexes": set(gold["sexes"]),
        "pregnancy": {gold["pregnancy"]} - {""},
        "drugs": {d.lower().split()[0] for d in gold["drugs"]},
        "attributes": {f"{k}:{v}" for k, vs in gold["attributes"].items() for v in vs},
    }


def _intervals(pairs: Iterable[tuple[float | None, float | None]]) -> list[tuple[float, float]]:
    return [(_bound(lo, -math.inf), _bound(hi, math.inf)) for lo, hi in pairs]


def _match(found: list[tuple[float, float]], wanted: list[tuple[float, float]]) -> tuple[int, int, int]:
    """(true positives, found, wanted), each wanted interval matched at most once."""
    left, hits = list(found), 0
    for w in wanted:
        for i, f in enumerate(left):
            if _same(f, w):
                hits += 1
                del left[i]
                break
    return hits, len(found), len(wanted)


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, list[int]] = {}
    misses: list[dict[str, Any]] = []

    def add(field: str, tp: int, found: int, wanted: int) -> None:
        t = totals.setdefault(field, [0, 0, 0])
        t[0], t[1], t[2] = t[0] + tp, t[1] + found, t[2] + wanted

    for row in rows:
        read, gold = read_row(row), row["gold"]
        values = [(b.low, b.high) for b in read.values]
        wanted = _intervals((v["low"], v["high"]) for v in gold["values"] if v["measure"] != "age")
        add("values", *_match(values, wanted))
        measured = [(b.low, b.high, b.measure) for b in read.values]
        for v in gold["values"]:
            bounds = _intervals([(v["low"], v["high"])])[0]
            named = [m for lo, hi, m in measured if _same((lo, hi), bounds)]
            if named and v["measure"] != "age":
                add("value measures", int(named[0] == v["measure"]), 1, 1)
        add("ages", *_match(list(read.ages), _intervals(map(tuple, gold["ages"]))))
        mine, theirs = _sets(read), _gold_sets(gold)
        for field in mine:
            add(field, len(mine[field] & theirs[field]), len(mine[field]), len(theirs[field]))
        if any(mine[f] != theirs[f] for f in mine) or sorted(values) != sorted(wanted):
            misses.append({"id": row["id"], "text": row["text"][:160], "read": read.describe(), "gold": gold})
    return {
        field: {
            "precision": round(tp / found, 3) if found else None,
            "recall": round(tp / wanted, 3) if wanted else None,
            "found": found,
            "labelled": wanted,
        }
        for field, (tp, found, wanted) in totals.items()
    } | {"rows": len(rows), "rows_with_a_difference": len(misses), "differences": misses}


def quantulum_values(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """quantulum3's value recall on the same labels (a range counts when its bounds are read)."""
    try:
        from quantulum3 import classifier, parser
    except ImportError:
        return None
    classifier.USE_CLF = False  # its classifier is a pickle, loaded only where scikit-learn is installed
    tp = wanted_n = found_n = 0
    for row in rows:
        text = (
            row["text"]
            if row["kind"] == "question"
            else " ".join([*row.get("headings", ()), row.get("lead", ""), row["text"]])
        )
        found = []
        for q in parser.parse(text):
            if q.uncertainty:
                found.append((q.value - q.uncertainty, q.value + q.uncertainty))
            found.append((q.value, q.value))
        wanted = _intervals((v["low"], v["high"]) for v in row["gold"]["values"] if v["measure"] != "age")
        hits, _, n = _match(found, wanted)
        tp, wanted_n, found_n = tp + hits, wanted_n + n, found_n + len(found)
    return {
        "recall": round(tp / wanted_n, 3) if wanted_n else None,
        "quantities_found": found_n,
        "labelled": wanted_n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    reader, quantulum = score(rows), quantulum_values(rows)
    result = {"labels": str(args.labels.name), "reader": reader, "quantulum3_values": quantulum}
    summary = {k: v for k, v in reader.items() if k != "differences"}
    print(json.dumps({"reader": summary, "quantulum3_values": quantulum}, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
