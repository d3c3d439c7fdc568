"""BM25 retrieval over a loaded index, with the index's own tokenizer."""

from __future__ import annotations

from core.types import Filters, Hit
from indexes import text
from indexes.store import LoadedIndex
from rag.retrieve.query import clean_query


class Bm25Retriever:
    name = "bm25"

    def __init__(self, index: LoadedIndex) -> None:
        self.index = index

    def retrieve(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        query = clean_query(query)
        allowed = self.index.rows_where(filters) if filters else None
        rows, scores = self.index.lexical.search(text.tokenize(query), k, allowed)
        return [
            Hit(chunk=self.index.chunks.get(int(r)), score=float(s), rank=n, retriever=self.name)
            for n, (r, s) in enumerate(zip(rows, scores, strict=True), start=1)
        ]
