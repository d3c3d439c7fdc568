"""From a run's records to metrics.json and report.md (with PNG plots beside it).

Multiple choice: accuracy with a 95% Wilson interval per condition and dataset, no-answer
counts with reasons, and each RAG condition paired with the closed-book arm (McNemar exact,
paired bootstrap CI of the difference, harm and help rates). Retrieval: nDCG@10, recall@10,
recall@20, precision@10, MRR and MAP per condition and dataset, over the judged queries, each
ranking in trec_eval's order (``trec_files.ranking``), so the run files beside it re-score to the
same numbers. Rubric sets: scores per arm, paired and per tag, and judge agreement
(``evals.engine.rubric.report``). Cost: wall time per condition and the median seconds per item.
metrics.json holds the metrics unrounded; only report.md rounds them.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths
from evals.engine.answers_run import answer_metrics
from evals.engine.report import plots
from evals.engine.report.markdown import table
from evals.engine.report.trec_files import judged, ranking
from evals.engine.rubric.report import rubric_metrics
from evals.engine.rubric.tables import rubric_lines
from evals.metrics.choice import accuracy
from evals.metrics.retrieval import score_run
from evals.records import ItemRecord
from evals.robustness.metrics import robustness_metrics
from evals.robustness.report import robustness_lines
from evals.types import RetrievalSet

RETRIEVAL_METRICS = ("ndcg@10", "recall@10", "recall@20", "precision@10", "mrr", "map")


def _group(records: list[ItemRecord]) -> dict[str, dict[str, list[ItemRecord]]]:
    grouped: dict[str, dict[str, list[ItemRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        grouped[r.condition][r.dataset].append(r)
    return grouped


def mcq_metrics(records: list[ItemRecord]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cond, per in _group([r for r in records if r.gold is not None]).items():
        out[cond] = {}
        for ds, rows in sorted(per.items()):
            acc = accuracy(rows)
            latencies = [r.latency_s for r in rows if r.pred is not None]
            # With the profile's evidence threshold a RAG item may keep no passage: it is then
            # answered without sources. How often, and how those answers fared:
            bare = [r for r in rows if cond != "closed-book" and r.error is None and not r.retrieved]
            out[cond][ds] = {
                "no_evidence": len(bare),
                "no_evidence_correct": sum(r.pred == r.gold for r in bare),
                "n": acc.n,
                "correct": acc.correct,
                "accuracy": acc.accuracy,
                "ci": [acc.ci_low, acc.ci_high],
                "no_answer": acc.no_answer,
                "no_answer_reasons": dict(acc.reasons),
                "median_seconds_per_item": round(float(np.median(latencies)), 2) if latencies else None,
            }
    return out


def paired_metrics(records: list[ItemRecord], baseline: str = "closed-book") -> dict[str, dict[str, Any]]:
    """Each RAG condition against the closed-book arm, per dataset."""
    from evals.engine.report.compare import compare_sets

    grouped = _group([r for r in records if r.gold is not None])
    if baseline not in grouped:
        return {}
    base = [r for rows in grouped[baseline].values() for r in rows]
    out: dict[str, dict[str, Any]] = {}
    for cond, per in grouped.items():
        if cond == baseline:
            continue
        rows = compare_sets(base, [r for rs in per.values() for r in rs])
        out[cond] = {row.dataset: row.to_json() for row in rows}
    return out


def paired_with_leakage(
    folder: Path, records: list[ItemRecord], paths: Paths | None
) -> dict[str, dict[str, Any]]:
    """:func:`paired_metrics`, each RAG row split into leaked and clean items of its index
    (:mod:`evals.leakage.run`; skipped without ``paths``, "index not found" when it is gone)."""
    paired = paired_metrics(records)
    if paired and paths is not None:
        from evals.leakage.run import run_leakage, split_paired

        split_paired(paired, records, run_leakage(folder, records, paths))
    return paired


def _with_rerank_baselines(retrieval: list[ItemRecord]) -> list[ItemRecord]:
    """Add, for each reranked cell run on a subset of queries, its unreranked cell on the same
    queries (``.../none [same queries as .../llm]``), so the two rows compare like with like."""
    grouped = _group(retrieval)
    extra: list[ItemRecord] = []
    for cond, per in grouped.items():
        if not cond.endswith("/llm"):
            continue
        base = cond.removesuffix("/llm") + "/none"
        for ds, rows in per.items():
            subset = {r.qid for r in rows}
            baseline = [r for r in grouped.get(base, {}).get(ds, []) if r.qid in subset]
            if baseline and len(baseline) < len(grouped[base][ds]):
                label = f"{base} [same queries as {cond.rsplit('/', 1)[-1]}]"
                extra += [dataclasses.replace(r, condition=label) for r in baseline]
    return retrieval + extra


def retrieval_metrics(records: list[ItemRecord], sets: dict[str, RetrievalSet]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    retrieval = _with_rerank_baselines([r for r in records if r.condition.startswith("retrieval/")])
    for cond, per in sorted(_group(retrieval).items()):
        out[cond] = {}
        for ds, rows in sorted(per.items()):
            rset = sets.get(ds)
            if rset is None:
                continue
            scored = judged(rows, rset)
            # ties broken as trec_eval does, so the run files re-score to these numbers
            run = {qid: [doc for doc, _ in docs] for qid, docs in ranking(scored).items()}
            queries = [r.qid for r in scored]
            scores = score_run(run, rset.qrels, RETRIEVAL_METRICS, queries) if scored else {}
            latencies = [r.latency_s for r in scored if not r.error]
            out[cond][ds] = {
                "n": len(scored),
                "failed": sum(1 for r in scored if r.error),
                # failed or nothing retrieved: no line in the run file, 0 in these means
                "no_documents": sum(1 for r in scored if not r.retrieved),
                "unjudged_skipped": len(rows) - len(scored),
                **{m: float(v.mean()) for m, v in scores.items()},
                "median_seconds_per_query": round(float(np.median(latencies)), 4) if latencies else None,
            }
    return out


def item_seconds(records: list[ItemRecord]) -> dict[str, dict[str, float]]:
    """Per condition: items recorded and their summed and mean seconds, over every session of the
    run (the session cost table covers only the invocation that wrote the report)."""
    out: dict[str, dict[str, float]] = {}
    for record in records:
        entry = out.setdefault(record.condition, {"items": 0, "seconds": 0.0})
        entry["items"] += 1
        entry["seconds"] += record.latency_s
    for entry in out.values():
        entry["mean_seconds"] = round(entry["seconds"] / entry["items"], 2)
        entry["seconds"] = round(entry["seconds"], 1)
    return out


def write_summary(
    folder: Path,
    records: list[ItemRecord],
    sets: dict[str, RetrievalSet],
    cost: dict[str, Any],
    paths: Paths | None = None,
) -> dict[str, Any]:
    metrics = {
        "mcq": mcq_metrics(records),
        "paired_vs_closed_book": paired_with_leakage(folder, records, paths),
        "retrieval": retrieval_metrics(records, sets),
        "answers": answer_metrics(records),
        "cost": cost,
        "item_seconds": item_seconds(records),
        "robustness": robustness_metrics(records),
        "rubric": rubric_metrics(records),
    }
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    figures = [
        plots.accuracy_by_dataset(metrics["mcq"], folder / "accuracy_by_dataset.png"),
        plots.accuracy_vs_k(metrics["mcq"], folder / "accuracy_vs_k.png"),
        plots.retrieval_ablation(
            metrics["retrieval"], ("ndcg@10", "recall@20"), folder / "retrieval_ablation.png"
        ),
    ]
    (folder / "report.md").write_text(render_report(folder.name, metrics, figures), encoding="utf-8")
    return metrics


def _rate_cell(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "–"
    low, high = rate["ci"]
    return f"{rate['count']}/{rate['n']} = {100 * rate['rate']:.1f}% ({100 * low:.1f}-{100 * high:.1f})"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _mcq_rows(mcq: dict[str, Any]) -> list[list[object]]:
    return [
        [
            cond,
            ds,
            m["n"],
            _pct(m["accuracy"]),
            f"{_pct(m['ci'][0])}–{_pct(m['ci'][1])}",
            m["no_answer"],
            f"{m.get('no_evidence', 0)} ({m.get('no_evidence_correct', 0)} right)",
            m["median_seconds_per_item"],
        ]
        for cond, per in mcq.items()
        for ds, m in per.items()
    ]


def _paired_rows(paired: dict[str, Any]) -> list[list[object]]:
    from evals.leakage.run import leaked_cell

    rows: list[list[object]] = []
    for cond, per in paired.items():
        for ds, r in per.items():
            diff = f"{100 * r['diff']:+.1f} ({100 * r['diff_ci'][0]:+.1f}, {100 * r['diff_ci'][1]:+.1f})"
            rows.append(
                [
                    cond,
                    ds,
                    r["n"],
                    _pct(r["accuracy_a"]),
                    _pct(r["accuracy_b"]),
                    diff,
                    f"{r['mcnemar_p']:.3g}",
                    _pct(r["harm_rate"]),
                    _pct(r["help_rate"]),
                    leaked_cell(r),
                ]
            )
    return rows


def _paired_notes(paired: dict[str, Any]) -> list[str]:
    """What harm and help mean, then the paired comparison over leaked and over clean items
    (when the run's indexes were checked for leakage)."""
    from evals.leakage.check import DEFAULT_THRESHOLD
    from evals.leakage.run import split_table

    notes = ["harm: closed-book right and RAG wrong, as a share of paired items; help: the reverse.", ""]
    rows = split_table(paired)
    if not rows:
        return notes
    side = ["closed-book", "RAG", "harm", "help"]
    header = ["condition", "dataset", "index", "leaked n", *side, "clean n", *side]
    note = (
        f"leaked: the index holds the item's question or gold answer passage near-verbatim (containment "
        f">= {DEFAULT_THRESHOLD} of its word 8-grams in one chunk; `medcite eval leakage`, cached in "
        "leakage-<index>.json); accuracy, harm and help in % of that side's paired items."
    )
    return [*notes, "### Leaked vs clean items", "", *table(header, rows), note, ""]


def _mcq_section(mcq: dict[str, Any]) -> list[str]:
    """Accuracy with its Wilson interval per condition and dataset."""
    lines = ["## Multiple choice: accuracy (95% Wilson CI)", ""]
    header = [
        "condition",
        "dataset",
        "n",
        "accuracy",
        "95% CI",
        "no answer",
        "no evidence kept",
        "s/item (median)",
    ]
    lines += table(header, _mcq_rows(mcq))
    lines += [
        "no evidence kept: RAG items whose passages all fell below the evidence threshold "
        "(answered without sources); 0 when the run gives every item k passages.",
        "",
    ]
    return lines


def _paired_section(paired: dict[str, Any]) -> list[str]:
    """Each RAG condition against closed-book on the same items, with its notes."""
    lines = ["## RAG vs closed-book (paired)", ""]
    header = [
        "condition",
        "dataset",
        "n",
        "closed-book",
        "RAG",
        "diff (95% bootstrap CI)",
        "McNemar p",
        "harm",
        "help",
        "leaked",
    ]
    lines += table(header, _paired_rows(paired))
    lines += _paired_notes(paired)
    return lines


def _retrieval_section(retrieval: dict[str, Any]) -> list[str]:
    lines = ["## Retrieval", ""]
    rows = [
        [
            cond,
            ds,
            m["n"],
            *(f"{m.get(k, float('nan')):.3f}" for k in RETRIEVAL_METRICS),
            m["median_seconds_per_query"],
        ]
        for cond, per in retrieval.items()
        for ds, m in per.items()
    ]
    lines += table(["condition", "dataset", "n", *RETRIEVAL_METRICS, "s/query"], rows)
    lines += [
        "Rounded here; metrics.json holds them unrounded. Each set's qrels and one TREC run per "
        "condition are in runs/<set>/, ties ranked as trec_eval ranks them, so trec_eval, "
        'pytrec_eval or ranx re-score them to these numbers (docs/evaluation.md, "Re-scoring").',
        "",
    ]
    return lines


def _answers_section(answers: dict[str, Any]) -> list[str]:
    """The judged free-text metrics, then answerable vs unanswerable where the run has them."""
    lines = ["## Free-text answers (judged by the run's model; NaN items excluded and counted)", ""]
    rows = []
    for cond, per in answers.items():
        for ds, a in per.items():
            for m, v in a["metrics"].items():
                reasons = ", ".join(f"{k} {n}" for k, n in v["reasons"].items()) or "–"
                mean = "–" if v["mean"] is None else f"{v['mean']:.3f}"
                rows.append([cond, ds, m, mean, v["n_valid"], v["n_nan"], reasons])
    lines += table(["condition", "dataset", "metric", "mean", "valid", "NaN", "why NaN"], rows)
    return lines + _abstention_section(answers)


def _abstention_section(answers: dict[str, Any]) -> list[str]:
    """Answered / abstained rates on answerable and unanswerable items; empty when none were run."""
    abstention = [
        (c, ds, a["abstention"]) for c, per in answers.items() for ds, a in per.items() if "abstention" in a
    ]
    if not abstention:
        return []
    lines = ["## Answerable vs unanswerable (95% Wilson CI)", ""]
    lines += table(
        [
            "condition",
            "dataset",
            "answered (answerable)",
            "abstained (unanswerable)",
            "answered (unanswerable)",
            "citation precision shown",
            "citation precision generated",
        ],
        [
            [
                c,
                ds,
                *(
                    _rate_cell(a[k])
                    for k in (
                        "answered_when_answerable",
                        "abstained_when_unanswerable",
                        "answered_when_unanswerable",
                    )
                ),
                _num(a["citation_precision_shown"]),
                _num(a["citation_precision_generated"]),
            ]
            for c, ds, a in abstention
        ],
    )
    return lines


def _cost_section(item_seconds: dict[str, Any], cost: dict[str, Any]) -> list[str]:
    """Item seconds over the whole run, then this session's wall time and model calls."""
    lines = ["## Cost", "", "Every item of the run, whichever session ran it:", ""]
    item_rows = [[c, v["items"], v["seconds"], v["mean_seconds"]] for c, v in item_seconds.items()]
    lines += table(["condition", "items", "item seconds", "s/item (mean)"], item_rows)
    lines += ["This session (items already recorded were skipped):", ""]
    cost_rows = [
        [c, v["answered"], v["seconds"], v["cache_misses"], v["cache_hits"]] for c, v in cost.items()
    ]
    lines += table(["condition", "items", "wall s", "model calls", "cache hits"], cost_rows)
    return lines


def render_report(name: str, metrics: dict[str, Any], figures: list[Path | None]) -> str:
    lines = [f"# Evaluation run `{name}`", ""]
    if metrics["mcq"]:
        lines += _mcq_section(metrics["mcq"])
    if metrics["paired_vs_closed_book"]:
        lines += _paired_section(metrics["paired_vs_closed_book"])
    if metrics["retrieval"]:
        lines += _retrieval_section(metrics["retrieval"])
    if metrics.get("answers"):
        lines += _answers_section(metrics["answers"])
    lines += rubric_lines(metrics.get("rubric") or {})
    lines += robustness_lines(metrics.get("robustness") or {})
    lines += _cost_section(metrics["item_seconds"], metrics["cost"])
    for figure in figures:
        if figure is not None:
            lines += [f"![{figure.stem}]({figure.name})", ""]
    return "\n".join(lines)
