"""Support verification with the real all-MiniLM-L6-v2 embedder on real open-medicine passages.

Scores seen when this was written (threshold 0.5): faithful qSOFA paraphrase 0.91, the same
sentence with the respiratory rate changed from 22 to 30 0.29, an unrelated sepsis claim 0.07,
CHA2DS2-VASc >= 3 for women 0.88 and >= 4 0.26.
"""

from __future__ import annotations

import pytest

from core.types import Hit
from corpora.chunking import ChunkerConfig, WordpieceSpans, chunk_document
from corpora.sources.open_medicine import OpenMedicineSource
from indexes.dense.embedder import MiniLmEmbedder, packaged_minilm_dir
from rag.gate.verify import SupportVerifier
from rag.generate.citations import parse_answer

pytestmark = pytest.mark.e2e

DOCS = {"open-medicine:sepsis3_2016/qsofa_screening", "open-medicine:acc_aha_af_2023/anticoagulation"}


@pytest.fixture(scope="module")
def sources() -> list[Hit]:
    """The real chunks holding the qSOFA criteria and the CHA2DS2-VASc recommendations."""
    spans = WordpieceSpans(packaged_minilm_dir() / "tokenizer.json")
    chunks = [
        c
        for doc in OpenMedicineSource().documents()
        if doc.doc_id in DOCS
        for c in chunk_document(doc, spans, ChunkerConfig())
    ]
    qsofa = next(c for c in chunks if "Respiratory Rate" in c.text)
    af = next(c for c in chunks if "CHA2DS2-VASc ≥ 3" in c.text)
    return [
        Hit(chunk=qsofa, score=1.0, rank=1, retriever="test"),
        Hit(chunk=af, score=0.9, rank=2, retriever="test"),
    ]


@pytest.fixture(scope="module")
def verifier() -> SupportVerifier:
    return SupportVerifier(MiniLmEmbedder(), threshold=0.5)


ANSWER = (
    "A patient is qSOFA positive with at least two of: respiratory rate of 22/min or more, altered "
    "mentation, or systolic blood pressure of 100 mmHg or less [1]. "
    "qSOFA criteria include a respiratory rate of at least 30 breaths per minute [1]. "
    "Broad-spectrum antibiotics should be given within one hour of recognising septic shock [1]. "
    "In women, oral anticoagulation is recommended when the CHA2DS2-VASc score is 3 or higher [2]. "
    "In women, oral anticoagulation is recommended when the CHA2DS2-VASc score is 4 or higher [2]."
)


def test_paraphrase_passes_changed_number_and_unrelated_claim_fail(sources, verifier):
    parsed = parse_answer(ANSWER, sources)
    scored = verifier.score_sentences(parsed.sentences, sources)
    sentences = [sentence for sentence, _ in scored]
    assert [s.markers for s in sentences] == [(1,), (1,), (1,), (2,), (2,)]
    assert [s.supported for s in sentences] == [True, False, False, True, False]
    paraphrase, changed, unrelated, women3, women4 = (s.support for s in sentences)
    assert paraphrase > 0.7 and women3 > 0.7  # clear of the threshold, not just over it
    assert changed <= 0.3 and women4 <= 0.3  # the number penalty caps them
    assert unrelated < 0.3
    assert [list(by_marker) for _, by_marker in scored] == [[1], [1], [1], [2], [2]]  # per cited passage
