"""Hybrid retrieval: BM25 and dense candidates fused by reciprocal rank or weighted scores."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import ConfigError
from core.types import Filters, Hit
from rag.profile import default_profile
from rag.protocols import Retriever
from rag.retrieve.fusion import ranked, reciprocal_rank_fusion, weighted_score_fusion


class HybridRetriever:
    """Fuses the runs of several retrievers; each fetches ``candidates`` (more than k) chunks.

    Filters go to every retriever, so they apply before fusion; the same chunk found by two
    retrievers is merged by chunk id (never by text) and carries the fused score.
    """

    name = "hybrid"

    def __init__(
        self,
        retrievers: list[Retriever],
        *,
        fusion: str | None = None,
        rrf_k: float | None = None,
        weights: Sequence[float] | None = None,
        candidates: int | None = None,
    ) -> None:
        """Settings left out take ``[retrieval]`` of the default profile (their one home)."""
        defaults = default_profile().retrieval
        fusion = defaults.fusion if fusion is None else fusion
        if fusion not in {"rrf", "weighted"}:
            raise ConfigError(f"unknown fusion {fusion!r}; choose rrf or weighted")
        weights = tuple(weights) if weights is not None else tuple(1.0 / len(retrievers) for _ in retrievers)
        if len(weights) != len(retrievers):
            raise ConfigError(f"{len(retrievers)} retrievers need {len(retrievers)} fusion weights")
        self.retrievers = retrievers
        self.fusion = fusion
        self.rrf_k = defaults.rrf_k if rrf_k is None else rrf_k
        self.weights = weights
        self.candidates = defaults.candidates if candidates is None else candidates

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        depth = max(self.candidates, k)
        runs = [r.retrieve(query, depth, filters) for r in self.retrievers]
        chunks = {hit.chunk.chunk_id: hit.chunk for run in runs for hit in run}
        if self.fusion == "rrf":
            fused = reciprocal_rank_fusion([[h.chunk.chunk_id for h in run] for run in runs], self.rrf_k)
        else:
            fused = weighted_score_fusion(
                [{h.chunk.chunk_id: h.score for h in run} for run in runs], self.weights
            )
        return [
            Hit(chunk=chunks[cid], score=score, rank=n, retriever=self.name)
            for n, (cid, score) in enumerate(ranked(fused)[:k], start=1)
        ]
