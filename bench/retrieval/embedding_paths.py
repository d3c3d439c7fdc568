"""Faster embedding paths judged by retrieval: bfloat16 products, int8 weights and shorter texts
against float32.

    medcite bench embedding-paths --out docs/results/bench/embedding_paths.json

Paths: ``float32`` (torch, 256 wordpieces), ``bfloat16`` (torch's CPU autocast: matrix products in
bfloat16, sums in float32), ``int8`` (ONNX Runtime dynamic quantisation, one scale per output
channel; ``indexes/dense/onnx_models.py``) and float32 and int8 at 128 wordpieces. Rate: chunks per
second on a seeded sample of default-index chunks, every path in each of ``--rounds`` rounds (order
reversed every other round) in one process. Retrieval: the whole default index and the BioASQ
snippet corpus (a BM25-only ``bench-bioasq-snippets`` index, built once) embedded by each path (kept
in the embedding cache under the path's own key), the questions embedded as the product embeds them
for such an index (``MiniLmEmbedder.matching``: the float ONNX model for float32 and bfloat16, the
int8 one for int8), searched exactly (inner product):

- clinician dev part, answerable questions: the rank of the first answering chunk
  (``training.aboutness.answering``) in the top 30 of dense and of hybrid (the default profile's
  RRF with the index's BM25) -> recall@10 and @30;
- BioASQ Task 11B questions over the snippet corpus: nDCG@10 of dense and of hybrid.

Each path against float32: the paired mean difference per question with a bootstrap 95% interval.
A path passes when every difference is within ``--tolerance`` (0.005); answers (outcomes on the
dev part) are compared with ``medcite bench clinician`` on indexes built with each path.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import machine_info
from core.paths import Paths
from core.types import Hit
from evals.datasets.bioasq import bioasq_rows, load_bioasq_snippets
from evals.datasets.clinician import load_clinician
from evals.metrics.retrieval import ndcg_at_k
from evals.metrics.stats import paired_bootstrap_mean_diff
from indexes import text
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.embedding_cache import embed_cached
from indexes.dense.onnx_models import score_encoded
from indexes.store import LoadedIndex, load_index
from rag.profile import load_profile
from rag.retrieve.hybrid import HybridRetriever
from rag.retrieve.lexical import Bm25Retriever
from rag.retrieve.query import clean_query
from training.aboutness import answering

PATHS: dict[str, dict[str, Any]] = {  # name -> MiniLmEmbedder settings
    "float32": {"precision": "float32", "runtime": "torch"},
    "bfloat16": {"precision": "bfloat16", "runtime": "torch"},
    "int8": {"precision": "int8"},
    "float32-128": {"precision": "float32", "runtime": "torch", "max_tokens": 128},
    "int8-128": {"precision": "int8", "max_tokens": 128},
}
K = 30
SNIPPETS_INDEX = "bench-bioasq-snippets"
BIOASQ_TASK = "Task11B"


class VectorRetriever:
    """Exact inner product over the row-aligned vectors of an index's chunks; questions by ``embedder``."""

    name = "dense"

    def __init__(self, index: LoadedIndex, vectors: np.ndarray, embedder: MiniLmEmbedder) -> None:
        self.index, self.vectors, self.embedder = index, vectors, embedder

    def retrieve(self, query: str, k: int, filters: Any = None) -> list[Hit]:
        scores = self.vectors @ self.embedder.embed([clean_query(query)])[0]
        top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
        rows = top[np.argsort(-scores[top], kind="stable")]
        return [
            Hit(chunk=self.index.chunks.get(int(r)), score=float(scores[r]), rank=n, retriever=self.name)
            for n, r in enumerate(rows, start=1)
        ]


def indexed_texts(index: LoadedIndex) -> list[str]:
    return [text.indexed_text(c.title, c.section, c.text) for c in index.chunks]


def rates(embedders: dict[str, MiniLmEmbedder], texts: Sequence[str], rounds: int) -> dict[str, list[float]]:
    """Chunks per second of each path on ``texts``, every path once per round (order reversed
    every other round, so drift in machine load hits them alike); models loaded beforehand."""
    encoded: dict[str, Any] = {}
    for name, embedder in embedders.items():
        encodings = embedder._tokenizer.encode_batch(list(texts))
        encoded[name] = [(e.ids, e.type_ids) for e in encodings]
        score_encoded(embedder._runner, encoded[name][:8], embedder.batch_size)  # load, warm up
    out: dict[str, list[float]] = {name: [] for name in embedders}
    for n in range(rounds):
        order = list(embedders) if n % 2 == 0 else list(reversed(embedders))
        for name in order:
            start = time.perf_counter()
            score_encoded(embedders[name]._runner, encoded[name], embedders[name].batch_size)
            out[name].append(len(texts) / (time.perf_counter() - start))
            print(f"  rate {name} round {n + 1}: {out[name][-1]:.1f} chunks/s", flush=True)
    return out


