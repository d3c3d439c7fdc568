"""One small protocol per stage. Implementations live in rag/retrieve, rag/rerank, rag/generate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from rag.types import Filters, Hit


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        ...


class Retriever(Protocol):
    name: str

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first, with scores (higher is better)."""
        ...
