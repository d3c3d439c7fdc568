"""Where an index build does its heavy work: in this process (``LocalEngine``) or on Ray.

``corpora/build.py`` owns the build: the order of the steps, the files, the manifest and the
atomic publish. An engine supplies only three operations, so both engines run the same build:

- ``chunk``: documents -> one list of chunks per document, in the order given;
- ``embed``: texts -> vectors through the content-addressed embedding cache (only cache misses
  are embedded; every batch is committed before the next, so a killed build resumes);
- ``map``: run independent write functions (one per shard) and return their results in order.

The Ray engine is ``corpora/engine_ray.py`` (``medcite index build --engine ray``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from core.errors import ConfigError
from core.types import Chunk, Document
from corpora.chunking import ChunkerConfig, TokenSpans, chunk_document
from indexes.dense.embedding_cache import Embedder, embed_cached

T = TypeVar("T")


class BuildEngine(Protocol):
    name: str

    def session(self) -> contextlib.AbstractContextManager[None]:
        """Held for the whole build (a Ray connection; nothing for the local engine)."""
        ...

    def chunk(
        self, documents: Iterable[Document], spans: TokenSpans, config: ChunkerConfig
    ) -> Iterator[list[Chunk]]: ...

    def embed(
        self, embedder: Embedder, texts: Sequence[str], cache_dir: Path, *, progress: bool
    ) -> tuple[np.ndarray, int]:
        """Vectors in input order and how many came from the cache."""
        ...

    def map(self, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> list[T]: ...

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the engine (under ``build``)."""
        ...


class LocalEngine:
    """Today's build: everything in this process, one step after another."""

    name = "local"

    def session(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def chunk(
        self, documents: Iterable[Document], spans: TokenSpans, config: ChunkerConfig
    ) -> Iterator[list[Chunk]]:
        for doc in documents:
            yield chunk_document(doc, spans, config)

    def embed(
        self, embedder: Embedder, texts: Sequence[str], cache_dir: Path, *, progress: bool
    ) -> tuple[np.ndarray, int]:
        return embed_cached(embedder, texts, cache_dir, progress=progress)

    def map(self, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> list[T]:
        return [fn(*args) for args in calls]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


def make_engine(
    name: str = "local", *, address: str | None = None, workers: int | None = None
) -> BuildEngine:
    """The engine the CLI names: ``local`` (this process) or ``ray`` (a cluster at ``address``, or a
    local Ray instance without one), with ``workers`` embedder actors."""
    if name not in {"local", "ray"}:
        raise ConfigError(f"unknown build engine {name!r}; choose local or ray")
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if name == "local":
        if address is not None:
            raise ConfigError("--address needs --engine ray (the local engine runs in this process)")
        if workers not in (None, 1):
            raise ConfigError("--workers needs --engine ray (the local engine is one process)")
        return LocalEngine()
    from core.ray_runtime import ray_module
    from corpora.engine_ray import RayEngine

    ray_module()  # a missing extra is reported now, before any work
    return RayEngine(address=address, workers=workers or 1)
