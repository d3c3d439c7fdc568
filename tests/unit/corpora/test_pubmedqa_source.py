"""The PQA-L abstract source: sections from labels, no conclusion, stable ids, clear errors."""

from __future__ import annotations

import json

import pytest

from core.errors import ConfigError
from corpora.sources.pubmedqa import PubmedqaAbstractSource, doc_id
from tests.helpers import source_error

ARTICLES = {
    "222": {
        "QUESTION": "Does aspirin prevent X?",
        "CONTEXTS": ["We  studied\nX.", "Aspirin lowered X by 20%."],
        "LABELS": ["BACKGROUND", "RESULTS"],
        "LONG_ANSWER": "Aspirin prevents X.",
        "YEAR": "2011",
    },
    "111": {"QUESTION": "Q?", "CONTEXTS": ["Only one part."], "LABELS": [], "LONG_ANSWER": "A."},
    "333": {"QUESTION": "Q?", "CONTEXTS": [], "LONG_ANSWER": "A."},
}


def write(tmp_path, articles=ARTICLES):
    (tmp_path / "ori_pqal.json").write_text(json.dumps(articles))
    return tmp_path


def test_one_document_per_article_with_labelled_sections_and_no_conclusion(tmp_path):
    source = PubmedqaAbstractSource(path=write(tmp_path))
    docs = list(source.documents())
    assert [d.doc_id for d in docs] == [doc_id("111"), doc_id("222")]
    doc = docs[1]
    assert doc.text == "We studied X.\n\nAspirin lowered X by 20%."
    assert [(s.path, doc.text[s.start : s.end]) for s in doc.sections] == [
        (("Background",), "We studied X."),
        (("Results",), "Aspirin lowered X by 20%."),
    ]
    assert "prevents" not in doc.text and "Does aspirin" not in doc.text  # neither answer nor question
    assert doc.title == "PubMed 222" and doc.url.endswith("/222/") and doc.source == "pubmedqa-abstracts"
    assert docs[0].sections[0].path == ("Abstract",)
    assert source.skipped == 1


def test_the_shared_file_reads_whole(source_data):
    docs = list(PubmedqaAbstractSource(path=source_data / "pubmedqa").documents())
    assert len(docs) == 1000 and len({d.doc_id for d in docs}) == 1000


def test_bad_input_says_what_to_do(tmp_path):
    source_error(PubmedqaAbstractSource(path=tmp_path), "--fetch")
    (tmp_path / "ori_pqal.json").write_text("[1, 2]")
    source_error(PubmedqaAbstractSource(path=tmp_path), "PMID -> article")
    with pytest.raises(ConfigError, match="no options"):
        PubmedqaAbstractSource(path=tmp_path, limit=3)
