"""The no-op reranker: retrieval order and scores pass through (the ablation baseline)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.types import Hit


class IdentityReranker:
    """Keeps the retriever's order and scores; only renumbers ranks from 1.

    Its scores are retrieval scores, not probabilities (see ``rag.rerank.evidence``), which is
    why an evidence threshold on it needs explicit permission.
    """

    name = "none"
    scores_are_probabilities = False

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        return [dataclasses.replace(hit, rank=n) for n, hit in enumerate(hits, start=1)]
