"""Hybrid retrieval: BM25 and dense candidates fused by reciprocal rank."""

from __future__ import annotations

from rag.protocols import Retriever
from rag.retrieve.fusion import ranked, reciprocal_rank_fusion
from rag.types import Filters, Hit


class HybridRetriever:
    """Fuses the runs of several retrievers; each fetches ``candidates`` (> k) chunks."""

    name = "hybrid"

    def __init__(self, retrievers: list[Retriever], *, rrf_k: float = 60.0, candidates: int = 50) -> None:
        self.retrievers = retrievers
        self.rrf_k = rrf_k
        self.candidates = candidates

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        depth = max(self.candidates, k)
        runs = [r.retrieve(query, depth, filters) for r in self.retrievers]
        chunks = {hit.chunk.chunk_id: hit.chunk for run in runs for hit in run}
        fused = reciprocal_rank_fusion([[h.chunk.chunk_id for h in run] for run in runs], self.rrf_k)
        return [
            Hit(chunk=chunks[cid], score=score, rank=n, retriever=self.name)
            for n, (cid, score) in enumerate(ranked(fused)[:k], start=1)
        ]
