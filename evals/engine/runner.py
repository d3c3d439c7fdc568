"""``medcite eval run CONFIG``: answer every sampled item under every condition, resumably.

Multiple-choice items go through ``Pipeline.choose`` (option letters' next-token
probabilities; closed-book or with k retrieved passages); retrieval items through the grid's
retriever and optional LLM reranker. Each finished item is appended to ``records.jsonl`` at
once, and every model call goes through a disk cache keyed by model hash, prompt and
parameters, so an interrupted run resumes where it stopped and a finished one re-runs in
seconds. Item failures become records with ``pred=None`` and the reason, never a crash.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, closing, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError, MedciteError
from core.paths import Paths
from evals.engine.conditions import ConditionStats, not_done, run_condition
from evals.engine.config import AnswerSetConfig, EvalConfig, McqSet, condition_profile
from evals.engine.engine_ray import EvalRun, RayEngine, RayPool, Task, driver_generator, fan_out, ray_pool
from evals.engine.generation_cache import CachingGenerator
from evals.engine.rubric.run import judge_note, load_rubric_items, run_rubric
from evals.engine.rundir import RunDir
from evals.records import ItemRecord
from rag.assemble import assemble, make_generator
from rag.choice import choose_option
from rag.profile import Profile, load_profile
from rag.protocols import Generator
from rag.turn import Clock

if TYPE_CHECKING:
    from evals.datasets import Kind


@dataclass
class RunSummary:
    folder: Path
    conditions: dict[str, ConditionStats] = field(default_factory=dict)
    seconds: float = 0.0
    workers_lost: int = 0  # --engine ray: workers not alive at the end (their items went to others)
    workers_restarted: int = 0  # --engine ray: restarts of workers that died (Ray's max_restarts)

    def text(self) -> str:
        lines = [f"run {self.folder} ({self.seconds:.0f} s)"]
        if self.workers_restarted:
            lines.append(
                f"  {self.workers_restarted} Ray worker restart(s); no item was lost or answered twice"
            )
        if self.workers_lost:
            lines.append(f"  {self.workers_lost} Ray worker(s) lost; their items were answered by the others")
        for name, c in self.conditions.items():
            lines.append(
                f"  {name}: {c.answered} new, {c.skipped} already done, {c.failed} failed, "
                f"{c.seconds:.0f} s, model calls {c.cache_misses} (cached {c.cache_hits})"
            )
        return "\n".join(lines)

    def cost(self) -> dict[str, dict[str, Any]]:
        return {name: c.as_dict() for name, c in self.conditions.items()}


def _mcq_record(answer_fn: Callable[[], Any], dataset: str, item: Any, condition: str) -> ItemRecord:
    start = time.perf_counter()
    try:
        answer = answer_fn()
    except (MedciteError, ValueError) as exc:
        return ItemRecord(
            dataset=dataset,
            qid=item.qid,
            condition=condition,
            gold=item.answer,
            pred=None,
            latency_s=time.perf_counter() - start,
            error=f"{type(exc).__name__}: {exc}",
        )
    return ItemRecord(
        dataset=dataset,
        qid=item.qid,
        condition=condition,
        gold=item.answer,
        pred=answer.choice,
        option_probs=dict(answer.option_probs or {}),
        retrieved=tuple((h.chunk.chunk_id, round(float(h.score), 6)) for h in answer.evidence),
        latency_s=round(time.perf_counter() - start, 4),
        extra={
            "mode": answer.mode,
            "timings": {k: round(v, 4) for k, v in answer.timings.items()},
            "notes": list(answer.notes),
            **_perturbation(item),
        },
    )


def _perturbation(item: Any) -> dict[str, Any]:
    """What a robustness copy changed, kept with its record so reports can map letters back."""
    meta = getattr(item, "meta", {}) or {}
    if "perturbation" not in meta:
        return {}
    return {
        "perturbation": meta["perturbation"],
        "option_map": dict(meta["option_map"]),
        "changes": list(meta.get("changes", [])),
    }


def _answerer(generator: Generator, assembled: Any, item: Any) -> Callable[[], Any]:
    """A closed-book choice straight from the model, or the pipeline's choice with evidence."""
    if assembled is None:
        return lambda: choose_option(generator, item.question, item.options, [], Clock(), {}, [])
    return lambda: assembled.pipeline.choose(item.question, item.options)


