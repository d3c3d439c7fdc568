"""Choose the default profile's evidence threshold on the dev part of the abstention set.

The trained reranker's threshold in its manifest (0.35) maximises passage-level F1 on BioASQ
abstracts. The evidence gate asks another question on another corpus: does any of the default
index's passages answer this question at all? So it is chosen here, on ``abstention-default-dev``
(100 answerable, 100 unanswerable questions sharing no disease, drug or question with the test
part the report uses): for each question, the best calibrated P(relevant) among the hybrid top
30 reranked; for each threshold, the share of answerable questions that keep evidence and of
unanswerable ones that keep none. The choice: the highest threshold that keeps evidence for at
least 95% of answerable dev questions (the support gate after generation is the second line
against unanswerable ones). Writes ``docs/results/abstention/evidence_threshold_dev.json``.

    medcite bench evidence-threshold
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np
from tqdm import tqdm

from core.paths import Paths
from evals.datasets import load_freetext
from rag.indexing import make_retriever, open_index
from rag.profile import load_profile
from rag.rerank.trained import TrainedReranker

GRID = [round(0.01 * i, 2) for i in range(1, 61)]
KEEP_ANSWERABLE = 0.95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("docs/results/abstention/evidence_threshold_dev.json")
    )
    args = parser.parse_args()
    paths = Paths.from_env()
    profile = load_profile("default")
    items = load_freetext("abstention-default-dev", paths)
    index, embedder = open_index(paths, profile.index, with_embedder=True)
    try:
        retriever = make_retriever(
            index,
            embedder,
            profile.retrieval.mode,
            fusion=profile.retrieval.fusion,
            candidates=profile.retrieval.candidates,
        )
        reranker = TrainedReranker()
        best: dict[str, float] = {}
        for item in tqdm(items, desc="dev questions", unit="q"):
            hits = retriever.retrieve(item.question, profile.rerank.candidates)
            best[item.qid] = max((h.score for h in reranker.rerank(item.question, hits)), default=0.0)
    finally:
        index.close()
    yes = np.array([best[i.qid] for i in items if i.answerable])
    no = np.array([best[i.qid] for i in items if not i.answerable])
    table = [
        {
            "threshold": t,
            "answerable_keep_evidence": float(np.mean(yes >= t)),
            "unanswerable_keep_none": float(np.mean(no < t)),
        }
        for t in GRID
    ]
    chosen = max(
        (row for row in table if row["answerable_keep_evidence"] >= KEEP_ANSWERABLE),
        key=lambda row: row["threshold"],
        default=table[0],
    )
    result = {
        "dataset": "abstention-default-dev",
        "answerable": len(yes),
        "unanswerable": len(no),
        "rule": f"highest threshold keeping evidence for >= {KEEP_ANSWERABLE:.0%} of answerable dev "
        "questions",
        "chosen": chosen,
        "best_probability_quantiles": {
            "answerable": {q: float(np.quantile(yes, q / 100)) for q in (5, 10, 25, 50)},
            "unanswerable": {q: float(np.quantile(no, q / 100)) for q in (50, 75, 90, 95)},
        },
        "table": table,
        "environment": {"python": platform.python_version(), "machine": platform.machine()},
        "command": "medcite bench evidence-threshold",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("chosen", "best_probability_quantiles")}, indent=1))


if __name__ == "__main__":
    main()
