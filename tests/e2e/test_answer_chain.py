"""The whole chain with the real embedder, the real LLM reranker and the real generator
(Qwen2.5-Coder-1.5B Q4_K_M via llama.cpp) over a small real index of guideline sections."""

from __future__ import annotations

import pytest

from rag.assemble import assemble
from tests.helpers import fake_profile

pytestmark = pytest.mark.e2e

# A generous generator timeout: a busy CI machine is slow, not broken.
PROFILE = fake_profile(
    {
        "name": "e2e",
        "retrieval": {"mode": "hybrid", "candidates": 20},
        "rerank": {"backend": "llm", "candidates": 5, "threshold": 0.6, "keep": 3},
        "generator": {"backend": "llama-cpp", "max_tokens": 96, "threads": 2, "timeout_s": 900},
    }
)


@pytest.fixture(scope="module")
def chain(small_index_paths):
    assembled = assemble(PROFILE, small_index_paths)
    yield assembled.pipeline
    assembled.close()


def test_question_answered_by_the_corpus_gets_a_correct_cited_answer(chain):
    answer = chain.answer(
        "At what CHA2DS2-VASc score is oral anticoagulation recommended for men with atrial fibrillation?"
    )
    assert answer.mode == "rag", answer
    assert "2" in answer.text, answer.text
    assert answer.citations, answer.text
    evidence_ids = {h.chunk.chunk_id for h in answer.evidence}
    for citation in answer.citations:
        assert citation.chunk_id in evidence_ids  # every citation resolves to a passage given
        assert citation.doc_id.startswith("open-medicine:acc_aha_af_2023")
        assert citation.url.startswith("https://doi.org/") and citation.quote
    assert any(s.supported for s in answer.sentences)
    assert set(answer.timings) >= {"retrieve", "rerank", "generate", "verify"}
    assert answer.usage["completion_tokens"] > 0


def test_question_outside_the_corpus_gets_an_abstention(chain):
    answer = chain.answer("What is the first-line antibiotic for acute otitis media in children?")
    assert answer.mode == "abstained", answer
    # nothing relevant, or the closest passages marked not confirmed: never an answer
    assert answer.outcome in ("nothing_relevant", "closest_lines"), answer
    assert all(c.support is None for c in answer.citations)
    assert "amoxicillin" not in answer.text.lower()