def clinician_ranks(index: LoadedIndex, retrievers: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    """Per retriever, the rank of the first answering chunk of each answerable dev question."""
    items = [it for it in load_clinician(part="dev") if it.answerable]
    out: dict[str, dict[str, int | None]] = {name: {} for name in retrievers}
    for name, retriever in retrievers.items():
        for item in items:
            hits = retriever.retrieve(item.question, K)
            out[name][item.qid] = next(
                (n for n, h in enumerate(hits, start=1) if answering(item, h.chunk)), None
            )
    return out


def bioasq_ndcg(paths: Paths, index: LoadedIndex, retrievers: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per retriever, nDCG@10 of each BioASQ Task 11B question over the snippet corpus."""
    task = {str(r["id"]) for r in bioasq_rows(paths.source_data) if r["task"] == BIOASQ_TASK}
    rset = load_bioasq_snippets(paths.source_data / "bioasq_from_mirage")
    qids = sorted(q for q in rset.queries if q in task)
    out: dict[str, dict[str, float]] = {}
    for name, retriever in retrievers.items():
        run: dict[str, list[str]] = {}
        for qid in qids:
            docs = [h.chunk.doc_id for h in retriever.retrieve(rset.queries[qid], K)]
            run[qid] = list(dict.fromkeys(docs))  # a document's first chunk ranks it
        out[name] = dict(zip(qids, ndcg_at_k(run, rset.qrels, 10, qids).tolist(), strict=True))
    return out


def recall_indicators(ranks: dict[str, int | None]) -> dict[str, dict[str, float]]:
    """Per question, whether the answering chunk is in the top 10 and the top 30."""
    return {f"recall@{c}": {q: float(r is not None and r <= c) for q, r in ranks.items()} for c in (10, 30)}


def paired(base: dict[str, float], other: dict[str, float]) -> dict[str, Any]:
    qids = sorted(base)
    a = np.array([base[q] for q in qids])
    b = np.array([other[q] for q in qids])
    diff, low, high = paired_bootstrap_mean_diff(a, b)
    return {
        "float32": round(float(a.mean()), 4),
        "path": round(float(b.mean()), 4),
        "diff": round(diff, 4),
        "ci95": [round(low, 4), round(high, 4)],
        "questions": len(qids),
    }


def measure_path(name: str, paths: Paths, default: LoadedIndex, snippets: LoadedIndex, profile: Any) -> dict:
    embedder = MiniLmEmbedder(**PATHS[name])
    cache = paths.cache_dir / "embeddings"
    values: dict[str, dict[str, float]] = {}
    seconds: dict[str, float | None] = {}
    for label, index, metric in (("clinician-dev", default, "ranks"), ("bioasq-11b", snippets, "ndcg")):
        start = time.perf_counter()
        vectors, reused = embed_cached(embedder, indexed_texts(index), cache, progress=True)
        seconds[label] = round(time.perf_counter() - start, 1) if reused == 0 else None
        dense = VectorRetriever(index, vectors, MiniLmEmbedder.matching(embedder.fingerprint()))
        r = profile.retrieval
        hybrid = HybridRetriever(
            [Bm25Retriever(index), dense], fusion="rrf", rrf_k=r.rrf_k, candidates=r.candidates
        )
        retrievers = {"dense": dense, "hybrid": hybrid}
        if metric == "ranks":
            for kind, ranks in clinician_ranks(index, retrievers).items():
                for key, per_q in recall_indicators(ranks).items():
                    values[f"{label} {kind} {key}"] = per_q
        else:
            for kind, scores in bioasq_ndcg(paths, index, retrievers).items():
                values[f"{label} {kind} ndcg@10"] = scores
        print(f"  {name}: {label} done", flush=True)
    return {"values": values, "embed_seconds": seconds}


def snippet_index(paths: Paths) -> LoadedIndex:
    from rag.indexing import build_from_cli

    print(
        build_from_cli(
            paths, sources=["bioasq-snippets"], name=SNIPPETS_INDEX, dense=None, skip_existing=True
        )
    )
    return load_index(paths.indexes_dir / SNIPPETS_INDEX)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="medcite bench embedding-paths", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("docs/results/bench/embedding_paths.json"))
    parser.add_argument("--paths", nargs="+", choices=sorted(PATHS), default=list(PATHS))
    parser.add_argument("--sample", type=int, default=1500, help="chunks in the rate sample")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--tolerance", type=float, default=0.005)
    args = parser.parse_args(argv)
    paths = Paths.from_env()
    default = load_index(paths.indexes_dir / "default")
    snippets = snippet_index(paths)
    profile = load_profile("default")
    texts = indexed_texts(default)
    sample = [texts[i] for i in np.random.default_rng(3).choice(len(texts), args.sample, replace=False)]
    names = ["float32", *[p for p in args.paths if p != "float32"]]
    speed = rates({n: MiniLmEmbedder(**PATHS[n]) for n in names}, sample, args.rounds)
    measured = {n: measure_path(n, paths, default, snippets, profile) for n in names}
    base = measured["float32"]["values"]
    report: dict[str, Any] = {
        "paths": {},
        "tolerance": args.tolerance,
        "sample": args.sample,
        "rounds": args.rounds,
    }
    for n in names:
        comparisons = {k: paired(base[k], v) for k, v in measured[n]["values"].items()}
        report["paths"][n] = {
            "settings": PATHS[n],
            "chunks_per_s": [round(x, 1) for x in speed[n]],
            "median_speed_vs_float32": round(
                float(np.median(np.array(speed[n]) / np.array(speed["float32"]))), 3
            ),
            "embed_seconds": measured[n]["embed_seconds"],
            "retrieval": comparisons,
            "within_tolerance": all(abs(c["diff"]) <= args.tolerance for c in comparisons.values()),
        }
    report["machine"] = machine_info()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for n, row in report["paths"].items():
        print(
            n,
            row["median_speed_vs_float32"],
            "x;",
            "within" if row["within_tolerance"] else "outside",
            "tolerance",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
