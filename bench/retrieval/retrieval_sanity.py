"""Retrieval sanity on real data: recall@10 of bm25, dense and RRF on BioASQ gold snippets.

Builds (or reuses) the index ``bioasq-snippets`` from ``$MEDCITE_SOURCE_DATA/bioasq_from_mirage``,
samples questions that have snippet judgements with a fixed seed, retrieves with each mode and
scores snippet-level recall@10 against ``qrels_snippets.tsv``. Writes a JSON result file.

    medcite bench retrieval-sanity --questions 200 --seed 0 --out docs/results/bioasq_recall_sanity.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path

from core.paths import Paths
from corpora.sources.bioasq import qrels_doc_id
from evals.metrics.retrieval import recall_at_k
from rag.indexing import build_from_cli, make_retriever, open_index
from rag.protocols import Retriever


def load_qrels(folder: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (folder / "qrels_snippets.tsv").open() as fh:
        next(fh)
        for line in fh:
            qid, sid, grade = line.rstrip("\n").split("\t")
            qrels[qid][qrels_doc_id(sid)] = int(grade)
    return dict(qrels)


def load_questions(folder: Path, qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    """Question id -> text, for the questions that have snippet judgements."""
    questions = {}
    with (folder / "questions.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            if row["id"] in qrels:
                questions[row["id"]] = row["body"]
    return questions


def score_mode(
    mode: str,
    retriever: Retriever,
    questions: dict[str, str],
    sample: list[str],
    qrels: dict[str, dict[str, int]],
    k: int,
) -> dict[str, float]:
    """Document recall@k (the first k distinct documents of the top 3k chunks) and median latency of
    one retrieval mode over ``sample``; printed as well."""
    run: dict[str, list[str]] = {}
    latencies = []
    for qid in sample:
        start = time.perf_counter()
        hits = retriever.retrieve(questions[qid], 3 * k)
        latencies.append(time.perf_counter() - start)
        run[qid] = list(dict.fromkeys(h.chunk.doc_id for h in hits))[:k]
    recall = recall_at_k(run, qrels, k, sample)
    result = {
        f"recall@{k}": round(float(recall.mean()), 4),
        "median_latency_ms": round(1000 * statistics.median(latencies), 2),
    }
    print(
        f"{mode:>6}: recall@{k} = {recall.mean():.4f}  "
        f"median latency {1000 * statistics.median(latencies):.1f} ms"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("docs/results/bioasq_recall_sanity.json"))
    args = parser.parse_args()

    paths = Paths.from_env()
    folder = paths.source_data / "bioasq_from_mirage"
    t0 = time.perf_counter()
    summary = build_from_cli(paths, sources=["bioasq-snippets"], name="bioasq-snippets", skip_existing=True)
    build_seconds = time.perf_counter() - t0
    qrels = load_qrels(folder)
    questions = load_questions(folder, qrels)
    sample = sorted(random.Random(args.seed).sample(sorted(questions), args.questions))

    index, embedder = open_index(paths, "bioasq-snippets", with_embedder=True)
    results: dict[str, dict[str, float]] = {}
    for mode in ("bm25", "dense", "hybrid"):
        retriever = make_retriever(index, embedder, mode)
        results[mode] = score_mode(mode, retriever, questions, sample, qrels, args.k)
    index.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "dataset": "BioASQ Task B 2019-2023 gold snippets (bioasq_from_mirage)",
                "corpus_chunks": index.manifest["counts"]["chunks"],
                "questions": args.questions,
                "seed": args.seed,
                "k": args.k,
                "index_build": summary,
                "build_seconds": round(build_seconds, 1),
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
