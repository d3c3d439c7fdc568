"""Rubric files in HealthBench's layout (``rubric:<file.jsonl>``), read as published, no conversion.

One JSON object per line: ``prompt_id``, ``prompt`` (chat messages ``{role, content}``, the last
one the user's), ``rubrics`` (``{criterion, points, tags}``; negative points for something the
reply should not do), ``example_tags``, ``ideal_completions_data`` (null or an object; never
shown to anything) and ``canary`` (read, checked to be a string, then dropped: it reaches no
prompt, record or report). Other keys are ignored. A criterion may carry a ``matcher``
(medcite's extension, :class:`evals.types.Matcher`: ``{"kind": "regex", "pattern": ...}``,
``{"kind": "cites", "sources": [...]}`` or ``{"kind": "mode", "modes": [...]}``); without one
the run's judge grades it.

The whole file is checked before anything runs: any bad row makes :func:`load_rubric_file`
raise one :class:`RubricFileError` naming the file, each bad line and field (the first
``MAX_LISTED``), and no item is returned.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator

from core.errors import ConfigError
from core.types import Message
from evals.types import Criterion, Matcher, RubricItem

MAX_LISTED = 10


class RubricFileError(ConfigError):
    """A rubric file that cannot be read whole; the message names the file, line and field of the
    first problems, ``problems`` holds them all."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


class _Model(BaseModel):  # keys of a later HealthBench release are ignored, types are strict
    model_config = ConfigDict(extra="ignore", strict=True)


class _Message(_Model):
    role: Literal["system", "developer", "user", "assistant"]
    content: StrictStr = Field(min_length=1)


class _Matcher(_Model):
    model_config = ConfigDict(extra="forbid", strict=True)  # medcite's own: a typo is an error

    kind: Literal["regex", "cites", "mode"]
    pattern: StrictStr | None = Field(default=None, min_length=1)
    sources: list[StrictStr] = Field(default_factory=list)
    modes: list[StrictStr] = Field(default_factory=list)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from None
        return pattern


class _Rubric(_Model):
    criterion: StrictStr = Field(min_length=1)
    points: float = Field(allow_inf_nan=False)
    tags: list[StrictStr] = Field(default_factory=list)
    matcher: _Matcher | None = None


class _Row(_Model):
    prompt_id: StrictStr = Field(min_length=1)
    prompt: list[_Message] = Field(min_length=1)
    rubrics: list[_Rubric] = Field(min_length=1)
    example_tags: list[StrictStr] = Field(default_factory=list)
    ideal_completions_data: dict[str, Any] | None = None
    canary: StrictStr | None = None

    @field_validator("prompt")
    @classmethod
    def _ends_with_the_user(cls, prompt: list[_Message]) -> list[_Message]:
        if prompt and prompt[-1].role != "user":
            raise ValueError("the last message must be the user's (the reply to grade answers it)")
        return prompt


def _matcher(m: _Matcher, where: str) -> Matcher:
    needed = {"regex": m.pattern is not None, "cites": bool(m.sources), "mode": bool(m.modes)}
    if not needed[m.kind]:
        field = {"regex": "pattern", "cites": "sources", "mode": "modes"}[m.kind]
        raise ValueError(f"{where}.matcher: a {m.kind} matcher needs {field}")
    return Matcher(m.kind, m.pattern, tuple(m.sources), tuple(m.modes))


def row_item(row: dict[str, Any], dataset: str) -> RubricItem:
    """One parsed row as a :class:`RubricItem`; ValueError names the field that is wrong."""
    try:
        parsed = _Row.model_validate(row)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "row"
        raise ValueError(f"{field}: {first['msg']}") from None
    criteria = tuple(
        Criterion(
            r.criterion,
            float(r.points),
            tuple(r.tags),
            r.matcher.kind if r.matcher else "rubric",
            _matcher(r.matcher, f"rubrics.{i}") if r.matcher else None,
        )
        for i, r in enumerate(parsed.rubrics)
    )
    prompt = tuple(Message(m.role, m.content) for m in parsed.prompt)
    return RubricItem(dataset, parsed.prompt_id, prompt, criteria, tuple(parsed.example_tags))


def load_rubric_file(path: Path, dataset: str) -> list[RubricItem]:
    """Every row of ``path`` as a :class:`RubricItem`, or :class:`RubricFileError` if any is bad."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricFileError(f"cannot read rubric file {path}: {exc}; give a UTF-8 JSONL file") from exc
    items: list[RubricItem] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError(f"row: a JSON object is needed, not {type(row).__name__}")
            item = row_item(row, dataset)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{number}: row: not JSON ({exc.msg} at column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            problems.append(f"{path}:{number}: {exc}")
            continue
        if item.qid in seen:
            problems.append(f"{path}:{number}: prompt_id: {item.qid!r} repeats line {seen[item.qid]}")
        seen.setdefault(item.qid, number)
        items.append(item)
    if problems:
        listed = "\n  ".join(problems[:MAX_LISTED])
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise RubricFileError(
            f"{path}: {len(problems)} bad row(s), so nothing was run; fix them and run again "
            f"(`medcite eval validate rubric:{path}` lists them):\n  {listed}{more}",
            problems,
        )
    if not items:
        raise RubricFileError(f"{path}: no rows; a rubric file holds one JSON object per line")
    return items
