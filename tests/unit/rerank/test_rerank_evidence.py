"""The identity reranker, the shared sort/renumber helper and the evidence filter."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from core.errors import ConfigError
from core.registry import resolve
from core.types import Hit
from rag.rerank.evidence import check_evidence_limits, passage_text, rerank_and_filter, sort_and_renumber
from rag.rerank.identity import IdentityReranker
from tests.helpers import hits_from, make_hit


class FixedScores:
    """A reranker whose scores are given per chunk id (probabilities)."""

    name = "fixed"
    scores_are_probabilities = True

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls = 0

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        self.calls += 1
        return sort_and_renumber(hits, [self.scores[h.chunk.chunk_id] for h in hits], self.name)


@pytest.fixture
def five():
    return hits_from({f"d{i}#0": f"passage {i}" for i in range(1, 6)})


def ids(hits):
    return [h.chunk.chunk_id for h in hits]


def test_identity_keeps_order_and_scores_and_renumbers_ranks():
    hits = [make_hit("a#0", "x", score=0.5, rank=7), make_hit("b#0", "y", score=0.9, rank=3)]
    out = IdentityReranker().rerank("q", hits)
    assert ids(out) == ["a#0", "b#0"]
    assert [h.score for h in out] == [0.5, 0.9]
    assert [h.rank for h in out] == [1, 2]
    assert [h.retriever for h in out] == ["bm25", "bm25"]
    assert IdentityReranker().rerank("q", []) == []


def test_sort_and_renumber_orders_by_score_and_keeps_retrieval_order_on_ties(five):
    out = sort_and_renumber(five, [0.2, 0.9, 0.2, math.nan, 0.5], "llm")
    assert ids(out) == ["d2#0", "d5#0", "d1#0", "d3#0", "d4#0"]  # NaN last, ties in input order
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert out[0].score == 0.9
    assert {h.retriever for h in out} == {"bm25+llm"}
    with pytest.raises(ValueError, match="5 hits but 2 scores"):
        sort_and_renumber(five, [0.1, 0.2])


def test_filter_drops_hits_below_threshold_and_renumbers_the_kept(five):
    reranker = FixedScores({"d1#0": 0.1, "d2#0": 0.8, "d3#0": 0.5, "d4#0": 0.49, "d5#0": 0.95})
    kept, dropped = rerank_and_filter(reranker, "q", five, threshold=0.5)
    assert ids(kept) == ["d5#0", "d2#0", "d3#0"]  # 0.5 >= 0.5 is kept
    assert [h.rank for h in kept] == [1, 2, 3]
    assert ids(dropped) == ["d4#0", "d1#0"]
    assert [h.rank for h in dropped] == [4, 5]  # their place in the reranked list
    assert reranker.calls == 1


def test_filter_without_threshold_keeps_everything_up_to_max_keep(five):
    reranker = FixedScores({f"d{i}#0": i / 10 for i in range(1, 6)})
    kept, dropped = rerank_and_filter(reranker, "q", five, threshold=None, max_keep=2)
    assert ids(kept) == ["d5#0", "d4#0"]
    assert ids(dropped) == ["d3#0", "d2#0", "d1#0"]


def test_min_keep_tops_up_with_the_best_failing_hits(five):
    reranker = FixedScores({"d1#0": 0.3, "d2#0": 0.1, "d3#0": 0.9, "d4#0": 0.2, "d5#0": 0.05})
    kept, dropped = rerank_and_filter(reranker, "q", five, threshold=0.5, min_keep=3)
    assert ids(kept) == ["d3#0", "d1#0", "d4#0"]
    assert [h.rank for h in kept] == [1, 2, 3]
    assert ids(dropped) == ["d2#0", "d5#0"]


def test_nothing_kept_means_abstain(five):
    reranker = FixedScores(dict.fromkeys(ids(five), 0.2))
    kept, dropped = rerank_and_filter(reranker, "q", five, threshold=0.5)
    assert kept == []
    assert len(dropped) == 5
    assert rerank_and_filter(reranker, "q", [], threshold=0.5) == ([], [])


def test_threshold_on_retrieval_scores_needs_explicit_permission(five):
    with pytest.raises(ConfigError, match="retrieval scores"):
        rerank_and_filter(IdentityReranker(), "q", five, threshold=7.5)
    kept, dropped = rerank_and_filter(
        IdentityReranker(), "q", five, threshold=7.5, allow_unbounded_threshold=True
    )
    assert [h.score for h in kept] == [10.0, 9.0, 8.0]
    assert [h.score for h in dropped] == [7.0, 6.0]
    kept, _ = rerank_and_filter(IdentityReranker(), "q", five, threshold=None)
    assert len(kept) == 5


def test_limits_can_be_checked_at_start_up_without_scoring():
    check_evidence_limits(FixedScores({}), 0.5, max_keep=4)
    check_evidence_limits(IdentityReranker(), None)
    with pytest.raises(ConfigError, match="'none' does not score on a"):
        check_evidence_limits(IdentityReranker(), 0.5)


@pytest.mark.parametrize(
    ("threshold", "min_keep", "max_keep", "message"),
    [
        (1.5, 0, None, r"in \[0, 1\]"),
        (-0.1, 0, None, r"in \[0, 1\]"),
        (math.nan, 0, None, "NaN"),
        (0.5, -1, None, "min_keep"),
        (0.5, 3, 2, "max_keep"),
        (0.5, 0, 0, "max_keep"),
    ],
)
def test_invalid_limits_are_config_errors(five, threshold, min_keep, max_keep, message):
    reranker = FixedScores(dict.fromkeys(ids(five), 0.5))
    with pytest.raises(ConfigError, match=message):
        rerank_and_filter(reranker, "q", five, threshold=threshold, min_keep=min_keep, max_keep=max_keep)
    assert reranker.calls == 0  # checked before any (expensive) scoring


def test_passage_text_carries_heading_and_cuts_at_a_word_boundary():
    hit = make_hit("doc#0", "Give amoxicillin 500 mg three times daily", title="Otitis media")
    assert passage_text(hit.chunk) == "Otitis media > Overview\nGive amoxicillin 500 mg three times daily"
    assert passage_text(hit.chunk, 20) == "Otitis media > Overview\nGive amoxicillin …"


def test_registry_resolves_every_reranker():
    assert resolve("reranker", "none") is IdentityReranker
    assert resolve("reranker", "llm").name == "llm"
    assert resolve("reranker", "cross-encoder").name == "cross-encoder"
    with pytest.raises(ConfigError, match="cross-encoder, llm, none"):
        resolve("reranker", "colbert")


def test_retrieval_order_lets_scores_gate_without_reordering(five):
    reranker = FixedScores({"d1#0": 0.2, "d2#0": 0.9, "d3#0": 0.05, "d4#0": 0.6, "d5#0": 0.7})
    kept, dropped = rerank_and_filter(reranker, "q", five, threshold=0.5, max_keep=2, retrieval_order=True)
    assert ids(kept) == ["d2#0", "d4#0"]  # the first two above the threshold, in retrieval order
    assert [h.rank for h in kept] == [1, 2] and kept[0].score == 0.9
    assert ids(dropped) == ["d1#0", "d3#0", "d5#0"]
    by_relevance, _ = rerank_and_filter(reranker, "q", five, threshold=0.5, max_keep=2)
    assert ids(by_relevance) == ["d2#0", "d5#0"]
