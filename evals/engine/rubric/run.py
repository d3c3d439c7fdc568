"""``[[rubric]]`` sets in ``medcite eval run``: each arm replies, and the reply is graded at once.

Arms (``EvalConfig.rubric_conditions``): closed-book (the model alone, the closed-book prompt
with the conversation's earlier turns), each RAG cell of the grid (``Pipeline.answer`` with the
earlier turns as history) and each ``rubric_profiles`` entry as shipped, named
``rubric/<cell>``. The record written per item and arm already carries every criterion's grade
(:mod:`evals.engine.rubric.grade`), so a resumed run neither answers nor grades an item twice; the
answers sit behind the run's generation cache and the judge's calls behind the judge cache. With
``--engine ray`` the same record function runs on the workers.
"""

from __future__ import annotations

import functools
import time
from contextlib import AbstractContextManager, closing, nullcontext
from typing import Any

from core.errors import ConfigError, GeneratorError, MedciteError
from core.paths import Paths
from core.types import Message
from evals.engine.conditions import ConditionStats, not_done, run_condition
from evals.engine.config import EvalConfig, condition_profile
from evals.engine.engine_ray import EvalRun, Task, fan_out
from evals.engine.judge.cache import CachedJudge, JudgeCache, default_judge_cache_path
from evals.engine.rubric.grade import Graded, JudgeSettings, Reply, grade, needs_judge
from evals.engine.rubric.judge import PROMPT_VERSION
from evals.records import ItemRecord
from evals.types import RubricItem
from rag.assemble import assemble, make_generator
from rag.generate.prompts import prompts
from rag.profile import GeneratorConfig, load_profile
from rag.protocols import Generator


def judge_settings(config: EvalConfig) -> GeneratorConfig | None:
    """The judge's [generator] settings (``RubricJudge.settings``); None: the run has no judge."""
    judge = config.rubric_judge
    return judge.settings(config.profile) if judge is not None else None


def _same_as_run(config: EvalConfig) -> bool:
    return judge_settings(config) == load_profile(config.profile).generator


@functools.lru_cache(maxsize=2)
def _separate_judge(settings_json: str, paths: Paths) -> Generator:
    """A judge other than the run's model, made once per process (a Ray worker's too)."""
    return make_generator(GeneratorConfig.model_validate_json(settings_json), paths)


def judge_model(config: EvalConfig, paths: Paths, run_model: Generator) -> Generator | None:
    """The judge's model: the run's own (``run_model``, unwrapped from the generations cache)
    when its settings are the run's, else the one they describe; None without a judge."""
    settings = judge_settings(config)
    if settings is None:
        return None
    if _same_as_run(config):
        return getattr(run_model, "inner", run_model)
    return _separate_judge(settings.model_dump_json(), paths)


def judge_note(config: EvalConfig, paths: Paths, run_model: Generator | None) -> dict[str, Any] | None:
    """The judge as the manifest records it: settings, model identity and prompt version."""
    settings = judge_settings(config)
    if settings is None or config.rubric_judge is None:
        return None
    same = _same_as_run(config)
    model = run_model if same else _separate_judge(settings.model_dump_json(), paths)
    return {
        **config.rubric_judge.model_dump(mode="json"),
        "generator": settings.model_dump(mode="json"),
        "fingerprint": model.fingerprint() if model is not None else None,
        "same_model_as_run": same,
        "prompt_version": PROMPT_VERSION,
    }


def load_rubric_items(config: EvalConfig, paths: Paths) -> dict[str, list[RubricItem]]:
    """Every ``[[rubric]]`` set read and checked whole, then sampled (stratified by kind)."""
    from evals.datasets import sample
    from evals.datasets.rubric import STRATA, load_rubric_set

    items: dict[str, list[RubricItem]] = {}
    for entry in config.rubric:
        pool = load_rubric_set(entry.dataset, paths)
        try:
            items[entry.dataset] = sample(pool, entry.n, config.seed, STRATA) if entry.n else pool
        except ValueError as exc:
            raise ConfigError(f"rubric dataset {entry.dataset}: {exc}") from exc
        unmatched = needs_judge(items[entry.dataset])
        if unmatched and config.rubric_judge is None:
            raise ConfigError(
                f"rubric dataset {entry.dataset}: {unmatched} criteria have no matcher and need a judge; "
                "add a [rubric_judge] table to the config (e.g. an empty one: the run's own model)"
            )
    return items


def closed_book_messages(item: RubricItem) -> list[Message]:
    """The closed-book prompt around the conversation: a single-turn item gets the pipeline's own
    closed-book messages; earlier turns go between (a conversation's system turn joins ours)."""
    p = prompts()["closed_book"]
    system = "\n\n".join(
        [p["system"], *(m.content for m in item.history if m.role in ("system", "developer"))]
    )
    turns = [m for m in item.history if m.role in ("user", "assistant")]
    return [Message("system", system), *turns, Message("user", p["user"].format(question=item.question))]


