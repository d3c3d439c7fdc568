"""Held-out retrieval for the relevance reranker: BioASQ Task 11B (and LiveQA-Med when its index exists).

Every Task 11B question with a gold snippet in the ``bioasq-snippets`` index is searched among
all 20,767 BioASQ snippets (the other questions' gold snippets are the distractors); every
LiveQA-Med question with a relevant MedQuAD answer is searched in the ``medquad`` index when it
has been built (``medcite index build --name medquad --source medquad``). Conditions, on the same
queries: bm25, dense, hybrid (RRF, the product's default), tuned fusion (min-max weighted
BM25 + dense, the weight fitted on the training side's validation questions: ladder step a),
and hybrid + the trained reranker (the top ``--rerank-depth``, 30 by default, reranked with the
calibrated blended score; the documents below keep their order). Documents are ranked by their
best chunk.

Per query nDCG@10, R@10 and MRR; the reranker's difference to hybrid with a paired bootstrap
95% interval (10,000 resamples of queries); calibration on the test queries (reliability bins,
ECE); reranking time for those candidates (p50, p95). Writes JSON and a markdown table.

    medcite bench reranker-heldout --out docs/results/reranker
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from core.paths import Paths
from core.types import Hit
from evals.metrics.retrieval import condensed, judged_at_k, ndcg_at_k, recall_at_k, reciprocal_rank
from evals.metrics.stats import paired_bootstrap_mean_diff
from rag.indexing import make_retriever, open_index
from rag.retrieve.fusion import weighted_score_fusion
from training.calibrate import reliability
from training.pairs import PairConfig

DEPTH = 30  # the reranker's input, as in the pipeline's hybrid candidates
WEIGHT_GRID = [round(0.1 * i, 1) for i in range(11)]


def doc_ranking(hits: Sequence[Hit]) -> list[str]:
    seen: dict[str, None] = {}
    for hit in hits:
        seen.setdefault(hit.chunk.doc_id, None)
    return list(seen)


def scores_of(
    run: dict[str, list[str]], qrels: dict[str, dict[str, int]], qids: list[str]
) -> dict[str, list[float]]:
    out = {
        "ndcg10": ndcg_at_k(run, qrels, 10, qids).tolist(),
        "recall10": recall_at_k(run, qrels, 10, qids).tolist(),
        "mrr": reciprocal_rank(run, qrels, None, qids).tolist(),
    }
    if has_judged_negatives(qrels):  # pooled judgements: say how much of the top 10 was judged
        out["judged10"] = judged_at_k(run, qrels, 10, qids).tolist()
        out["ndcg10_condensed"] = ndcg_at_k(condensed(run, qrels), qrels, 10, qids).tolist()
    return out


def has_judged_negatives(qrels: dict[str, dict[str, int]]) -> bool:
    """True for pooled judgements (grade-0 documents listed), where unjudged is not non-relevant."""
    return any(g <= 0 for docs in qrels.values() for g in docs.values())


def bioasq_11b(paths: Paths) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    from corpora.sources.bioasq import qrels_doc_id
    from evals.datasets.bioasq import bioasq_rows

    queries, qrels = {}, {}
    for row in bioasq_rows(paths.source_data):
        if row["task"] == "Task11B":
            queries[str(row["id"])] = " ".join(str(row["body"]).split())
            snippets = row.get("snippet_ids") or []
            assert isinstance(snippets, list), f"BioASQ row {row['id']}: snippet_ids is not a list"
            qrels[str(row["id"])] = {qrels_doc_id(s): 1 for s in snippets}
    return queries, qrels


def liveqa(paths: Paths) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    from evals.datasets.liveqa import load_liveqa

    rset = load_liveqa(paths.source_data / "medquad")
    return dict(rset.queries), {q: dict(d) for q, d in rset.qrels.items()}


def bioasq_validation(paths: Paths, config: PairConfig) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The BioASQ validation questions of the training run made with ``config``."""
    from corpora.sources.bioasq import qrels_doc_id
    from training.leakage import held_out_questions
    from training.pairs import PairStats, bioasq_training_questions, split_of

    queries, qrels = {}, {}
    for row in bioasq_training_questions(
        paths.source_data, held_out_questions(paths.source_data), PairStats()
    ):
        qid = str(row["id"])
        if split_of(qid, config.seed, config.validation_share) == "validation":
            queries[qid] = " ".join(str(row["body"]).split())
            qrels[qid] = {qrels_doc_id(s): 1 for s in row.get("snippet_ids", [])}  # type: ignore[union-attr]
    return queries, qrels


