"""``medcite eval validate DATASET``: read a benchmark set the way a run would, with no model, and
say what was found and what is wrong, row by row, before any compute is spent on it."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.paths import Paths
from evals.datasets import FREE_TEXT, FREE_TEXT_LOADERS, MCQ, MCQ_LOADERS, QA_PREFIX, Kind, load_checked
from evals.datasets.files.user_sets import NoUsableRows
from evals.types import McqItem


@dataclass(frozen=True)
class Validation:
    text: str
    problems: int  # rows skipped; 0 means the whole set is usable


def _counts(counter: Counter[str] | Counter[int]) -> str:
    return ", ".join(f"{key}: {count}" for key, count in sorted(counter.items()))


def validate_rubric(name: str, paths: Paths) -> Validation:
    """A rubric set (``rubric:FILE``, ``clinician-rubric:PART``): items, criteria, how each is
    graded, or every bad row of the file."""
    from evals.datasets.rubric import RubricFileError, load_rubric_set

    try:
        items = load_rubric_set(name, paths)
    except RubricFileError as exc:
        lines = [f"{name}: not readable whole ({len(exc.problems)} problem(s)); a run would not start:"]
        return Validation("\n".join([*lines, *(f"  {p}" for p in exc.problems)]), len(exc.problems))
    criteria = [c for item in items for c in item.criteria]
    graded = Counter(c.matcher.kind if c.matcher else "judge" for c in criteria)
    negative = sum(c.points < 0 for c in criteria)
    lines = [
        f"{name}: {len(items)} items, {len(criteria)} criteria ({negative} with negative points)",
        f"  graded by: {_counts(graded)}",
        f"  multi-turn prompts: {sum(len(i.prompt) > 1 for i in items)}",
        f"  example tags: {len({t for i in items for t in i.example_tags})} distinct; criterion tags: "
        f"{len({t for c in criteria for t in c.tags})} distinct",
        f"next: add [[rubric]] dataset = {name!r} to a config and `medcite eval run` it"
        + ("; criteria without a matcher need a [rubric_judge]" if graded["judge"] else ""),
    ]
    return Validation("\n".join(lines), 0)


def validate_dataset(name: str, paths: Paths, columns: Mapping[str, str] | None = None) -> Validation:
    """The detected shape, item count, option-count and gold-letter distributions (multiple
    choice), notes on what was assumed, and every skipped row with its number and reason.

    Raises ConfigError (or SourceError for built-in sets) when the set cannot be read at all."""
    from evals.datasets.rubric import CLINICIAN_PREFIX, RUBRIC_PREFIX

    if name.startswith((RUBRIC_PREFIX, CLINICIAN_PREFIX)):
        return validate_rubric(name, paths)
    freetext = name.startswith(QA_PREFIX) or (name in FREE_TEXT_LOADERS and name not in MCQ_LOADERS)
    kind: Kind[Any] = FREE_TEXT if freetext else MCQ
    try:
        loaded = load_checked(kind, name, paths, columns)
    except NoUsableRows as exc:  # listed below like any skipped rows, all of them
        loaded = exc.loaded
    lines = [f"{name}: {loaded.shape}", f"  items: {len(loaded.items)} usable, {len(loaded.skipped)} skipped"]
    lines += [f"  note: {note}" for note in loaded.notes]
    mcq = [item for item in loaded.items if isinstance(item, McqItem)]
    if mcq:
        lines.append(f"  options per question: {_counts(Counter(len(i.options) for i in mcq))}")
        lines.append(f"  gold letters: {_counts(Counter(i.answer for i in mcq))}")
    elif loaded.items:
        with_reference = sum(1 for item in loaded.items if getattr(item, "reference", None))
        lines.append(f"  with a reference answer: {with_reference} of {len(loaded.items)}")
    if loaded.skipped:
        lines.append("  problems (these rows would be skipped):")
        lines += [
            f"    row {s.row}" + (f" (id {s.id})" if s.id not in (None, str(s.row)) else "") + f": {s.reason}"
            for s in loaded.skipped
        ]
    else:
        lines.append("  no problems found")
    lines.append(_next_step(name, columns, len(loaded.items), len(loaded.skipped)))
    return Validation("\n".join(lines), len(loaded.skipped))


def _next_step(name: str, columns: Mapping[str, str] | None, usable: int, problems: int) -> str:
    """What to run once the set is read: the run itself, or fixing the rows first."""
    mapped = ",".join(f"{k}={v}" for k, v in (columns or {}).items())
    run = f"medcite eval run --dataset {shlex.quote(name)}" + (
        f" --columns {shlex.quote(mapped)}" if mapped else ""
    )
    if not usable:
        return (
            "next: fix these rows or map the columns (--columns question=...,answer=...), and validate again"
        )
    if problems:
        return (
            f"next: fix these rows and validate again, or run its {usable} usable item(s) as they are: {run}"
        )
    return f"next: {run}  (closed-book vs RAG; add --n 50 for a seeded sample first)"
