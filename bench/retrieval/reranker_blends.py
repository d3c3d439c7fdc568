"""Which blend of the trained relevance logit with retrieval signals, fitted on which validation
questions, reorders best: the calibration rungs of the reranker ladder.

The shipped calibration is ``P = sigmoid(a * logit + b * log(rank) + c)`` fitted on BioASQ 7B-10B
validation questions only. Its reordering gains on BioASQ 11B and loses on LiveQA-MedQuAD
(``docs/results/reranker/heldout.md``). This bench asks whether the loss is the blend's (fitted
on one domain) or the model's: per candidate of the hybrid top ``--depth`` it records the
model's logit, the hybrid rank, the BM25 and dense ranks (91 when absent from their top 90) and
the dense cosine, then fits blends by logistic regression on

- ``bioasq-val``: the training run's BioASQ validation questions (``training.pairs.split_of``),
- ``medquad-val``: MedQuAD questions training never read (eligible by the training rule, outside
  its seeded sample, no pooled, LiveQA-judged or held-out question), searched in the ``medquad``
  index; relevant: the answers to the same question text,
- both together,

and scores every blend on the held-out sets (BioASQ 11B, LiveQA-MedQuAD) with paired bootstrap
intervals against hybrid. Choose on validation; the test columns are reported for every variant,
so reading a winner off them is tuning on the test set. Writes ``blends.json`` and ``blends.md``.

    medcite bench reranker-blends --out docs/results/reranker
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from bench.retrieval.reranker_heldout import DEPTH, bioasq_11b, bioasq_validation, liveqa
from core.paths import Paths
from evals.metrics.retrieval import ndcg_at_k
from evals.metrics.stats import paired_bootstrap_mean_diff
from rag.indexing import make_retriever, open_index
from rag.rerank.evidence import passage_text
from training.calibrate import fit_logistic
from training.pairs import PairConfig

FEATURES = {
    "logit+rank": ("logit", "log_rank"),
    "logit+rank+bm25+dense": ("logit", "log_rank", "log_bm25_rank", "log_dense_rank"),
}
POOL = DEPTH * 3  # BM25 and dense lists the ranks are read from


def medquad_validation(
    paths: Paths, config: PairConfig, n: int = 150, seed: int = 29
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """``n`` MedQuAD questions the training run made with ``config`` never read, by text."""
    from corpora.sources.medquad import MedQuADSource
    from evals.datasets.bioasq import normalise
    from training.leakage import held_out_questions
    from training.pairs import PairStats, liveqa_judged_documents, medquad_eligible, medquad_training_sample

    docs = list(MedQuADSource(paths.source_data / "medquad").documents())
    live = liveqa_judged_documents(paths.source_data)
    eligible, _ = medquad_eligible(docs, held_out_questions(paths.source_data), live, PairStats())
    seen = {
        normalise(d.metadata["question"])
        for d in medquad_training_sample(eligible, config, random.Random(config.seed))
    }
    unseen = [d for d in eligible if normalise(d.metadata["question"]) not in seen]  # text: it repeats
    same: dict[str, set[str]] = {}
    for d in docs:
        same.setdefault(normalise(d.metadata.get("question", "")), set()).add(d.doc_id)
    chosen = random.Random(seed).sample(unseen, min(n, len(unseen)))
    queries = {d.doc_id: str(d.metadata["question"]) for d in chosen}
    qrels = {d.doc_id: {o: 1 for o in same[normalise(queries[d.doc_id])]} for d in chosen}
    return queries, qrels


# paths -> (queries by id, graded relevant documents by query id)
QuestionLoader = Callable[[Paths], tuple[dict[str, str], dict[str, dict[str, int]]]]


def candidate_rows(
    name: str,
    index_name: str,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    paths: Paths,
    reranker: Any,
    depth: int,
) -> list[dict[str, Any]]:
    """Per query with a relevant document: its hybrid list, the top ``depth`` with features."""
    index, embedder = open_index(paths, index_name, with_embedder=True)
    try:
        r = {m: make_retriever(index, embedder, m, candidates=POOL) for m in ("bm25", "dense", "hybrid")}
        rows = []
        for qid in tqdm(
            [q for q in queries if any(g > 0 for g in qrels.get(q, {}).values())], desc=name, unit="q"
        ):
            text = queries[qid]
            ranks = {
                m: {h.chunk.chunk_id: (i + 1, h.score) for i, h in enumerate(r[m].retrieve(text, POOL))}
                for m in ("bm25", "dense")
            }
            hybrid = r["hybrid"].retrieve(text, POOL)
            logits = reranker.logits(text, [passage_text(h.chunk) for h in hybrid[:depth]])
            top = [
                {
                    "doc": h.chunk.doc_id,
                    "logit": float(logits[i]),
                    "log_rank": float(np.log(i + 1)),
                    "log_bm25_rank": float(np.log(ranks["bm25"].get(h.chunk.chunk_id, (POOL + 1, 0))[0])),
                    "log_dense_rank": float(np.log(ranks["dense"].get(h.chunk.chunk_id, (POOL + 1, 0))[0])),
                }
                for i, h in enumerate(hybrid[:depth])
            ]
            rows.append(
                {
                    "qid": qid,
                    "qrels": qrels[qid],
                    "top": top,
                    "rest": [h.chunk.doc_id for h in hybrid[depth:]],
                }
            )
        return rows
    finally:
        index.close()


def ndcg10(rows: list[dict[str, Any]], weights: dict[str, float] | None) -> np.ndarray:
    """Per-query nDCG@10 of documents ranked by the blend (``None``: the hybrid order)."""
    run, qrels = {}, {}
    for row in rows:
        top = row["top"]
        scores = [
            -c["log_rank"] if weights is None else sum(w * c[f] for f, w in weights.items()) for c in top
        ]
        order = [top[i]["doc"] for i in np.argsort(-np.asarray(scores), kind="stable")]
        run[row["qid"]] = list(dict.fromkeys([*order, *row["rest"]]))
        qrels[row["qid"]] = row["qrels"]
    return ndcg_at_k(run, qrels, 10, [row["qid"] for row in rows])


def fit(rows: list[dict[str, Any]], features: tuple[str, ...]) -> dict[str, float]:
    """Logistic-regression weights of ``features`` for P(candidate's document is relevant)."""
    x = np.array([[c[f] for f in features] for row in rows for c in row["top"]])
    y = np.array([int(row["qrels"].get(c["doc"], 0) > 0) for row in rows for c in row["top"]])
    weights, _bias = fit_logistic(x, y)
    return dict(zip(features, (float(w) for w in weights), strict=True))


def variants(validation: dict[str, list[dict[str, Any]]], shipped: dict[str, Any]) -> dict[str, Any]:
    a, b = (float(w) for w in shipped["weights"])
    out: dict[str, dict[str, float] | None] = {
        "hybrid (no reranking)": None,
        "logit alone": {"logit": 1.0},
        "shipped: logit+rank on bioasq-val": {"logit": a, "log_rank": b},
    }
    fit_sets = {**validation, "both": [r for rows in validation.values() for r in rows]}
    for fit_name, rows in fit_sets.items():
        for feature_name, features in FEATURES.items():
            out[f"{feature_name} on {fit_name}"] = fit(rows, features)
    return out


def evaluate(
    validation: dict[str, list[dict[str, Any]]],
    tests: dict[str, list[dict[str, Any]]],
    shipped: dict[str, Any],
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    base = {name: ndcg10(rows, None) for name, rows in tests.items()}
    for label, weights in variants(validation, shipped).items():
        entry: dict[str, Any] = {"weights": weights, "validation": {}, "test": {}}
        for name, rows in validation.items():
            entry["validation"][name] = float(ndcg10(rows, weights).mean())
        entry["validation"]["macro"] = float(np.mean(list(entry["validation"].values())))
        for name, rows in tests.items():
            scores = ndcg10(rows, weights)
            diff, low, high = paired_bootstrap_mean_diff(base[name], scores)
            entry["test"][name] = {"ndcg10": float(scores.mean()), "diff": diff, "low": low, "high": high}
        results[label] = entry
    return results


def markdown(results: dict[str, Any], counts: dict[str, int], depth: int) -> str:
    val_names = [n for n in next(iter(results.values()))["validation"]]
    test_names = list(next(iter(results.values()))["test"])
    lines = [
        "# Reranker blends: which calibration, fitted where",
        "",
        f"Hybrid top {depth} reordered by each blend; queries: "
        + ", ".join(f"{n} {c}" for n, c in counts.items())
        + ". Validation nDCG@10 is in-sample for "
        "the fitted blends (they were fitted there). Test: nDCG@10 and the difference to hybrid "
        "(paired bootstrap 95% CI). All variants are shown on test, so picking one by its test "
        "column is tuning on the test set; pick by validation.",
        "",
        "| blend | "
        + " | ".join(f"val {n}" for n in val_names)
        + " | "
        + " | ".join(f"test {n}" for n in test_names)
        + " |",
        "|---|" + "---|" * (len(val_names) + len(test_names)),
    ]
    for label, e in results.items():
        val = [f"{e['validation'][n]:.3f}" for n in val_names]
        test = [
            f"{t['ndcg10']:.3f} ({t['diff']:+.3f}, {t['low']:+.3f}..{t['high']:+.3f})"
            for t in e["test"].values()
        ]
        lines.append(f"| {label} | " + " | ".join(val + test) + " |")
    best = max(results, key=lambda label: results[label]["validation"]["macro"])
    tests = ", ".join(
        f"{n} {t['diff']:+.3f} ({t['low']:+.3f}..{t['high']:+.3f})" for n, t in results[best]["test"].items()
    )
    lines += ["", f"Chosen by validation (best macro nDCG@10): **{best}**; against hybrid on test: {tests}."]
    lines += ["", "Weights (logistic regression; the bias does not change the order):", ""]
    lines += [
        f"- {label}: " + ", ".join(f"{f} {w:+.3f}" for f, w in e["weights"].items())
        for label, e in results.items()
        if e["weights"]
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/reranker"))
    parser.add_argument("--depth", type=int, default=DEPTH, help="hybrid candidates reordered")
    parser.add_argument("--model", type=Path, default=None, help="relevance model folder (default: shipped)")
    args = parser.parse_args()
    from rag.rerank.trained import TrainedReranker

    paths = Paths.from_env()
    reranker = TrainedReranker(args.model)
    config = PairConfig(**reranker.manifest["pair_config"])  # the model's own training split
    plan: dict[str, tuple[str, QuestionLoader]] = {
        "bioasq-val": ("bioasq-snippets", partial(bioasq_validation, config=config)),
        "medquad-val": ("medquad", partial(medquad_validation, config=config)),
        "bioasq-11b": ("bioasq-snippets", bioasq_11b),
        "liveqa-medquad": ("medquad", liveqa),
    }
    missing = sorted({i for i, _ in plan.values() if not (paths.indexes_dir / i).exists()})
    if missing:
        raise SystemExit(
            "build the indexes first: "
            + "; ".join(f"medcite index build --name {i} --source {i}" for i in missing)
        )
    rows = {
        name: candidate_rows(name, index, *loader(paths), paths, reranker, args.depth)
        for name, (index, loader) in plan.items()
    }
    validation = {n: rows[n] for n in ("bioasq-val", "medquad-val")}
    tests = {n: rows[n] for n in ("bioasq-11b", "liveqa-medquad")}
    results = evaluate(validation, tests, reranker.manifest["calibration"])
    counts = {n: len(r) for n, r in rows.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    folder = reranker.folder.resolve()
    shown = folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder
    payload = {"model": str(shown), "depth": args.depth, "queries": counts, "variants": results}
    (args.out / "blends.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    (args.out / "blends.md").write_text(markdown(results, counts, args.depth), encoding="utf-8")
    print(markdown(results, counts, args.depth))


if __name__ == "__main__":
    main()
