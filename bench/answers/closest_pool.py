"""Which passages the closest lines should come from, measured on the clinician dev part.

    medcite bench closest-pool --out docs/results/clinician/closest_pool_dev.json

When no line is confirmed, medcite shows the closest lines (``rag/answer/outcomes.py``). They come
from a pool of passages: the kept ones (evidence threshold and ``keep``), or the ``n`` most
relevant candidates from a lower floor. For each pool of a grid, for the answerable dev
questions that keep at least one passage (the others are told "nothing relevant"), this counts
the key fact in the best line, in the best three, and the answering passage in the pool.
Lines are ranked by quote models cross-validated by guideline folder (each folder's questions
ranked by a model fitted without them, ``training/quotes.py``); candidates and their relevance
come from the cached dev evidence, so nothing is retrieved or generated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from evals.datasets.clinician import key_fact_given
from rag.reading.lines import line_words
from rag.reading.question import ReadQuestion
from rag.reading.quote_model import closest_lines, score_lines
from training.aboutness import answering
from training.quotes import cross_validated_models, dev_rows, kept_hits

POOLS = ((0.49, 4), (0.2, 8), (0.0, 10))  # the first is the kept passages (default profile)


def measure(
    dev: Any, models: dict[str, Any], threshold: float, keep: int, kept: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Key fact in the first / best three closest lines, and the answering passage in the pool;
    ``kept``: the sentences of each question's kept passages, already read (the first pool)."""
    verify = dev.profile.verify
    scorer = dev.assembled.pipeline.reranker
    gate = dev.profile.rerank.threshold or 0.0
    counts = {"questions": 0, "in_pool": 0, "first": 0, "three": 0}
    for item in dev.items:
        if not item.answerable or not any(p >= gate for _, p in dev.candidates[item.question]):
            continue  # nothing kept: "nothing relevant" whatever the pool
        hits = kept_hits(item, dev.candidates, dev.chunk_of, threshold, keep, by_relevance=kept is None)
        found = (
            kept[item.qid]
            if kept is not None
            else score_lines(ReadQuestion.read(item.question, lambda: dev.vocabulary), hits, scorer, verify)
        )
        lines = closest_lines(found, models[item.qid][2], 3)
        texts = [line_words(q) for q in lines]
        counts["questions"] += 1
        counts["in_pool"] += any(answering(item, h.chunk) for h in hits)
        counts["first"] += bool(texts) and key_fact_given(item, texts[0])
        counts["three"] += key_fact_given(item, " ".join(texts))
    return {"threshold": threshold, "keep": keep, **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    dev, _, rows = dev_rows(args.profile, None)
    models = cross_validated_models(rows)
    grid = []
    kept = {item.qid: found for item, found, _ in rows}
    for n, (threshold, keep) in enumerate(POOLS):
        grid.append(measure(dev, models, threshold, keep, kept if n == 0 else None))
        print(json.dumps(grid[-1]), flush=True)
    out = {"part": "dev", "profile": args.profile, "grid": grid}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
