"""The clinician benchmark as rubric items (``clinician-rubric:<part>``), by a template of data.

``clinician.toml`` beside this module declares, per kind of question (answerable, near, far),
the criteria each item gets: the text a judge reads (``{quote}``, ``{siblings}``, ``{sources}``,
``{question}`` filled from the item), points, tags and a deterministic matcher whose pattern or
sources come from one of the item's fields (``key_fact``, ``sibling_fact``, ``sources``), or a
set of reply modes. Example tags are templates too (``kind:{kind}``; a list field such as
``wording`` gives one tag per value). Parts: ``test2``, ``test3`` (their frozen files) and
``test``, ``dev`` (the first file's parts).
"""

from __future__ import annotations

import string
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ConfigError
from core.types import Message
from evals.datasets.clinician import (
    QUESTIONS_FILE,
    TEST2_FILE,
    TEST3_FILE,
    ClinicianItem,
    Part,
    load_clinician,
)
from evals.types import Criterion, Matcher, RubricItem

TEMPLATE = Path(__file__).with_name("clinician.toml")
PARTS: dict[str, tuple[Path, Part | None]] = {
    "test2": (TEST2_FILE, None),
    "test3": (TEST3_FILE, None),
    "test": (QUESTIONS_FILE, "test"),
    "dev": (QUESTIONS_FILE, "dev"),
}
FIELDS = ("quote", "siblings", "sources", "question", "kind", "wording", "guideline")
PATTERN_FIELDS = ("key_fact", "sibling_fact")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MatcherTemplate(_Strict):
    kind: Literal["regex", "cites", "mode"]
    field: Literal["key_fact", "sibling_fact", "sources"] | None = None
    modes: tuple[str, ...] = ()


class CriterionTemplate(_Strict):
    kind: str = Field(min_length=1)
    items: tuple[Literal["answerable", "near", "far"], ...] = Field(min_length=1)
    text: str = Field(min_length=1)
    points: float = Field(allow_inf_nan=False)
    tags: tuple[str, ...] = ()
    matcher: MatcherTemplate | None = None


class Template(_Strict):
    version: int
    example_tags: tuple[str, ...] = ()
    criteria: tuple[CriterionTemplate, ...] = Field(min_length=1)


def load_template(path: Path = TEMPLATE) -> Template:
    """The template, checked: strict keys, known placeholders, a field for each regex and cites matcher."""
    try:
        template = Template.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"invalid clinician rubric template {path}: {exc}") from exc
    texts = [*template.example_tags, *(c.text for c in template.criteria)]
    for text in texts:
        unknown = {f for _, f, _, _ in string.Formatter().parse(text) if f} - set(FIELDS)
        if unknown:
            raise ConfigError(f"{path}: {text!r} names {sorted(unknown)}; known fields: {', '.join(FIELDS)}")
    for c in template.criteria:
        if c.matcher is not None and c.matcher.kind != "mode" and c.matcher.field is None:
            raise ConfigError(f"{path}: criterion {c.kind!r}: a {c.matcher.kind} matcher needs field")
    return template


def _values(item: ClinicianItem) -> dict[str, Any]:
    return {
        "quote": item.quote or "",
        "siblings": " / ".join(f'"{s}"' for s in item.siblings),
        "sources": ", ".join(item.sources),
        "question": item.question,
        "kind": item.kind,
        "wording": list(item.wording),
        "guideline": item.guideline or "",
    }


def _fill(text: str, values: dict[str, Any]) -> list[str]:
    """``text`` filled in; a list field gives one text per value (none for an empty list)."""
    lists = [f for _, f, _, _ in string.Formatter().parse(text) if f and isinstance(values.get(f), list)]
    if not lists:
        return [text.format_map(values)]
    name = lists[0]
    return [text.format_map({**values, name: v}) for v in values[name]]


def _matcher(template: MatcherTemplate, item: ClinicianItem) -> Matcher | None:
    """The item's matcher, or None when the item leaves the template's field empty."""
    if template.kind == "mode":
        return Matcher("mode", modes=template.modes)
    if template.field in PATTERN_FIELDS:
        pattern = getattr(item, str(template.field))
        return Matcher("regex", pattern=pattern, modes=template.modes) if pattern else None
    return Matcher("cites", sources=item.sources, modes=template.modes) if item.sources else None


def rubric_item(item: ClinicianItem, template: Template, dataset: str) -> RubricItem:
    values = _values(item)
    criteria = []
    for c in template.criteria:
        if item.kind not in c.items:
            continue
        matcher = _matcher(c.matcher, item) if c.matcher is not None else None
        if c.matcher is not None and matcher is None:
            continue  # e.g. no sibling line for this question: no sibling criterion
        criteria.append(Criterion(_fill(c.text, values)[0], c.points, c.tags, c.kind, matcher))
    tags = tuple(tag for t in template.example_tags for tag in _fill(t, values))
    return RubricItem(dataset, item.qid, (Message("user", item.question),), tuple(criteria), tags, item.kind)


def load_clinician_rubric(part: str, dataset: str, template_path: Path = TEMPLATE) -> list[RubricItem]:
    """The questions of ``part`` as rubric items (ConfigError for an unknown part)."""
    if part not in PARTS:
        raise ConfigError(f"unknown clinician part {part!r}; known: {', '.join(PARTS)}")
    template = load_template(template_path)
    path, which = PARTS[part]
    items = [rubric_item(item, template, dataset) for item in load_clinician(path, which)]
    empty = [i.qid for i in items if not i.criteria]
    if empty:
        raise ConfigError(f"{template_path}: gives no criterion to {len(empty)} item(s), e.g. {empty[0]}")
    return items
