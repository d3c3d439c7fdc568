"""Reranking speed on the default index: 30 hybrid candidates per question, trained vs llm reranker.

Guideline and disease-reference chunks run to 200 wordpieces, longer than BioASQ snippets, so
this is the speed a user of the default profile gets. Questions: the ten of
``bench/answers/ask_questions.py`` and 40 LiveQA-Med consumer questions (their NLM summaries), each
reranked once after one warm-up question. The llm reranker (the previous default) is timed on
the first ``--llm-questions`` questions only (tens of seconds each), uncached.

    medcite bench reranker-speed --out docs/results/reranker/speed.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.answers.ask_questions import QUESTIONS
from core.paths import Paths
from rag.indexing import make_retriever, open_index


def percentiles(seconds: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(seconds),
        "p95": float(np.percentile(seconds, 95)),
        "max": max(seconds),
        "n": len(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/reranker/speed.json"))
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--llm-questions", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    from evals.datasets.liveqa import QUESTIONS as LIVEQA
    from evals.datasets.liveqa import read_questions
    from rag.rerank.trained import TrainedReranker

    paths = Paths.from_env()
    liveqa = read_questions(paths.source_data / "medquad" / LIVEQA, "summary")
    questions = list(QUESTIONS) + list(liveqa.values())[:40]
    index, embedder = open_index(paths, "default", with_embedder=True)
    retriever = make_retriever(index, embedder, "hybrid", candidates=args.candidates)
    candidates = [retriever.retrieve(q, args.candidates)[: args.candidates] for q in questions]
    trained = TrainedReranker(threads=args.threads)
    trained.rerank(questions[0], candidates[0])  # load and warm up
    timings: dict[str, list[float]] = {"trained": []}
    for q, hits in zip(questions, candidates, strict=True):
        start = time.perf_counter()
        trained.rerank(q, hits)
        timings["trained"].append(time.perf_counter() - start)
    if args.llm_questions:
        from rag.assemble import make_generator
        from rag.profile import load_profile
        from rag.rerank.llm import LlmRelevanceReranker

        llm = LlmRelevanceReranker(make_generator(load_profile("default").generator, paths))
        timings["llm"] = []
        for q, hits in list(zip(questions, candidates, strict=True))[: args.llm_questions]:
            start = time.perf_counter()
            llm.rerank(q, hits)
            timings["llm"].append(time.perf_counter() - start)
    result: dict[str, Any] = {
        "index": "default",
        "candidates": args.candidates,
        "questions": len(questions),
        "threads": args.threads,
        "seconds": {k: percentiles(v) for k, v in timings.items()},
        "mean_passage_chars": float(np.mean([len(h.chunk.text) for hits in candidates for h in hits])),
    }
    if "llm" in timings:
        result["speedup_p50"] = result["seconds"]["llm"]["p50"] / result["seconds"]["trained"]["p50"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result["seconds"], indent=1))
    index.close()


if __name__ == "__main__":
    main()
