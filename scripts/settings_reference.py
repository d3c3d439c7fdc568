"""Writes docs/settings.md, the reference of every profile and server setting, from the models.

    .venv/bin/python scripts/settings_reference.py

Types, constraints and meanings come from the pydantic models in rag/profile.py and
api/settings.py, a profile setting's default from rag/profiles/default.toml (its one home: the
models have none), so the page cannot drift from the code: tests/unit/test_settings_reference.py
fails when the committed page differs from ``render()``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from api.settings import ApiSettings  # noqa: E402
from rag.profile import Profile, available_profiles, default_profile, load_profile  # noqa: E402

OUT = ROOT / "docs" / "settings.md"
HEADER = "| setting | type | default | allowed values | meaning |\n|---|---|---|---|---|"

INTRO = """\
# Settings reference

Generated from the models in `rag/profile.py` and `api/settings.py` by
`.venv/bin/python scripts/settings_reference.py`; do not edit by hand (a test compares them).

A **profile** is a TOML file naming everything a question goes through: the index, retrieval,
reranking, the generator, verification and quoting. `medcite ask --profile NAME` takes a packaged
profile by name, `--profile path/to/mine.toml` a file of your own, and `medcite profiles` lists the
packaged ones; the server serves the profiles named in `MEDCITE_PROFILES`. A key left out takes
the default below, which is `rag/profiles/default.toml`'s (every profile states only what it
changes); an unknown key is an error, so a typo never silently falls back to a default. A setting
shown as *unset* has no value: write `"unset"` to clear one (TOML has no null).

The packaged profiles (`rag/profiles/`):

"""


def _literal_values(annotation: Any) -> list[Any]:
    """The choices of a ``Literal`` (or ``Literal | None``) annotation; [] for any other type."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if _is_union(annotation):
        return [v for arg in get_args(annotation) for v in _literal_values(arg)]
    return []


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def type_name(annotation: Any) -> str:
    """A reader's name for a field's type: ``float``, ``string``, ``list of string``, ``path``."""
    if _is_union(annotation):
        named = [type_name(arg) for arg in get_args(annotation) if arg is not type(None)]
        return " or ".join(dict.fromkeys(named))
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:  # a constrained number: its type
        return type_name(args[0])
    if origin is Literal:
        return "string"
    if origin in (tuple, list):
        if origin is tuple and Ellipsis not in args:
            return "[" + ", ".join(type_name(arg) for arg in args) + "]"
        return f"list of {type_name(args[0])}"
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def toml_value(value: Any) -> str:
    """A default as it would be written in a profile."""
    if value is None:
        return "*unset*"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str | Path):
        return f'`"{value}"`'
    if isinstance(value, tuple | list):
        return "`[" + ", ".join(toml_value(v).strip("`") for v in value) + "]`"
    return f"`{value}`"


def env_value(value: Any) -> str:
    """A default as it would be written in the environment (lists comma-separated)."""
    if value is None:
        return "*unset*"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | tuple):
        return f"`{','.join(str(v) for v in value)}`" if value else "*empty*"
    return f"`{value}`"


def allowed(field: FieldInfo) -> str:
    """Literal choices, and the numeric bounds from the field's constraints (or those of a
    constrained number it may also be)."""
    choices = ", ".join(f'`"{c}"`' for c in _literal_values(field.annotation))
    metadata = list(field.metadata)
    for arg in get_args(field.annotation) if _is_union(field.annotation) else ():
        if get_origin(arg) is Annotated:
            metadata += [m for inner in get_args(arg)[1:] for m in getattr(inner, "metadata", [inner])]
    if choices and not metadata:
        return choices
    bounds = {}
    for item in metadata:
        for kind in ("ge", "gt", "le", "lt"):
            if isinstance(item, getattr(annotated_types, kind.capitalize())):
                bounds[kind] = getattr(item, kind)
    symbols = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    if "ge" in bounds and "le" in bounds:
        numbers = f"{bounds['ge']} to {bounds['le']}"
    else:
        numbers = ", ".join(f"{symbols[k]} {v}" for k, v in bounds.items())
    return ", ".join(part for part in (numbers, choices) if part)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(
    fields: dict[str, FieldInfo],
    name: Callable[[str], str],
    value: Callable[[Any], str],
    defaults: BaseModel | None = None,
) -> str:
    """One Markdown table: a row per field, named and valued by the given functions; the default
    is ``defaults``' value (default.toml's, for a profile section), else the field's own."""
    rows = [HEADER]
    for key, field in fields.items():
        default = (
            getattr(defaults, key) if defaults is not None else field.get_default(call_default_factory=True)
        )
        cells = (
            f"`{name(key)}`",
            type_name(field.annotation),
            "(required)" if default is PydanticUndefined else value(default),
            allowed(field),
            field.description or "",
        )
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows)


def sections() -> dict[str, type[BaseModel]]:
    """The profile's ``[section]`` names and their models, in the model's order."""
    found = {}
    for key, field in Profile.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found[key] = annotation
    return found


def _packaged() -> str:
    lines = []
    for name in available_profiles():
        description = load_profile(name).description
        lines.append(f"- [`{name}`](../rag/profiles/{name}.toml): {description}")
    return "\n".join(lines)


def render() -> str:
    """The whole of docs/settings.md."""
    nested = sections()
    default = default_profile()
    top = {k: f for k, f in Profile.model_fields.items() if k not in nested}
    parts = [INTRO + _packaged(), "## Top-level keys", table(top, str, toml_value, default)]
    for key, model in nested.items():
        description = Profile.model_fields[key].description
        section = table(model.model_fields, str, toml_value, getattr(default, key))
        parts += [f"## `[{key}]`", description or "", section]
    prefix = ApiSettings.model_config.get("env_prefix", "")
    parts += [
        "## Server settings",
        "`medcite serve` reads these environment variables (`api/settings.py`) and refuses to start "
        "on an invalid or unsafe combination. Lists are comma-separated.",
        table(ApiSettings.model_fields, lambda key: f"{prefix}{key.upper()}", env_value),
    ]
    return "\n\n".join(parts) + "\n"


def main() -> None:
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
