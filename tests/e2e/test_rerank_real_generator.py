"""End to end with the real Qwen2.5-Coder-1.5B generator: the LLM reranker on real guideline passages.

Three Open Medicine passages (a pneumonia regimen, a CKD drug recommendation, an alteplase dose)
for a pneumonia question; the yes/no judgement must put the pneumonia passage first. About 500
prompt tokens in all (passages cut to 200 characters): ~15 s at 33 prompt tokens/s; 48 s measured under
heavy CPU contention (load 5.5 on 2 cores).
"""

from __future__ import annotations

import pytest

from core.paths import Paths
from core.types import Hit
from corpora.chunking import chunk_at
from corpora.sources.open_medicine import OpenMedicineSource
from rag.generate.llamacpp import LlamaCppGenerator
from rag.generate.models import model_path
from rag.rerank.cache import ScoreCache
from rag.rerank.llm import LlmRelevanceReranker

pytestmark = pytest.mark.e2e

QUESTION = (
    "What is the first-line antibiotic for low-severity community-acquired pneumonia "
    "treated as an outpatient?"
)
RELEVANT = "open-medicine:bts_cap_2009/antibiotic_therapy"
# document -> last element of the section path; retrieval order puts the relevant passage last
SECTIONS = {
    "open-medicine:aha_asa_stroke_2019/thrombolysis": "Dosing Protocol (Class I)",
    "open-medicine:kdigo_ckd_2024/staging": "1. RAS Inhibitors (ACEi or ARB)",
    RELEVANT: "Low Severity (CURB-65 0–1, outpatient)",
}


def guideline_hits() -> list[Hit]:
    docs = {d.doc_id: d for d in OpenMedicineSource().documents() if d.doc_id in SECTIONS}
    hits = []
    for n, (doc_id, last) in enumerate(SECTIONS.items()):
        doc = docs[doc_id]
        section = next(s for s in doc.sections if s.path[-1] == last)
        chunk = chunk_at(doc, n, section.path, section.start, section.end)
        hits.append(Hit(chunk=chunk, score=1 / (60 + n + 1), rank=n + 1, retriever="hybrid"))
    return hits


def test_the_relevant_guideline_passage_wins_and_is_cached(tmp_path):
    generator = LlamaCppGenerator(model_path(Paths.from_env().model_dir), n_ctx=1024)
    cache = ScoreCache(tmp_path / "rerank.sqlite")
    reranker = LlmRelevanceReranker(generator, cache=cache, max_passage_chars=200)
    ranked, stats = reranker.rerank_with_stats(QUESTION, guideline_hits())
    assert ranked[0].chunk.doc_id == RELEVANT
    assert ranked[0].score > 0.5
    assert all(0.0 < h.score < 1.0 for h in ranked)
    assert (stats.generator_calls, stats.cache_hits, stats.unscorable) == (3, 0, 0)
    again, stats = reranker.rerank_with_stats(QUESTION, guideline_hits())
    assert (stats.generator_calls, stats.cache_hits) == (0, 3)
    assert [(h.chunk.chunk_id, h.score) for h in again] == [(h.chunk.chunk_id, h.score) for h in ranked]
