"""What the full chain tells questions about nothing in the default corpus, per kind.

    medcite bench outside-outcomes --part test-2 --out docs/results/clinician/outside_test2.json
    medcite bench outside-outcomes --questions bench/questions/nothing_in_the_sources.txt \
        --out docs/results/clinician/nothing_in_the_sources.json

Each question of an outside part (``evals/datasets/outside.py``) or of a file (one a line) goes
through the profile's whole chain, generation included; the count of each outcome per kind
(``answer``, ``closest_lines``, ``nothing_relevant``), the question's P(medical)
(``rag/reading/clinical.py``) and every shown line's text are written. Every outcome but
"nothing relevant" is a failure here: none of these questions is answered by the sources.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from core.paths import Paths
from evals.datasets.outside import load_outside
from rag.assemble import assemble
from rag.profile import load_profile


def questions(part: str | None, file: Path | None) -> list[tuple[str, str]]:
    """(kind, question) pairs of the outside part or the file (kind "listed")."""
    if file is not None:
        lines = file.read_text(encoding="utf-8").splitlines()
        return [("listed", line.strip()) for line in lines if line.strip()]
    return [(q.kind, q.question) for q in load_outside(part)]  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--part", choices=("dev", "test", "test-2"))
    which.add_argument("--questions", type=Path, help="a file of questions, one a line")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    asked = questions(args.part, args.questions)
    assembled = assemble(load_profile(args.profile), Paths.from_env())
    pipeline, rows = assembled.pipeline, []
    try:
        for kind, question in tqdm(asked, desc="asking", unit="question"):
            answer = pipeline.answer(question)
            p = pipeline.scope.probability(question) if pipeline.scope is not None else None
            rows.append(
                {
                    "kind": kind,
                    "question": question,
                    "outcome": answer.outcome,
                    "p_medical": p,
                    "shown": [c.quote for c in answer.citations],
                }
            )
    finally:
        assembled.close()
    tally: dict[str, Counter[str]] = {}
    for row in rows:
        tally.setdefault(row["kind"], Counter())[row["outcome"]] += 1
    summary: dict[str, Any] = {kind: dict(counts) for kind, counts in sorted(tally.items())}
    shown_anything = sum(1 for row in rows if row["outcome"] != "nothing_relevant")
    out = {
        "part": args.part,
        "questions_file": str(args.questions) if args.questions else None,
        "profile": args.profile,
        "questions": len(rows),
        "shown_anything": shown_anything,
        "by_kind": summary,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=1))
    for row in rows:
        if row["outcome"] != "nothing_relevant":
            print(f"- [{row['kind']}] {row['question']} -> {row['outcome']}: {row['shown'][:1]}")


if __name__ == "__main__":
    main()