def mcq_task_record(
    model: Generator, assembled: Any, task: Task, config: EvalConfig, paths: Paths
) -> ItemRecord:
    """A Ray worker's answer to one multiple-choice item (``evals.engine.engine_ray.Task.answer``)."""
    return _mcq_record(_answerer(model, assembled, task.item), task.dataset, task.item, task.condition)


def run_mcq(parts: EvalRun, items: dict[str, list[Any]]) -> None:
    """Dataset by dataset, every condition of the grid: an interrupted run leaves whole paired
    comparisons for the datasets it finished, not one arm of every dataset.

    A set's perturbed copies (``medqa~shuffle-options``) run with it, each right after its
    original item: the prompts share their start, which the model's cache then reuses. With a
    Ray pool the same items, in the same order, go to its workers as one stream."""
    config, run, summary, pool = parts.config, parts.run, parts.summary, parts.pool
    done = run.done_keys()
    tasks: list[Task] = []
    base = load_profile(config.profile)
    cells = config.conditions()
    for cell in cells:
        summary.conditions[cell["name"]] = ConditionStats()
    for family, pairs in _families(items).items():
        for cell in cells:
            name, stats = cell["name"], summary.conditions[cell["name"]]
            todo = not_done(pairs, [(name, ds, it.qid) for ds, it in pairs], done, stats)
            if todo and pool is not None:
                tasks += [Task("mcq", cell, name, dataset, item, mcq_task_record) for dataset, item in todo]
            elif todo:
                _run_cell(parts, cell, family, todo, base, stats)
    if tasks and pool is not None:
        fan_out(pool, tasks, run, summary.conditions, parts.progress)


def _families(items: dict[str, list[Any]]) -> dict[str, list[tuple[str, Any]]]:
    """``(dataset, item)`` pairs per original set: each item, then its perturbed copies."""
    from evals.robustness import base_dataset

    copies: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for ds, dataset_items in items.items():
        origin, perturbation = base_dataset(ds)
        if perturbation is not None:
            for item in dataset_items:
                copies.setdefault((origin, item.qid), []).append((ds, item))
    families: dict[str, list[tuple[str, Any]]] = {}
    for ds, dataset_items in items.items():
        if base_dataset(ds)[1] is None:
            families[ds] = [p for it in dataset_items for p in [(ds, it), *copies.get((ds, it.qid), [])]]
    return families


def _run_cell(
    parts: EvalRun,
    cell: dict[str, Any],
    ds: str,
    todo: list[tuple[str, Any]],
    base: Profile,
    stats: ConditionStats,
) -> None:
    paths, run, generator, progress = parts.paths, parts.run, parts.generator, parts.progress

    def opened() -> AbstractContextManager[Any]:
        if cell["closed_book"]:
            return nullcontext(None)
        return closing(assemble(condition_profile(base, cell), paths, generator=generator))

    def answer(assembled: Any, pair: tuple[str, Any]) -> ItemRecord:
        dataset, item = pair
        return _mcq_record(_answerer(generator, assembled, item), dataset, item, cell["name"])

    run_condition(
        todo,
        opened,
        answer,
        run,
        stats,
        generator=generator,
        failed=lambda r: r.pred is None,
        desc=f"{ds} {cell['name']}",
        progress=progress,
    )


def generation_cache_path(paths: Paths) -> Path:
    """Where every eval run keeps the model's answers, so a rerun asks only what is new."""
    return paths.cache_dir / "generations.sqlite"


def open_generator(config: EvalConfig, paths: Paths) -> CachingGenerator:
    """The profile's generator behind the run cache (shared by every condition of the run)."""
    inner = make_generator(load_profile(config.profile).generator, paths)
    return CachingGenerator(inner, generation_cache_path(paths))


