"""Hand-made candidate passages for the reranker tests."""

from __future__ import annotations

from core.types import Chunk, Hit


def make_hit(chunk_id: str, text: str, *, score: float = 0.0, rank: int = 1, title: str = "") -> Hit:
    chunk = Chunk(
        chunk_id=chunk_id,
        doc_id=chunk_id.split("#")[0],
        title=title or chunk_id.split("#")[0],
        section=("Overview",),
        source="test",
        url=f"https://example.org/{chunk_id}",
        license="CC0",
        start=0,
        end=len(text),
        text=text,
    )
    return Hit(chunk=chunk, score=score, rank=rank, retriever="bm25")


def hits_from(texts: dict[str, str]) -> list[Hit]:
    """``{chunk_id: text}`` -> hits in the given order with retrieval scores 10, 9, 8, ..."""
    return [make_hit(cid, text, score=10.0 - n, rank=n + 1) for n, (cid, text) in enumerate(texts.items())]
