import pytest

from core.errors import ConfigError
from core.types import Chunk, Filters, Hit
from rag.retrieve.hybrid import HybridRetriever
from tests.helpers import make_chunk


def chunk(cid: str, text: str = "same text") -> Chunk:
    return make_chunk(cid, text, title="T", section=(), source="s", url="", license="")


class FixedRetriever:
    def __init__(self, name, ids_scores):
        self.name = name
        self.ids_scores = ids_scores
        self.calls = []

    def retrieve(self, query, k, filters=None):
        self.calls.append((query, k, filters))
        return [
            Hit(chunk=chunk(cid), score=s, rank=n, retriever=self.name)
            for n, (cid, s) in enumerate(self.ids_scores[:k], start=1)
        ]


def test_rrf_merges_by_chunk_id_not_text_and_fetches_more_than_k():
    bm25 = FixedRetriever("bm25", [("a#0", 9.0), ("b#0", 5.0), ("c#0", 1.0)])
    dense = FixedRetriever("dense", [("b#0", 0.9), ("d#0", 0.8)])
    filters = Filters(sources=frozenset({"s"}))
    hits = HybridRetriever([bm25, dense], candidates=20).retrieve("q", 2, filters)
    assert [h.chunk.chunk_id for h in hits] == ["b#0", "a#0"]  # same text, different ids: kept apart
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert [h.rank for h in hits] == [1, 2] and all(h.retriever == "hybrid" for h in hits)
    assert bm25.calls == [("q", 20, filters)] and dense.calls == [("q", 20, filters)]


def test_weighted_fusion_uses_scores():
    bm25 = FixedRetriever("bm25", [("a#0", 10.0), ("b#0", 0.0)])
    dense = FixedRetriever("dense", [("b#0", 0.9), ("a#0", 0.1)])
    hits = HybridRetriever([bm25, dense], fusion="weighted", weights=[0.8, 0.2]).retrieve("q", 2)
    assert [h.chunk.chunk_id for h in hits] == ["a#0", "b#0"]
    assert hits[0].score == pytest.approx(0.8) and hits[1].score == pytest.approx(0.2)


@pytest.mark.parametrize("kwargs", [{"fusion": "borda"}, {"weights": [1.0]}])
def test_bad_fusion_settings_are_refused(kwargs):
    with pytest.raises(ConfigError):
        HybridRetriever([FixedRetriever("a", []), FixedRetriever("b", [])], **kwargs)


def test_hybrid_defaults_are_the_profiles() -> None:
    from rag.profile import default_profile

    hybrid = HybridRetriever([FixedRetriever("a", []), FixedRetriever("b", [])])
    p = default_profile().retrieval
    assert (hybrid.candidates, hybrid.fusion, hybrid.rrf_k) == (p.candidates, p.fusion, p.rrf_k)
