"""One small protocol per stage. Implementations live in rag/retrieve, rag/rerank, rag/generate."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from core.types import Filters, Generation, Hit, Message


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


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        """The same hits re-scored by relevance to ``question`` (score in [0, 1] where the
        backend has a probability), best first, ranks renumbered from 1."""
        ...


class Generator(Protocol):
    name: str

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Generation:
        """Complete a chat. Raises GeneratorError (timeout, unreachable, malformed output)."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Iterator[str]:
        """Yield text pieces as they are generated."""
        ...

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        """Log-probability of each candidate string as the first token of the assistant reply.

        Used for multiple-choice letters ("A".."E") and yes/no relevance judgements; a
        candidate the model cannot produce as one token gets ``-inf``.
        """
        ...

    def fingerprint(self) -> dict[str, Any]:
        """Model identity for caches and run manifests (name, file sha256, parameters)."""
        ...