def load_items(
    kind: Kind[Any], config: EvalConfig, paths: Paths, skipped: dict[str, Any] | None = None
) -> dict[str, list[Any]]:
    """The seeded, stratified sample of every set of ``kind`` (``[[mcq]]`` or ``[[answers]]``),
    loaded before anything runs; the unusable rows of ``mcq:``/``qa:`` files go into ``skipped``
    (for the run manifest)."""
    from evals.datasets import load_checked, sample

    entries: Sequence[McqSet | AnswerSetConfig] = config.mcq if kind.section == "mcq" else config.answers
    items: dict[str, list[Any]] = {}
    for entry in entries:
        loaded = load_checked(kind, entry.dataset, paths, entry.columns)
        _note_skipped(entry.dataset, loaded.skipped, skipped)
        pool = list(loaded.items)
        try:
            items[entry.dataset] = sample(pool, entry.n, config.seed, kind.strata) if entry.n else pool
        except ValueError as exc:
            raise ConfigError(f"{kind.section} dataset {entry.dataset}: {exc}") from exc
    return items


def add_perturbed(config: EvalConfig, items: dict[str, list[Any]], paths: Paths) -> dict[str, list[Any]]:
    """The sampled sets plus, for each ``[[robustness]]`` entry, the perturbed copies of the
    items it applies to, as ``<set>~<perturbation>`` (the items it leaves unchanged are not run)."""
    from evals.robustness import SEPARATOR, perturb_items

    out = dict(items)
    for entry in config.robustness:
        for ds in entry.datasets or list(items):
            out[f"{ds}{SEPARATOR}{entry.perturbation}"] = perturb_items(
                items[ds], entry.perturbation, config.seed, paths
            )
    return out


def _note_skipped(dataset: str, rows: Sequence[Any], into: dict[str, Any] | None) -> None:
    """Warn about a user file's unusable rows and keep them for the manifest (built-in sets never
    skip a row)."""
    from evals.datasets import MCQ_PREFIX, QA_PREFIX

    if rows:
        print(
            f"medcite: warning: {dataset}: {len(rows)} row(s) skipped as unusable; they are listed under "
            f"skipped_rows in the run's manifest.json, and `medcite eval validate {dataset}` says why",
            file=sys.stderr,
        )
    if into is not None and dataset.startswith((MCQ_PREFIX, QA_PREFIX)):
        into[dataset] = {"count": len(rows), "rows": [r.as_dict() for r in rows]}


def load_sets(config: EvalConfig, paths: Paths) -> dict[str, Any]:
    """The retrieval sets, their judged queries sampled with the run's seed."""
    import dataclasses
    import random

    from evals.datasets import load_retrieval

    sets: dict[str, Any] = {}
    for entry in config.retrieval:
        rset = load_retrieval(entry.dataset, paths)
        judged = sorted(q for q in rset.queries if any(g > 0 for g in rset.qrels.get(q, {}).values()))
        if not judged:
            raise ConfigError(f"retrieval dataset {entry.dataset}: no query has a relevant document")
        if entry.n is not None:
            if entry.n > len(judged):
                raise ConfigError(
                    f"retrieval dataset {entry.dataset}: asked for {entry.n}, has {len(judged)}"
                )
            judged = random.Random(config.seed).sample(judged, entry.n)
        sets[entry.dataset] = dataclasses.replace(rset, queries={q: rset.queries[q] for q in judged})
    return sets


