"""Choose where the local model judges quotes (``rag/check/quote_judge.py``), on the dev part.

    medcite train quote-judge [--profile default] [--out docs/results/clinician/quote_judge_dev.json]

Every dev question's best sentences are scored by the quote model fitted without its guideline
folder's fold (``training.quotes.cross_validated_models``, so no question is scored by a model
that saw it); for each question whose best line reaches ``LOWEST`` the generator's P(yes) for
the lines that would be shown is read (cached in ``DATA_DIR/cache/quote-judge-dev-PROMPT.json``,
named by a hash of the judge's prompt, so a rerun asks nothing again and a new wording asks
afresh). The grid is the quote model's floor (from which the judge is asked)
x the judge's threshold, and whether confident quotes (at or over the quote threshold) must
pass the judge too; the setting is chosen as the quote model's was (``training.quotes.choose``:
correct - 3 x wrong among settings abstaining on >= 95% of near and every far question). The
test part is never read here.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths
from evals.datasets.clinician import FROZEN_SHA256, file_sha256
from rag.assemble import make_generator
from rag.check.quote_judge import QuoteJudge, prompt_id
from rag.check.quotes import best_quotes
from rag.profile import load_profile
from training.quotes import choose, cross_validated_models, dev_rows, outcomes

LOWEST = 0.15
FLOORS = tuple(round(f, 2) for f in np.arange(LOWEST, 0.451, 0.05))
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.3, 0.951, 0.05))
OUT = Path("docs/results/clinician/quote_judge_dev.json")


def judged_rows(profile_name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per dev question: kind, the quote model's best probability (cross-validated), what
    quoting would score, and the judge's P(yes) where the best reaches ``LOWEST``."""
    paths = Paths.from_env()
    dev, hits, rows = dev_rows(profile_name, load_profile(profile_name).quote.pool())
    count = dev.profile.quote.sentences
    judge = QuoteJudge(make_generator(dev.profile.generator, paths), threshold=0.5, floor=LOWEST)
    cache_path = paths.cache_dir / f"quote-judge-dev-{prompt_id()}.json"  # one file per prompt wording
    cache: dict[str, float] = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    out, start = [], time.perf_counter()
    models = cross_validated_models(rows)
    for n, (item, found, model) in enumerate(models.values(), start=1):
        best = best_quotes(found, model, count)
        p = best[0].probability if best else 0.0
        row = {
            "qid": item.qid,
            "kind": item.kind,
            "p": round(p, 4),
            "quoted": outcomes(item, best, hits[item.qid], 0.0),
        }
        if p >= LOWEST:
            key = f"{item.qid}:{'|'.join(q.hit.chunk.chunk_id + str(q.hit.chunk.start) for q in best)}"
            if key not in cache:
                cache[key] = round(judge.probability(item.question, best), 4)
                cache_path.parent.mkdir(parents=True, exist_ok=True)
                cache_path.write_text(json.dumps(cache))
                print(
                    f"[{n}/{len(models)} {time.perf_counter() - start:5.0f}s] p={p:.2f} "
                    f"judge={cache[key]:.2f} {row['quoted']}",
                    flush=True,
                )
            row["judge"] = cache[key]
        out.append(row)
    return out, {"count": count, "quote_threshold": dev.profile.quote.threshold}


def curve(rows: list[dict[str, Any]], quote_threshold: float) -> list[dict[str, Any]]:
    """Per (floor, judge threshold, judge confident quotes too): the dev outcomes."""
    table = []
    for floor, threshold, veto in itertools.product(FLOORS, THRESHOLDS, (False, True)):
        tally: dict[str, dict[str, int]] = {}
        for row in rows:
            confident = row["p"] >= quote_threshold
            judged = row.get("judge", 0.0) >= threshold
            shown = (confident and (judged or not veto)) or (floor <= row["p"] < quote_threshold and judged)
            got = row["quoted"] if shown else "abstained"
            kind = tally.setdefault(row["kind"], {})
            kind[got] = kind.get(got, 0) + 1
        table.append({"floor": floor, "threshold": threshold, "veto": veto, **tally})
    return table


def chosen(table: list[dict[str, Any]]) -> dict[str, Any]:
    """``training.quotes.choose``'s rule; ties go to no veto, the higher floor (fewer questions
    judged), then the higher threshold."""
    ranked = [{**row, "count": 1, "also": (-float(row["veto"]), row["floor"])} for row in table]
    best = choose(ranked)
    return {k: v for k, v in best.items() if k not in ("count", "also")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows, setting = judged_rows(args.profile)
    if setting["quote_threshold"] is None:
        raise SystemExit(f"profile {args.profile!r} does not quote ([quote] threshold unset)")
    table = curve(rows, setting["quote_threshold"])
    baseline = curve(
        [{**r, "judge": 1.0 if r["p"] >= setting["quote_threshold"] else 0.0} for r in rows],
        setting["quote_threshold"],
    )[0]
    out = {
        "data": "evals/datasets/clinician_questions.jsonl, dev part only",
        "data_sha256": file_sha256(),
        "frozen_sha256": FROZEN_SHA256,
        "profile": args.profile,
        **setting,
        "without_judge": baseline,
        "chosen": chosen(table),
        "curve": table,
        "rows": rows,
        "command": "medcite train quote-judge",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print("without the judge:", json.dumps(baseline))
    print("chosen on dev:", json.dumps(out["chosen"]))


if __name__ == "__main__":
    main()
