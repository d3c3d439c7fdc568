"""Free-text answers, judged: each question answered by the pipeline, then scored at once.

Per item: ``Pipeline.answer`` (retrieval, reranking, cited generation, verification), then
``evals.engine.judge.answer_quality.evaluate_answers`` on that one item with the run's model as the judge
and the index's embedder, so the record written for the item already carries its scores (NaN
with a reason where a metric is undefined) and a resumed run re-judges nothing it finished.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from contextlib import closing
from typing import Any

from core.errors import MedciteError
from core.paths import Paths
from evals.engine.conditions import ConditionStats, not_done, run_condition
from evals.engine.config import EvalConfig, condition_profile
from evals.engine.engine_ray import EvalRun, Task, fan_out
from evals.engine.generation_cache import CachingGenerator
from evals.engine.judge.answer_quality import AnswerItem, evaluate_answers
from evals.engine.judge.cache import default_judge_cache_path
from evals.metrics.choice import wilson_interval
from evals.records import ItemRecord
from rag.assemble import assemble
from rag.profile import Profile, load_profile


def answer_record(
    assembled: Any, judge: CachingGenerator, item: Any, condition: str, config: EvalConfig, paths: Paths
) -> ItemRecord:
    start = time.perf_counter()
    try:
        answer = assembled.pipeline.answer(item.question)
    except MedciteError as exc:
        return ItemRecord(
            dataset=item.dataset, qid=item.qid, condition=condition, error=f"{type(exc).__name__}: {exc}"
        )
    seconds = time.perf_counter() - start
    contexts = tuple(h.chunk.text for h in answer.evidence)
    metrics = [m for m in config.answer_metrics if assembled.embedder is not None or m != "answer_relevancy"]
    scored = evaluate_answers(
        [AnswerItem(item.question, answer.text, contexts, item.reference, answer, item.qid)],
        judge,
        assembled.embedder,
        default_judge_cache_path(paths),
        metrics,
    )
    row = scored.rows[0]
    scores, reasons = dict(row.scores), dict(row.reasons)
    for missing in set(config.answer_metrics) - set(metrics):  # a BM25-only index has no embedder
        scores[missing], reasons[missing] = math.nan, "no embedder"
    return ItemRecord(
        dataset=item.dataset,
        qid=item.qid,
        condition=condition,
        answer=answer.text,
        citations=tuple(c.chunk_id for c in answer.citations),
        retrieved=tuple((h.chunk.chunk_id, round(float(h.score), 6)) for h in answer.evidence),
        latency_s=round(seconds, 3),
        extra={
            "mode": answer.mode,
            "notes": list(answer.notes),
            "reference": item.reference,
            "answerable": getattr(item, "answerable", None),
            "cited_sentences": cited_sentence_counts(answer),
            "quality": {k: (v if math.isfinite(v) else None) for k, v in scores.items()},
            "quality_nan_reasons": reasons,
            "judge_seconds": round(time.perf_counter() - start - seconds, 3),
        },
    )


def answer_task_record(
    model: CachingGenerator, assembled: Any, task: Task, config: EvalConfig, paths: Paths
) -> ItemRecord:
    """A Ray worker's answer to one free-text item (``evals.engine.engine_ray.Task.answer``)."""
    return answer_record(assembled, model, task.item, task.condition, config, paths)


def cited_sentence_counts(answer: Any) -> dict[str, int]:
    """Cited sentences the model wrote and those presented, each with how many were supported
    (verifier support at the threshold and every cited passage about the question)."""
    cited = [s for s in answer.sentences if s.markers]
    shown = [s for s in cited if s.status == "shown"]
    return {
        "generated": len(cited),
        "generated_supported": sum(s.supported and s.on_topic for s in cited),
        "shown": len(shown),
        "shown_supported": sum(s.supported and s.on_topic for s in shown),
    }


