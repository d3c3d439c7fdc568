"""Sentence-level evidence: the best sentences within a budget, as exact spans of the source."""

from __future__ import annotations

import numpy as np

from core.types import Chunk, Hit
from rag.rerank.sentences import select_sentences

TEXT = (
    "Sepsis is a life-threatening organ dysfunction. "
    "qSOFA counts respiratory rate of 22/min or more, altered mentation and systolic pressure "
    "of 100 mmHg or less. "
    "Blood cultures come before antibiotics. "
    "Lactate above 2 mmol/L signals hypoperfusion."
)


class KeywordScorer:
    """Scores a sentence by how many of the given words it contains (a fake relevance model)."""

    def __init__(self, *words: str) -> None:
        self.words = words
        self.calls = 0

    def logits(self, question, passages):
        self.calls += 1
        return np.array([sum(w in p for w in self.words) for p in passages], dtype=float)


def _hit(n: int, text: str, offset: int = 100) -> Hit:
    chunk = Chunk(
        f"d{n}#0",
        f"d{n}",
        "Sepsis guideline",
        ("Screening",),
        "test",
        "",
        "",
        offset,
        offset + len(text),
        text,
    )
    return Hit(chunk, 0.9, n, "hybrid+trained")


def _words(text: str) -> int:
    return len(text.split())


def test_keeps_the_best_sentences_as_exact_spans_of_the_source() -> None:
    hit = _hit(1, TEXT)
    selected = select_sentences("qSOFA criteria?", [hit], KeywordScorer("qSOFA", "respiratory"), 20, _words)
    assert len(selected) == 1
    chunk = selected[0].chunk
    assert chunk.text.startswith("qSOFA counts") and chunk.text.endswith("100 mmHg or less.")
    assert TEXT[chunk.start - 100 : chunk.end - 100] == chunk.text  # the document span moved with the text
    assert chunk.chunk_id == "d1#0"


def test_non_adjacent_sentences_become_separate_pieces_in_document_order() -> None:
    hit = _hit(1, TEXT)
    scorer = KeywordScorer("qSOFA", "Lactate", "mmol")
    selected = select_sentences("q", [hit], scorer, 26, _words)  # 18 + 6 words; a third would not fit
    assert [h.chunk.text.split()[0] for h in selected] == ["qSOFA", "Lactate"]
    assert [h.rank for h in selected] == [1, 2]


def test_every_passage_keeps_its_best_sentence_even_over_budget() -> None:
    hits = [_hit(1, TEXT), _hit(2, "Marfan syndrome is autosomal dominant. It affects the aorta.")]
    selected = select_sentences("q", hits, KeywordScorer("qSOFA", "aorta"), 1, _words)
    assert {h.chunk.doc_id for h in selected} == {"d1", "d2"}
    assert [h.chunk.text for h in selected if h.chunk.doc_id == "d2"] == ["It affects the aorta."]


def test_a_passage_whose_sentences_all_fit_comes_back_whole() -> None:
    hit = _hit(1, TEXT)
    assert select_sentences("q", [hit], KeywordScorer("qSOFA"), 10_000, _words) == [hit]