def _reply(generator: Generator, assembled: Any, item: RubricItem, config: EvalConfig) -> tuple[Reply, Any]:
    """The arm's reply: closed-book from the model, else the pipeline's answer."""
    if assembled is None:
        settings = load_profile(config.profile).generator
        generation = generator.generate(
            closed_book_messages(item), max_tokens=settings.max_tokens, temperature=settings.temperature
        )
        return Reply(generation.text.strip(), "closed-book"), None
    answer = assembled.pipeline.answer(item.question, history=item.history)
    cited = tuple(dict.fromkeys(c.doc_id for c in answer.citations))
    return Reply(answer.text, answer.mode, cited), answer


def rubric_record(
    generator: Generator,
    assembled: Any,
    judge: JudgeSettings,
    item: RubricItem,
    condition: str,
    config: EvalConfig,
) -> ItemRecord:
    """One item's reply in one arm with every criterion graded (an error becomes the record's)."""
    start = time.perf_counter()
    tags = list(item.example_tags)
    try:
        reply, answer = _reply(generator, assembled, item, config)
    except MedciteError as exc:
        failed = f"{type(exc).__name__}: {exc}"
        return ItemRecord(item.dataset, item.qid, condition, error=failed, extra={"example_tags": tags})
    seconds = time.perf_counter() - start
    graded, error = Graded(), None
    try:
        graded = grade(item, reply, judge)
    except GeneratorError as exc:  # the judge timed out or is down: the reply is kept, ungraded
        error = f"judge {type(exc).__name__}: {exc}"
    return ItemRecord(
        item.dataset,
        item.qid,
        condition,
        answer=reply.text,
        citations=tuple(c.chunk_id for c in answer.citations) if answer is not None else (),
        retrieved=_retrieved(answer),
        latency_s=round(seconds, 3),
        error=error,
        extra={
            "mode": reply.mode,
            "cited_documents": list(reply.cited_documents),
            "example_tags": tags,
            "grades": graded.grades,
            "score": graded.score if error is None else None,
            "judge_calls": graded.judge_calls,
            "judge_seconds": round(time.perf_counter() - start - seconds, 3),
            "notes": list(answer.notes) if answer is not None else [],
        },
    )


def _retrieved(answer: Any) -> tuple[tuple[str, float], ...]:
    if answer is None:
        return ()
    return tuple((h.chunk.chunk_id, round(float(h.score), 6)) for h in answer.evidence)


def _settings(config: EvalConfig, judge: Generator | None) -> JudgeSettings:
    j = config.rubric_judge
    if j is None:
        return JudgeSettings(None)
    return JudgeSettings(judge, j.matched, j.attempts, j.max_tokens)


def rubric_task_record(
    model: Any, assembled: Any, task: Task, config: EvalConfig, paths: Paths
) -> ItemRecord:
    """A Ray worker's reply and grades for one item (``evals.engine.engine_ray.Task.answer``)."""
    inner = judge_model(config, paths, model)
    judge = CachedJudge(inner, JudgeCache(default_judge_cache_path(paths))) if inner is not None else None
    try:
        return rubric_record(model, assembled, _settings(config, judge), task.item, task.condition, config)
    finally:
        if judge is not None:
            judge.cache.close()


def _opened(
    cell: dict[str, Any], config: EvalConfig, paths: Paths, generator: Generator
) -> AbstractContextManager[Any]:
    if cell["closed_book"]:
        return nullcontext(None)
    profile = (
        load_profile(cell["profile"])
        if "profile" in cell
        else condition_profile(load_profile(config.profile), cell)
    )
    return closing(assemble(profile, paths, generator=generator))


def run_rubric(parts: EvalRun, items: dict[str, list[RubricItem]]) -> None:
    """Every rubric set under each of its arms, set by set; with a Ray pool, on its workers."""
    config, paths, run, generator, pool = parts.config, parts.paths, parts.run, parts.generator, parts.pool
    done = run.done_keys()
    inner = judge_model(config, paths, generator) if pool is None else None
    judge = CachedJudge(inner, JudgeCache(default_judge_cache_path(paths))) if inner is not None else None
    settings, tasks = _settings(config, judge), []
    try:
        for ds, ds_items in items.items():
            for cell in config.rubric_conditions(ds):
                name = f"rubric/{cell['name'].removeprefix('rag/')}"
                stats = parts.summary.conditions.setdefault(name, ConditionStats())
                todo = not_done(ds_items, [(name, ds, it.qid) for it in ds_items], done, stats)
                if todo and pool is not None:
                    tasks += [Task("rubric", cell, name, ds, item, rubric_task_record) for item in todo]
                elif todo:

                    def answer(assembled: Any, item: RubricItem, name: str = name) -> ItemRecord:
                        return rubric_record(generator, assembled, settings, item, name, config)

                    run_condition(
                        todo,
                        functools.partial(_opened, cell, config, paths, generator),
                        answer,
                        run,
                        stats,
                        generator=generator,
                        failed=lambda r: r.error is not None,
                        desc=f"{ds} {name}",
                        progress=parts.progress,
                    )
        if tasks and pool is not None:
            fan_out(pool, tasks, run, parts.summary.conditions, parts.progress)
    finally:
        if judge is not None:
            judge.cache.close()