def run_answers(parts: EvalRun, items: dict[str, list[Any]]) -> None:
    """Every free-text set under each of its RAG cells; with a Ray pool, on its workers."""
    config, paths, run, generator, summary, pool = (
        parts.config,
        parts.paths,
        parts.run,
        parts.generator,
        parts.summary,
        parts.pool,
    )
    done = run.done_keys()
    tasks: list[Task] = []
    base = load_profile(config.profile)
    for ds, dataset_items in items.items():
        for cell in config.answer_conditions(ds):
            name = f"answers/{cell['name'].removeprefix('rag/')}"
            stats = summary.conditions.setdefault(name, ConditionStats())
            todo = not_done(dataset_items, [(name, ds, it.qid) for it in dataset_items], done, stats)
            if not todo:
                continue
            if pool is not None:
                tasks += [Task("answers", cell, name, ds, item, answer_task_record) for item in todo]
                continue
            profile = condition_profile(base, cell)

            def opened(profile: Profile = profile) -> closing[Any]:
                return closing(assemble(profile, paths, generator=generator))

            def answer(assembled: Any, item: Any, name: str = name) -> ItemRecord:
                return answer_record(assembled, generator, item, name, config, paths)

            run_condition(
                todo,
                opened,
                answer,
                run,
                stats,
                generator=generator,
                failed=lambda r: r.error is not None,
                desc=f"{ds} {name}",
                progress=parts.progress,
            )
    if tasks and pool is not None:
        fan_out(pool, tasks, run, summary.conditions, parts.progress)


def answer_metrics(records: list[ItemRecord]) -> dict[str, dict[str, Any]]:
    """Per condition and dataset: each metric's mean over valid items, with NaN counts and reasons."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if not r.condition.startswith("answers/"):
            continue
        blank: dict[str, Any] = {"n": 0, "failed": 0, "modes": Counter(), "values": {}, "reasons": {}}
        entry = out.setdefault(r.condition, {}).setdefault(r.dataset, blank)
        entry["n"] += 1
        if r.error:
            entry["failed"] += 1
            continue
        entry["modes"][r.extra.get("mode", "?")] += 1
        for metric, value in (r.extra.get("quality") or {}).items():
            entry["values"].setdefault(metric, [])
            if value is None:
                reason = (r.extra.get("quality_nan_reasons") or {}).get(metric, "undefined")
                entry["reasons"].setdefault(metric, Counter())[reason] += 1
            else:
                entry["values"][metric].append(float(value))
    for per in out.values():
        for ds, e in per.items():
            metrics = {}
            for m, values in e["values"].items():
                reasons = e["reasons"].get(m, Counter())
                metrics[m] = {
                    "mean": round(sum(values) / len(values), 4) if values else None,
                    "n_valid": len(values),
                    "n_nan": sum(reasons.values()),
                    "reasons": dict(reasons),
                }
            per[ds] = {"n": e["n"], "failed": e["failed"], "modes": dict(e["modes"]), "metrics": metrics}
    for condition, per in out.items():
        for ds in per:
            rows = [r for r in records if r.condition == condition and r.dataset == ds]
            if any(r.extra.get("answerable") is not None for r in rows):
                per[ds]["abstention"] = abstention_metrics(rows)
    return out


def _rate(hits: int, n: int) -> dict[str, Any]:
    if n == 0:
        return {"n": 0, "count": 0, "rate": None, "ci": None}
    low, high = wilson_interval(hits, n)
    return {"n": n, "count": hits, "rate": round(hits / n, 4), "ci": [round(low, 4), round(high, 4)]}


def abstention_metrics(records: list[ItemRecord]) -> dict[str, Any]:
    """Answer rate on answerable items (mode ``rag``), abstention rate on unanswerable ones (mode
    ``abstained``), each with a Wilson 95% interval; citation precision (supported cited
    sentences / cited sentences) of what was presented and of what the model wrote before the
    gate, pooled over items. Failed items count as neither answered nor abstained."""
    answerable = [r for r in records if r.extra.get("answerable") is True]
    unanswerable = [r for r in records if r.extra.get("answerable") is False]
    counts = Counter[str]()
    for r in records:
        counts.update(r.extra.get("cited_sentences") or {})

    def share(supported: str, total: str) -> float | None:
        return round(counts[supported] / counts[total], 4) if counts[total] else None

    def rate(rows: list[ItemRecord], mode: str) -> dict[str, Any]:
        return _rate(sum(r.extra.get("mode") == mode for r in rows), len(rows))

    return {
        "answered_when_answerable": rate(answerable, "rag"),
        "abstained_when_unanswerable": rate(unanswerable, "abstained"),
        "answered_when_unanswerable": rate(unanswerable, "rag"),
        "citation_precision_shown": share("shown_supported", "shown"),
        "citation_precision_generated": share("generated_supported", "generated"),
        "cited_sentences": dict(counts),
    }
