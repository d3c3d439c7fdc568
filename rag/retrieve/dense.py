"""Dense retrieval: embed the query with the index's embedder, search FAISS."""

from __future__ import annotations

from core.errors import ConfigError
from core.types import Filters, Hit
from indexes.store import LoadedIndex
from rag.protocols import Embedder
from rag.retrieve.query import clean_query


class DenseRetriever:
    name = "dense"

    def __init__(self, index: LoadedIndex, embedder: Embedder) -> None:
        if index.dense is None:
            raise ConfigError(
                f"{index.folder} has no dense index (built with --no-dense); "
                "rebuild it with dense vectors or use --mode bm25"
            )
        self.index = index
        self.dense = index.dense
        self.embedder = embedder

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        query = clean_query(query)
        allowed = self.index.rows_where(filters) if filters else None
        vector = self.embedder.embed([query])[0]
        rows, scores = self.dense.search(vector, k, allowed)
        return [
            Hit(chunk=self.index.chunks.get(int(r)), score=float(s), rank=n, retriever=self.name)
            for n, (r, s) in enumerate(zip(rows, scores, strict=True), start=1)
        ]