def run_eval(
    config: EvalConfig,
    paths: Paths,
    *,
    out: Path | None = None,
    restart: bool = False,
    progress: bool = True,
    generator: Generator | None = None,
    engine: RayEngine | None = None,
) -> RunSummary:
    """Run (or resume) every condition of ``config`` and write the run directory.

    ``generator`` replaces the profile's model (tests; an already loaded model); it is still
    put behind the run cache. ``engine`` answers the multiple-choice, free-text and rubric items on Ray
    workers (``evals.engine.engine_ray``); this process still owns the run directory and the cache.
    """
    from evals.datasets import FREE_TEXT, MCQ
    from evals.engine.retrieval_run import run_retrieval

    start = time.perf_counter()
    skipped: dict[str, Any] = {}
    items = add_perturbed(
        config, load_items(MCQ, config, paths, skipped), paths
    )  # bad names fail here, first
    sets = load_sets(config, paths)
    answer_items = load_items(FREE_TEXT, config, paths, skipped)
    rubric_items = load_rubric_items(config, paths)  # read and checked whole before anything runs
    run = RunDir.open(out or paths.data_dir / "runs" / config.name, config, restart=restart)
    summary = RunSummary(folder=run.folder)
    model_items = bool(items or answer_items or rubric_items)
    model = _run_model(config, paths, generator, engine, model_items or "llm" in config.retrieval_grid.rerank)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        with _pool(engine, config, paths, model, generator, model_items) as pool:
            try:
                if model is not None:
                    parts = EvalRun(config, paths, run, model, summary, progress, pool)
                    _answer_all(parts, items, answer_items, rubric_items)
            finally:  # a run the pool stopped says so in its manifest too
                summary.workers_lost = len(pool.lost) if pool is not None else 0
                summary.workers_restarted = len(pool.restarted) if pool is not None else 0
        if sets:
            run_retrieval(config, paths, run, model, sets, summary, progress)
    finally:
        summary.seconds = time.perf_counter() - start
        manifest = _manifest(
            config, paths, model, items, sets, answer_items, skipped, started, summary, engine
        )
        run.write_manifest({**manifest, **_rubric_manifest(config, paths, model, rubric_items)})
        if model is not None:
            model.close()
    write_outputs(run.folder, run.records(), sets, summary.cost(), paths)
    return summary


def _answer_all(
    parts: EvalRun,
    items: dict[str, list[Any]],
    answer_items: dict[str, list[Any]],
    rubric_items: dict[str, Any],
) -> None:
    """The items a model answers: multiple choice, then free text, then rubric sets."""
    if items:
        run_mcq(parts, items)
    if answer_items:
        from evals.engine.answers_run import run_answers

        run_answers(parts, answer_items)
    if rubric_items:
        run_rubric(parts, rubric_items)


def _rubric_manifest(
    config: EvalConfig, paths: Paths, model: CachingGenerator | None, rubric_items: dict[str, Any]
) -> dict[str, Any]:
    """The rubric sets' sizes and the judge (settings, identity, prompt version) for the manifest."""
    if not rubric_items:
        return {}
    return {
        "rubric_items": {ds: len(v) for ds, v in rubric_items.items()},
        "rubric_judge": judge_note(config, paths, model),
    }


def write_outputs(
    folder: Path, records: list[ItemRecord], sets: dict[str, Any], cost: dict[str, Any], paths: Paths
) -> None:
    """metrics.json and report.md, then the TREC files under runs/ (so an id those cannot hold
    fails after the report is written)."""
    from evals.engine.report.summary import write_summary
    from evals.engine.report.trec_files import write_runs

    write_summary(folder, records, sets, cost, paths)
    write_runs(folder, records, sets)


def _manifest(
    config: EvalConfig,
    paths: Paths,
    model: CachingGenerator | None,
    items: dict[str, list[Any]],
    sets: dict[str, Any],
    answer_items: dict[str, list[Any]],
    skipped: dict[str, Any],
    started: str,
    summary: RunSummary,
    engine: RayEngine | None,
) -> dict[str, Any]:
    """What this session ran, on what model and indexes, and its cost, for ``manifest.json``."""
    return {
        "name": config.name,
        "seed": config.seed,
        "generator": model.fingerprint() if model is not None else None,
        "indexes": _index_fingerprints(config, paths),
        "items": {ds: len(v) for ds, v in items.items()},
        "queries": {ds: len(s.queries) for ds, s in sets.items()},
        "answer_items": {ds: len(v) for ds, v in answer_items.items()},
        "skipped_rows": skipped,
        "session": {
            "started": started,
            "seconds": round(summary.seconds, 1),
            "conditions": summary.cost(),
            "engine": _engine_note(engine, summary),
        },
    }


