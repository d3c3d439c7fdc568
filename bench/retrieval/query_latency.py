"""Query latency of bm25, dense (query embedding included) and hybrid retrieval on a built index.

Queries are real questions: MedQuAD consumer questions or BioASQ questions, sampled with a
seed. Modes run interleaved per query so machine noise hits them alike. Writes JSON.

    medcite bench query-latency --index orphanet-medquad --queries medquad --n 200 \
        --out docs/results/query_latency_orphanet_medquad.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path

import numpy as np

from core.paths import Paths
from rag.indexing import make_retriever, open_index

MODES = ("bm25", "dense", "hybrid")


def sample_questions(paths: Paths, dataset: str, n: int, seed: int) -> list[str]:
    if dataset == "medquad":
        with gzip.open(paths.source_data / "medquad" / "medquad_qa.jsonl.gz", "rt") as fh:
            pool = sorted({json.loads(line)["question"] for line in fh})
    elif dataset == "bioasq":
        with (paths.source_data / "bioasq_from_mirage" / "questions.jsonl").open() as fh:
            pool = sorted({json.loads(line)["body"] for line in fh})
    else:
        raise SystemExit(f"unknown query set {dataset!r}; choose medquad or bioasq")
    return random.Random(seed).sample(pool, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--queries", default="medquad")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    paths = Paths.from_env()
    t0 = time.perf_counter()
    index, embedder = open_index(paths, args.index, with_embedder=True)
    load_seconds = time.perf_counter() - t0
    retrievers = {mode: make_retriever(index, embedder, mode) for mode in MODES}
    questions = sample_questions(paths, args.queries, args.n, args.seed)
    for q in questions[:5]:  # warm-up: model load, page cache
        for r in retrievers.values():
            r.retrieve(q, args.k)
    timings: dict[str, list[float]] = {m: [] for m in MODES}
    for q in questions:
        for mode, retriever in retrievers.items():
            start = time.perf_counter()
            retriever.retrieve(q, args.k)
            timings[mode].append(1000 * (time.perf_counter() - start))
    summary = {
        mode: {
            "median_ms": round(float(np.median(t)), 2),
            "p95_ms": round(float(np.percentile(t, 95)), 2),
            "mean_ms": round(float(np.mean(t)), 2),
        }
        for mode, t in timings.items()
    }
    for mode, row in summary.items():
        print(f"{mode:>6}: median {row['median_ms']:.1f} ms, p95 {row['p95_ms']:.1f} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "index": args.index,
                "chunks": index.manifest["counts"]["chunks"],
                "dense_kind": (index.manifest["dense"] or {}).get("kind"),
                "queries": f"{args.n} {args.queries} questions, seed {args.seed}",
                "k": args.k,
                "index_load_seconds_incl_checksums_and_model": round(load_seconds, 2),
                "summary": summary,
                "raw_ms": {m: [round(x, 3) for x in t] for m, t in timings.items()},
            },
            indent=1,
        )
        + "\n"
    )
    index.close()


if __name__ == "__main__":
    main()
