"""Qrels against a corpus: missing relevant documents are reported, and sets can be restricted."""

from __future__ import annotations

import pytest

from core.errors import SourceError
from core.paths import Paths
from corpora.sources.bioasq import BioasqSnippetSource
from evals.datasets import coverage, load_retrieval, restrict
from evals.datasets.qrels import build_set, merge
from evals.types import RetrievalSet

QRELS = {"q1": {"a": 1, "b": 2, "x": 0}, "q2": {"c": 1}, "q3": {"d": 1, "e": 1}}


def test_coverage_counts_missing_documents_per_query() -> None:
    report = coverage(QRELS, {"a", "d", "x"})
    assert (report.queries, report.relevant, report.missing) == (3, 5, 3)
    assert dict(report.missing_per_query) == {"q1": 1, "q2": 1, "q3": 1}
    assert report.queries_without_any == ("q2",)
    assert set(report.examples) == {"b", "c", "e"} and not report.complete
    assert coverage(QRELS, {"a", "b", "c", "d", "e"}).complete


def test_restrict_drops_missing_documents_and_queries_left_without_any() -> None:
    rset = RetrievalSet("t", {"q1": "one", "q2": "two", "q3": "three"}, QRELS, counts={"queries": 3})
    small = restrict(rset, {"a", "x", "d"})
    assert small.qrels == {"q1": {"a": 1, "x": 0}, "q3": {"d": 1}}
    assert list(small.queries) == ["q1", "q3"]
    assert (
        small.counts["restricted_queries_dropped"] == 1 and small.counts["restricted_missing_relevant"] == 3
    )
    assert "lacking 3 of 5" in small.notes[-1]
    assert rset.qrels is QRELS  # the input is untouched


def test_merge_keeps_the_maximum_grade_whatever_the_order() -> None:
    for order in ([("q", "d", 1), ("q", "d", 3)], [("q", "d", 3), ("q", "d", 1)]):
        assert merge(order) == ({"q": {"d": 3}}, 1)


def test_build_set_refuses_a_set_with_nothing_to_score() -> None:
    with pytest.raises(SourceError, match="no query"):
        build_set("empty", {"q": "text"}, [("q", "d", 0)])


def test_real_bioasq_qrels_are_covered_by_the_snippet_corpus() -> None:
    paths = Paths.from_env()
    rset = load_retrieval("bioasq-snippets", paths)
    ids = {doc.doc_id for doc in BioasqSnippetSource(paths.source_data / "bioasq_from_mirage").documents()}
    assert coverage(rset.qrels, ids).complete
    half = {d for d in ids if int(d[-1]) % 2 == 0}  # a corpus with about half the snippets
    report = coverage(rset.qrels, half)
    assert 0 < report.missing < report.relevant == 21180
    assert len(restrict(rset, half).queries) == 2310 - len(report.queries_without_any)
