"""The samples the ragas scorer reads, exported from medcite answer runs (``evals/studies/ragas/compare.py``).

A sample is one finished answer: ``id`` (``<dataset>:<qid>``), the question from the run's
dataset, the answer without its ``[n]`` markers (as medcite's judge reads it), the evidence
passages' text from the index's chunk store in retrieval order, the reference, the answer mode,
and our scores (``extra.quality``) carried along for the join.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from evals.records import ItemRecord, read_records

METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")


def sample_id(record: ItemRecord) -> str:
    return f"{record.dataset}:{record.qid}"


def index_of(condition: str) -> str:
    """The index an answer condition ran on: ``answers/<index>/<mode>/...``."""
    parts = condition.split("/")
    if len(parts) < 3 or parts[0] != "answers":
        raise ValueError(f"{condition!r} is not an answer condition (answers/<index>/...)")
    return parts[1]


def to_sample(record: ItemRecord, question: str, contexts: Sequence[str]) -> dict[str, Any]:
    """One sample for the ragas scorer, with our scores carried along for the join."""
    from rag.generate.sentences import marker_free

    extra = record.extra
    return {
        "id": sample_id(record),
        "question": question,
        "answer": marker_free(record.answer or ""),
        "contexts": list(contexts),
        "reference": extra.get("reference"),
        "dataset": record.dataset,
        "mode": extra.get("mode"),
        "medcite": {
            "scores": {m: (extra.get("quality") or {}).get(m) for m in METRICS},
            "reasons": {m: r for m, r in (extra.get("quality_nan_reasons") or {}).items() if m in METRICS},
            "judge_seconds": extra.get("judge_seconds"),
        },
    }


def exportable(records: Iterable[ItemRecord], modes: Sequence[str] = ()) -> list[ItemRecord]:
    """Finished answer records with text, in the given answer modes (none given: all of them; an
    abstention's passages are still judged for context precision and recall)."""
    return [
        r
        for r in records
        if r.condition.startswith("answers/")
        and r.error is None
        and r.answer
        and (not modes or r.extra.get("mode") in modes)
    ]


def export_samples(run_dir: Path, paths: Paths, *, modes: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Samples for every exportable record of ``run_dir`` (questions and passages looked up)."""
    from evals.datasets import load_freetext
    from indexes.chunkstore import ChunkStore

    records = exportable(read_records(run_dir / "records.jsonl"), modes)
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    columns = {e["dataset"]: e.get("columns") for e in config.get("answers", [])}
    questions: dict[tuple[str, str], str] = {}
    for ds in sorted({r.dataset for r in records}):
        questions.update({(ds, it.qid): it.question for it in load_freetext(ds, paths, columns.get(ds))})
    stores: dict[str, ChunkStore] = {}
    samples = []
    try:
        for r in records:
            name = index_of(r.condition)
            store = stores.get(name) or stores.setdefault(name, ChunkStore(paths.indexes_dir / name))
            contexts = [store.by_id(chunk_id).text for chunk_id, _ in r.retrieved]
            samples.append(to_sample(r, questions[(r.dataset, r.qid)], contexts))
    finally:
        for store in stores.values():
            store.close()
    return samples


def unique_by_id(samples: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Samples in order, an id seen before dropped (an item answered in two runs counts once)."""
    seen: set[str] = set()
    out = []
    for s in samples:
        if s["id"] not in seen:
            seen.add(s["id"])
            out.append(s)
    return out