def liveqa_coverage_note(paths: Paths) -> tuple[str, int]:
    """Why LiveQA questions go unscored, and how many questions its file holds."""
    from evals.datasets.liveqa import load_liveqa, relevance_coverage

    c = relevance_coverage(paths.source_data / "medquad")
    in_file = int(load_liveqa(paths.source_data / "medquad").counts["queries_in_file"])
    note = (
        f"Of the {c['judged_questions']} judged questions, {c['relevant_only_withheld']} have relevant "
        "answers only in collections MedQuAD does not distribute (ADAM, MedlinePlus drugs and herbs) "
        f"and {c['no_relevant_answer']} have none judged relevant."
    )
    return note, in_file


def validation_questions(path: Path, paths: Paths, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The training run's validation questions: from its ``validation.jsonl`` when it is there,
    else rebuilt from the model manifest's split (same seed and share, same questions)."""
    if path.is_file():
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    queries, qrels = bioasq_validation(paths, PairConfig(**manifest["pair_config"]))
    return [{"qid": q, "question": text, "gold": sorted(qrels[q])} for q, text in queries.items()]


def fit_fusion_weight(
    validation: list[dict[str, Any]], lexical: Any, dense: Any
) -> tuple[float, dict[str, float]]:
    """The BM25 weight (dense gets 1 - w) with the best validation nDCG@10 (ladder step a)."""
    runs = [
        (q, lexical.retrieve(q["question"], DEPTH * 3), dense.retrieve(q["question"], DEPTH * 3))
        for q in tqdm(validation, desc="fusion weight (validation)", unit="q")
    ]
    by_weight = {}
    for w in WEIGHT_GRID:
        run, qrels = {}, {}
        for q, lex, den in runs:
            chunks = {h.chunk.chunk_id: h.chunk.doc_id for h in [*lex, *den]}
            fused = weighted_score_fusion(
                [{h.chunk.chunk_id: h.score for h in lex}, {h.chunk.chunk_id: h.score for h in den}],
                [w, 1 - w],
            )
            order = sorted(fused, key=lambda c: -fused[c])
            run[q["qid"]] = list(dict.fromkeys(chunks[c] for c in order))
            qrels[q["qid"]] = {d: 1 for d in q["gold"]}
        by_weight[str(w)] = float(np.mean(ndcg_at_k(run, qrels, 10)))
    best = max(WEIGHT_GRID, key=lambda w: (by_weight[str(w)], -abs(w - 0.5)))
    return best, by_weight


def evaluate(
    name: str,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    retrievers: dict[str, Any],
    reranker: Any,
    tuned: Callable[[str], list[str]] | None,
    rerank_depth: int = DEPTH,
) -> dict[str, Any]:
    qids = [q for q in queries if any(g > 0 for g in qrels.get(q, {}).values())]
    conditions = ["bm25", "dense", "hybrid", "tuned-fusion", "hybrid+trained"]
    runs: dict[str, dict[str, list[str]]] = {c: {} for c in conditions}
    rerank_seconds, probabilities, labels = list[float](), list[float](), list[int]()
    for qid in tqdm(qids, desc=name, unit="q", dynamic_ncols=True):
        text = queries[qid]
        for mode in ("bm25", "dense"):
            runs[mode][qid] = doc_ranking(retrievers[mode].retrieve(text, DEPTH * 3))
        hybrid = retrievers["hybrid"].retrieve(text, DEPTH * 3)
        runs["hybrid"][qid] = doc_ranking(hybrid)
        if tuned is not None:
            runs["tuned-fusion"][qid] = tuned(text)
        start = time.perf_counter()
        top = reranker.rerank(text, hybrid[:rerank_depth])
        rerank_seconds.append(time.perf_counter() - start)
        runs["hybrid+trained"][qid] = doc_ranking([*top, *hybrid[rerank_depth:]])
        probabilities.extend(h.score for h in top)
        labels.extend(int(qrels[qid].get(h.chunk.doc_id, 0) > 0) for h in top)
    if tuned is None:
        del runs["tuned-fusion"]
    per_query = {c: scores_of(run, qrels, qids) for c, run in runs.items()}
    summary: dict[str, Any] = {c: {m: float(np.mean(v)) for m, v in s.items()} for c, s in per_query.items()}
    differences = {}
    for condition in [c for c in runs if c != "hybrid"]:
        differences[f"{condition} - hybrid"] = {
            m: dict(
                zip(
                    ("diff", "low", "high"),
                    paired_bootstrap_mean_diff(
                        np.array(per_query["hybrid"][m]), np.array(per_query[condition][m])
                    ),
                    strict=True,
                )
            )
            for m in per_query["hybrid"]
        }
    return {
        "queries": len(qids),
        "questions_in_set": len(queries),
        "rerank_depth": rerank_depth,
        "summary": summary,
        "differences": differences,
        "rerank_seconds": {
            "p50": statistics.median(rerank_seconds),
            "p95": float(np.percentile(rerank_seconds, 95)),
            "n": len(rerank_seconds),
        },
        "calibration": reliability(np.array(probabilities), np.array(labels)),
        "per_query": {"qids": qids, **per_query},
    }


def judged_lines(r: dict[str, Any]) -> list[str]:
    """judged@10 and condensed-list nDCG@10 per condition, for sets with pooled judgements."""
    if "judged10" not in r["summary"]["hybrid"]:
        return []
    lines = [
        "",
        "Judgements are pooled: a document no pooled system returned is unjudged and counts as "
        "non-relevant above. judged@10 is the judged share of the top 10; condensed nDCG@10 "
        "drops unjudged documents first (Sakai 2007), comparing the order of the judged ones.",
        "",
        "| condition | judged@10 | condensed nDCG@10 |",
        "|---|---|---|",
    ]
    lines += [f"| {c} | {s['judged10']:.3f} | {s['ndcg10_condensed']:.3f} |" for c, s in r["summary"].items()]
    lines += ["", "| difference (paired bootstrap 95% CI) | judged@10 | condensed nDCG@10 |", "|---|---|---|"]
    for label, d in r["differences"].items():
        cells = [
            f"{d[m]['diff']:+.3f} ({d[m]['low']:+.3f}, {d[m]['high']:+.3f})"
            for m in ("judged10", "ndcg10_condensed")
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Held-out retrieval with the trained relevance reranker",
        "",
        f"Model: `{results['model']}`; machine: {results['machine']}.",
        "",
    ]
    for name, r in results["sets"].items():
        lines += [f"## {name} ({r['queries']} queries)", ""]
        if r.get("questions_in_set", r["queries"]) != r["queries"]:
            note = f" {r['coverage_note']}" if r.get("coverage_note") else ""
            lines += [
                f"{r['queries']} of the set's {r['questions_in_set']} questions have a relevant "
                "document in this index; nDCG, recall and MRR are undefined for the others, so they "
                f"are left out.{note}",
                "",
            ]
        lines += ["| condition | nDCG@10 | R@10 | MRR |", "|---|---|---|---|"]
        lines += [
            f"| {c} | {s['ndcg10']:.3f} | {s['recall10']:.3f} | {s['mrr']:.3f} |"
            for c, s in r["summary"].items()
        ]
        lines += ["", "| difference (paired bootstrap 95% CI) | nDCG@10 | R@10 | MRR |", "|---|---|---|---|"]
        for label, d in r["differences"].items():
            cells = [
                f"{d[m]['diff']:+.3f} ({d[m]['low']:+.3f}, {d[m]['high']:+.3f})"
                for m in ("ndcg10", "recall10", "mrr")
            ]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines += judged_lines(r)
        t, c = r["rerank_seconds"], r["calibration"]
        lines += [
            "",
            f"Reranking {r['rerank_depth']} candidates: p50 {t['p50']:.3f} s, p95 {t['p95']:.3f} s "
            f"({t['n']} queries). "
            f"Calibration on these queries' reranked candidates: ECE {c['ece']:.3f} "
            f"over {c['n']} passages.",
            "",
        ]
        lines += ["| p bin | n | mean predicted | observed |", "|---|---|---|---|"]
        lines += [
            f"| {b['low']:.1f}-{b['high']:.1f} | {b['n']} | {b['mean_predicted']:.3f} | {b['observed']:.3f} |"
            for b in c["bins"]
        ]
        lines.append("")
    if "fusion_weight" in results:
        lines += [
            f"Tuned fusion: BM25 weight {results['fusion_weight']} "
            f"(dense {1 - results['fusion_weight']:.1f}), "
            "chosen on the training side's validation questions; validation nDCG@10 per weight: "
            + ", ".join(f"{w}: {v:.3f}" for w, v in results["fusion_validation"].items()),
            "",
        ]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/reranker"))
    parser.add_argument("--model", type=Path, default=None, help="relevance model folder (default: shipped)")
    parser.add_argument(
        "--validation",
        type=Path,
        default=Path("data/models/relevance-minilm/data/validation.jsonl"),
        help="the training run's validation questions, for the fusion weight (step a)",
    )
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--rerank-depth",
        type=int,
        default=DEPTH,
        help="hybrid candidates reranked (a profile's rerank.candidates)",
    )
    parser.add_argument("--machine", default="2 cores, 24 GB, no GPU")
    return parser


