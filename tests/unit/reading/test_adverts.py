"""Tool adverts in the corpus ("available via MCP") are never quotable (rag/reading/lines.py)."""

from __future__ import annotations

import re

import pytest

from corpora.chunking import ChunkerConfig, WordpieceSpans, chunk_documents
from corpora.sources.open_medicine import OpenMedicineSource
from indexes.dense.embedder import packaged_minilm_dir
from rag.generate.sentences import sentence_spans
from rag.reading.lines import advert, quotable
from tests.helpers import make_chunk


@pytest.fixture(scope="module")
def guideline_chunks():
    spans = WordpieceSpans(packaged_minilm_dir() / "tokenizer.json")
    return list(chunk_documents(OpenMedicineSource().documents(), spans, ChunkerConfig()))


def test_the_default_corpus_adverts_are_dropped_and_only_they(guideline_chunks):
    dropped = sorted(
        {
            " ".join(chunk.text[s:e].split())
            for chunk in guideline_chunks
            for s, e in sentence_spans(chunk.text)
            if advert(chunk.text[s:e])
        }
    )
    # what it drops: each names one of the package's calculators and states no medicine of its own
    assert len(dropped) >= 50, dropped
    assert all(re.search(r"`calculate_\w+`", line) for line in dropped), dropped
    quoted = [chunk.text[s:e] for chunk in guideline_chunks for s, e in quotable(chunk)]
    assert not [line for line in quoted if "via MCP" in line]


def test_a_clinical_sentence_beside_an_advert_stays_quotable():
    text = (
        "> **OpenMedicine Calculator:** `calculate_sofa` -- available via MCP for automated organ "
        "dysfunction scoring. A SOFA increase >= 2 points identifies sepsis per Sepsis-3 criteria."
    )
    chunk = make_chunk("sofa#0", text)
    assert [text[s:e] for s, e in quotable(chunk)] == [
        "A SOFA increase >= 2 points identifies sepsis per Sepsis-3 criteria."
    ]
