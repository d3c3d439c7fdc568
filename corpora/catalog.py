"""Turn a source name (plus optional path and options) into a ready Source.

The embedded default corpus is open-medicine guideline summaries plus HPO disease references
for Orphanet-annotated diseases: both ship in registry packages, so it builds on any fresh
machine. NGC summaries are evaluation-only and never part of a default.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import ConfigError, SourceError
from core.paths import Paths
from core.registry import SOURCES, resolve
from corpora.sources.base import Source

DEFAULT_CORPUS: tuple[str, ...] = ("open-medicine", "hpo")


def parse_option(raw: str) -> tuple[str, str, Any]:
    """``SOURCE.KEY=VALUE`` -> (source, key, value); commas make tuples, digits ints."""
    head, sep, value = raw.partition("=")
    source, dot, key = head.partition(".")
    if not sep or not dot or not key:
        raise ConfigError(f"option {raw!r} must look like SOURCE.KEY=VALUE (e.g. hpo.definitions=all)")
    parsed: Any = value
    if "," in value:
        parsed = tuple(v.strip() for v in value.split(",") if v.strip())
    elif value.isdigit():
        parsed = int(value)
    elif value.lower() in {"true", "false"}:
        parsed = value.lower() == "true"
    return source, key, parsed


def open_source(
    name: str,
    paths: Paths,
    *,
    path: Path | None = None,
    options: Mapping[str, Any] | None = None,
    fetch: bool = False,
) -> Source:
    """Construct source ``name``; its data comes from ``path``, the source-data folder, or a download."""
    cls = resolve("source", name)
    options = dict(options or {})
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "path"}
    unknown = set(options) - accepted
    if unknown:
        raise ConfigError(
            f"source {name} has no option(s) {sorted(unknown)}; it accepts {sorted(accepted) or 'none'}"
        )
    if path is None and fetch:
        if not hasattr(cls, "fetch"):
            raise SourceError(f"source {name} cannot be downloaded; pass --path to a local copy")
        path = cls.fetch(paths.downloads_dir / name)
    if path is None and cls.default_subdir is not None:
        path = paths.source_data / cls.default_subdir
        if not path.exists():
            how = " or add --fetch to download it" if hasattr(cls, "fetch") else ""
            raise SourceError(f"no local copy of {name} at {path}; set MEDCITE_SOURCE_DATA, pass --path{how}")
    try:
        return cls(path=path, **options)  # type: ignore[no-any-return]
    except TypeError as exc:
        raise ConfigError(f"bad options for source {name}: {exc}") from exc


def known_sources() -> list[str]:
    return sorted(SOURCES)
