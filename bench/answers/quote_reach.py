"""Where quoted answers fire on the abstention benchmarks, without generating anything.

    medcite bench quote-reach --out docs/results/eval/quote_reach.json

The quote path (``rag/reading/quote_model.py``, profile ``[quote]``) answers before generation, so on
the answerable/unanswerable and near-miss sets (test parts) it can only change a question's
outcome where it fires. For each question this asks the profile's pipeline for its evidence and
its quoted answer, and counts: unanswerable questions given a quoted answer (each one an
abstention lost), answerable ones answered by quoting (and whether a quote cites the document of
the question's reference answer, when the set names it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from core.paths import Paths
from evals.datasets import load_freetext
from rag.assemble import assemble
from rag.profile import load_profile

DATASETS = ("abstention-default", "abstention-near-miss")


def reach(pipeline: Any, items: list[Any]) -> dict[str, Any]:
    rows = []
    for item in items:
        answer = pipeline.quote(item.question)
        rows.append(
            {
                "qid": item.qid,
                "answerable": item.answerable,
                "quoted": answer is not None,
                "text": answer.text if answer else None,
                "cited": [c.chunk_id for c in answer.citations] if answer else [],
            }
        )
    counts = {
        kind: {
            "n": sum(1 for r in rows if r["answerable"] is want),
            "quoted": sum(1 for r in rows if r["answerable"] is want and r["quoted"]),
        }
        for kind, want in (("answerable", True), ("unanswerable", False))
    }
    return {"counts": counts, "records": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    paths = Paths.from_env()
    profile = load_profile(args.profile)
    pipeline = assemble(profile, paths).pipeline
    out: dict[str, Any] = {"profile": args.profile, "quote": profile.quote.model_dump()}
    for name in DATASETS:
        start = time.perf_counter()
        out[name] = reach(pipeline, load_freetext(name, paths))
        print(name, json.dumps(out[name]["counts"]), f"{time.perf_counter() - start:.0f} s", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
