"""One loop for every eval condition: answer the items not done yet, write each record as it
comes, and add what it cost to the condition's stats.

Multiple-choice, free-text and retrieval conditions differ in how they answer one item and what
they open around the loop (a pipeline, an index); the loop itself, and how skips, failures,
seconds and generator cache counts add up across datasets and resumed runs, is written here once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from tqdm import tqdm

from evals.engine.generation_cache import CachingGenerator
from evals.engine.rundir import RunDir
from evals.records import ItemRecord, write_records

T = TypeVar("T")  # an item
A = TypeVar("A")  # what a condition opens to answer items with


@dataclass
class ConditionStats:
    """What one condition did in this session, summed over its datasets."""

    answered: int = 0  # records written now (failures included)
    skipped: int = 0  # items a previous session already answered
    failed: int = 0
    seconds: float = 0.0
    cache_hits: int = 0  # generator calls answered by the run cache
    cache_misses: int = 0  # generator calls that ran the model

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def not_done(
    items: Sequence[T],
    keys: Sequence[tuple[str, str, str]],
    done: set[tuple[str, str, str]],
    stats: ConditionStats,
) -> list[T]:
    """The items whose ``(condition, dataset, qid)`` key (``keys``, in item order) has no record
    yet; the others are counted as skipped."""
    todo = [item for item, key in zip(items, keys, strict=True) if key not in done]
    stats.skipped += len(items) - len(todo)
    return todo


def run_condition(
    todo: Sequence[T],
    opened: Callable[[], AbstractContextManager[A]],
    answer: Callable[[A, T], ItemRecord],
    run: RunDir,
    stats: ConditionStats,
    *,
    generator: CachingGenerator | None,
    failed: Callable[[ItemRecord], bool],
    desc: str,
    progress: bool,
) -> None:
    """Open what the condition needs (a pipeline, an index), answer each item with it, append each
    record at once (a crash loses at most the item in hand), and add the cost to ``stats``."""
    start = time.perf_counter()
    hits0 = generator.hits if generator is not None else 0
    misses0 = generator.misses if generator is not None else 0
    try:
        with opened() as resource:
            for item in tqdm(todo, desc=desc, unit="q", disable=not progress, dynamic_ncols=True):
                record = answer(resource, item)
                write_records(run.records_path, [record])
                stats.answered += 1
                stats.failed += failed(record)
    finally:
        stats.seconds = round(stats.seconds + time.perf_counter() - start, 1)
        if generator is not None:
            stats.cache_hits += generator.hits - hits0
            stats.cache_misses += generator.misses - misses0