def _run_model(
    config: EvalConfig, paths: Paths, generator: Generator | None, engine: RayEngine | None, needed: bool
) -> CachingGenerator | None:
    """The run's model behind the run cache: a server pool's identity (its workers call it), the
    given generator, the profile's, or none when nothing in the run asks a model."""
    if engine is not None and engine.servers:
        return CachingGenerator(driver_generator(config, paths, engine), generation_cache_path(paths))
    if generator is not None:
        return CachingGenerator(generator, generation_cache_path(paths))
    return open_generator(config, paths) if needed else None


def _engine_note(engine: RayEngine | None, summary: RunSummary) -> dict[str, Any]:
    """How this session ran, for the manifest."""
    if engine is None:
        return {"name": "local"}
    return {
        "name": "ray",
        "workers": engine.workers,
        "address": engine.address,
        "servers": list(engine.servers),
        "per_server": engine.per_server,
        "max_restarts": engine.max_restarts,
        "workers_lost": summary.workers_lost,
        "workers_restarted": summary.workers_restarted,
    }


def _pool(
    engine: RayEngine | None,
    config: EvalConfig,
    paths: Paths,
    model: CachingGenerator | None,
    generator: Generator | None,
    needed: bool,
) -> AbstractContextManager[RayPool | None]:
    """Ray workers for the run's model items, or nothing (the local engine; no model items)."""
    if engine is None or model is None or not needed:
        return nullcontext(None)
    return ray_pool(engine, config, paths, model, None if engine.servers else generator)


def _index_fingerprints(config: EvalConfig, paths: Paths) -> dict[str, Any]:
    from indexes.manifest import read_manifest

    names = set(config.grid.index) if config.mcq else set()
    names |= set(config.retrieval_grid.index) if config.retrieval else set()
    names |= {i for e in config.rubric for i in (e.index or config.grid.index)}
    out: dict[str, Any] = {}
    for name in sorted(names):
        try:
            manifest = read_manifest(paths.indexes_dir / name)
        except MedciteError as exc:
            out[name] = {"error": str(exc)}
            continue
        embedder = (manifest.get("embedder") or {}).get("weights_sha256")
        fingerprint = manifest["corpus_fingerprint"]
        out[name] = {
            "corpus_fingerprint": fingerprint,
            "chunks": manifest["counts"]["chunks"],
            "embedder": embedder,
        }
    return out


def _no_cost() -> dict[str, Any]:
    """A condition's cost before any session or record is counted."""
    return {"answered": 0, "skipped": 0, "failed": 0, "seconds": 0.0, "cache_hits": 0, "cache_misses": 0}


def report_run(folder: Path, paths: Paths) -> Path:
    """Recompute metrics.json, the TREC files under runs/ and report.md from a run directory's records.

    For a run that was stopped part-way: the summary covers the items finished so far (a
    comparison pairs only items both arms answered, and says how many were unpaired).
    """
    import json

    stored = folder / "config.json"
    if not stored.is_file():
        raise ConfigError(f"{folder} is not a run directory (no config.json); give the folder eval run wrote")
    config = EvalConfig.model_validate(json.loads(stored.read_text(encoding="utf-8")))
    run = RunDir(folder)
    records = run.records()
    if not records:
        raise ConfigError(f"{folder} has no finished items yet; nothing to report")
    manifest_path = folder / "manifest.json"
    cost: dict[str, Any] = {}
    if manifest_path.is_file():
        for session in json.loads(manifest_path.read_text(encoding="utf-8")).get("sessions", []):
            for name, c in (session.get("conditions") or {}).items():
                total = cost.setdefault(name, _no_cost())
                for key in ("answered", "failed", "seconds", "cache_hits", "cache_misses"):
                    total[key] += c.get(key, 0)
    if not cost:  # a run killed before it could write its manifest: time from the records
        for r in records:
            c = cost.setdefault(r.condition, _no_cost())
            c["answered"] += 1
            c["failed"] += r.pred is None and r.gold is not None
            c["seconds"] = round(c["seconds"] + r.latency_s, 1)
    write_outputs(folder, records, load_sets(config, paths), cost, paths)
    return folder / "report.md"