def _tuned_fusion(
    index: Any, embedder: Any, retrievers: dict[str, Any], validation: list[dict[str, Any]]
) -> tuple[Callable[[str], list[str]], float, dict[str, float]]:
    """The weighted-fusion document ranking with the BM25 weight fitted on ``validation``, that
    weight, and the validation nDCG@10 per weight (ladder step a)."""
    weight, per_weight = fit_fusion_weight(validation, retrievers["bm25"], retrievers["dense"])
    fused = make_retriever(
        index,
        embedder,
        "hybrid",
        fusion="weighted",
        weights=(weight, 1 - weight),
        candidates=DEPTH * 3,
    )

    def tuned(text: str, retriever: Any = fused) -> list[str]:
        return doc_ranking(retriever.retrieve(text, DEPTH * 3))

    return tuned, weight, per_weight


def _evaluate_set(
    set_name: str,
    index_name: str,
    loader: Callable[[Paths], tuple[dict[str, str], dict[str, dict[str, int]]]],
    args: argparse.Namespace,
    paths: Paths,
    reranker: Any,
    results: dict[str, Any],
) -> None:
    """Evaluate one held-out set on its index into ``results`` (BioASQ also fits the fusion weight)."""
    index, embedder = open_index(paths, index_name, with_embedder=True)
    try:
        retrievers = {
            m: make_retriever(index, embedder, m, candidates=DEPTH * 3) for m in ("bm25", "dense", "hybrid")
        }
        tuned: Callable[[str], list[str]] | None = None
        if set_name == "bioasq-11b":
            validation = validation_questions(args.validation, paths, reranker.manifest)
            tuned, results["fusion_weight"], results["fusion_validation"] = _tuned_fusion(
                index, embedder, retrievers, validation
            )
        queries, qrels = loader(paths)
        results["sets"][set_name] = evaluate(
            set_name, queries, qrels, retrievers, reranker, tuned, args.rerank_depth
        )
        if set_name == "liveqa-medquad":
            note, in_file = liveqa_coverage_note(paths)
            results["sets"][set_name].update(coverage_note=note, questions_in_set=in_file)
    finally:
        index.close()


def main() -> None:
    args = parser().parse_args()
    from rag.rerank.trained import TrainedReranker

    paths = Paths.from_env()
    reranker = TrainedReranker(args.model, threads=args.threads)
    folder = reranker.folder.resolve()
    shown = folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder
    results: dict[str, Any] = {"model": str(shown), "machine": args.machine, "sets": {}}
    plan = [("bioasq-11b", "bioasq-snippets", bioasq_11b), ("liveqa-medquad", "medquad", liveqa)]
    for set_name, index_name, loader in plan:
        if not (paths.indexes_dir / index_name).exists():
            print(f"skipping {set_name}: index {index_name!r} not built")
            continue
        _evaluate_set(set_name, index_name, loader, args, paths, reranker, results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "heldout.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    (args.out / "heldout.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))


if __name__ == "__main__":
    main()
