"""The MiniLM models in torch vs ONNX Runtime, on the default index: same numbers, how much faster.

Three measurements, each alternating the two runtimes block by block (so a change of load hits
both): the embedder on ``--chunks`` random default-index chunks (chunks/s, largest vector
difference), the query embedder's dense top 10 for the clinician dev questions (identical or
not), and the relevance model on the ``--candidates`` hybrid candidates of each of those questions
(seconds per question, largest probability difference, and how many evidence decisions at the
profile's threshold, or top passages, change).

    medcite bench onnx-runtime --out docs/results/bench/onnx_runtime.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def embedding(index: Any, embedder: Any, count: int, block: int) -> dict[str, Any]:
    from indexes import text
    from indexes.dense.minilm import SentenceVectors, numpy_runner
    from indexes.dense.onnx_models import score_encoded

    chunks = list(index.chunks)
    sample = random.Random(0).sample(chunks, min(count, len(chunks)))
    texts = [text.indexed_text(c.title, c.section, c.text) for c in sample]
    encoded = [(e.ids, e.type_ids) for e in embedder._tokenizer.encode_batch(texts)]
    runners = {"torch": numpy_runner(SentenceVectors(embedder._model)), "onnx": embedder._onnx}
    seconds = {name: 0.0 for name in runners}
    largest = 0.0
    for start in range(0, len(encoded), block):
        part = encoded[start : start + block]
        vectors = {}
        for name, runner in runners.items():
            vectors[name], took = timed(score_encoded, runner, part, embedder.batch_size)
            seconds[name] += took
        largest = max(largest, float(np.abs(vectors["torch"] - vectors["onnx"]).max()))
    rate = {name: round(len(encoded) / s, 1) for name, s in seconds.items()}
    return {
        "chunks": len(encoded),
        "chunks_per_s": rate,
        "speedup": round(rate["onnx"] / rate["torch"], 2),
        "max_abs_diff": largest,
    }


def relevance(
    questions: list[str], retriever: Any, candidates: int, threshold: float, keep: int
) -> dict[str, Any]:
    from indexes.dense.minilm import numpy_runner
    from indexes.dense.onnx_models import score_encoded
    from rag.rerank.evidence import passage_text
    from rag.rerank.trained import TrainedReranker, calibrated

    reranker = TrainedReranker()
    runners = {"torch": numpy_runner(reranker._torch_model()), "onnx": reranker._model}
    seconds: dict[str, list[float]] = {name: [] for name in runners}
    largest, kept_changed, top_changed = 0.0, 0, 0
    for n, question in enumerate(questions):
        hits = retriever.retrieve(question, candidates)[:candidates]
        encoded = reranker._tokenizer.encode(question, [passage_text(h.chunk) for h in hits])
        ranks = np.arange(1, len(hits) + 1)
        probabilities = {}
        for name in sorted(runners, reverse=n % 2 == 1):  # alternate which runs first
            logits, took = timed(score_encoded, runners[name], encoded, reranker.batch_size)
            seconds[name].append(took)
            probabilities[name] = calibrated(logits, ranks, reranker.manifest["calibration"])
        a, b = probabilities["torch"], probabilities["onnx"]
        largest = max(largest, float(np.abs(a - b).max()))
        kept_changed += kept_rows(a, threshold, keep) != kept_rows(b, threshold, keep)
        top_changed += int(np.argmax(a)) != int(np.argmax(b))
    return {
        "questions": len(questions),
        "seconds_per_question_p50": {k: round(statistics.median(v), 3) for k, v in seconds.items()},
        "max_abs_probability_diff": largest,
        "kept_sets_changed": kept_changed,
        "top_passage_changed": top_changed,
    }


def kept_rows(probabilities: np.ndarray, threshold: float, keep: int) -> set[int]:
    """The candidates the evidence step keeps: the ``keep`` most probable at or above ``threshold``."""
    best = np.argsort(-probabilities, kind="stable")[:keep]
    return {int(i) for i in best if probabilities[i] >= threshold}


def dense_top10(questions: list[str], index: Any, embedder: Any) -> dict[str, Any]:
    from indexes.dense.minilm import SentenceVectors, numpy_runner
    from indexes.dense.onnx_models import score_encoded

    encoded = [(e.ids, e.type_ids) for e in embedder._tokenizer.encode_batch(questions)]
    torch_vectors = score_encoded(numpy_runner(SentenceVectors(embedder._model)), encoded, 64)
    onnx_vectors = score_encoded(embedder._onnx, encoded, 64)
    same = 0
    for t, o in zip(torch_vectors, onnx_vectors, strict=True):
        same += index.dense.search(t, 10)[0].tolist() == index.dense.search(o, 10)[0].tolist()
    return {
        "questions": len(questions),
        "identical_top10": same,
        "max_abs_diff": float(np.abs(torch_vectors - onnx_vectors).max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/bench/onnx_runtime.json"))
    parser.add_argument("--chunks", type=int, default=600)
    parser.add_argument("--block", type=int, default=100)
    parser.add_argument("--questions", type=int, default=150, help="clinician dev questions (0: all)")
    parser.add_argument("--candidates", type=int, default=30)
    args = parser.parse_args()
    from evals.datasets.clinician import load_clinician
    from rag.indexing import make_retriever, open_index
    from rag.profile import load_profile

    paths = Paths.from_env()
    profile = load_profile("default")
    index, embedder = open_index(paths, "default", with_embedder=True)
    questions = [item.question for item in load_clinician(part="dev")]
    questions = questions[: args.questions] if args.questions else questions
    retriever = make_retriever(index, embedder, "hybrid", candidates=args.candidates)
    evidence_threshold = profile.rerank.threshold if profile.rerank.threshold is not None else 0.5
    result = {
        "command": "medcite bench onnx-runtime",
        "load_average_start": os.getloadavg()[0],
        "embedding": embedding(index, embedder, args.chunks, args.block),
        "dense_top10": dense_top10(questions, index, embedder),
        "relevance": relevance(
            questions, retriever, args.candidates, evidence_threshold, profile.rerank.keep
        ),
        "load_average_end": os.getloadavg()[0],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
