"""Sentence-level evidence: give the generator the best sentences of the kept passages, not all of them.

Prompt reading is most of an answer's time on this CPU (about 30 prompt tokens per second), and
a 200-wordpiece guideline passage usually holds one or two sentences that answer the question.
:func:`select_sentences` scores every sentence of the kept passages with the relevance model
(the passage's headings prefixed, as the model was trained), then keeps, best first, whole
sentences until a wordpiece budget is spent, with at least the best sentence of each passage,
so no kept passage disappears.

Citations stay exact: each contiguous run of kept sentences becomes one piece of evidence whose
chunk is the source chunk narrowed to that character span (``chunk.start``/``end`` move with it,
``chunk_id`` stays the source chunk's), so ``document.text[start:end]`` is still the quoted text
and the support verifier checks the sentence against exactly what the model read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from core.types import Chunk, Hit
from rag.generate.sentences import sentence_spans
from rag.rerank.evidence import heading


class SentenceScorer(Protocol):
    def logits(self, question: str, passages: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class SentenceModel(SentenceScorer, Protocol):
    """What the pipeline selects sentences with: the scorer, and the tokenizer the budget counts in.

    The trained reranker is one (``rag/rerank/trained.py``), so selection reuses the model that
    already judged the passages instead of loading a second one.
    """

    def wordpieces(self, text: str) -> int: ...


def narrowed(chunk: Chunk, start: int, end: int) -> Chunk:
    """``chunk`` cut to ``chunk.text[start:end]``, its document span moved with it."""
    return dataclasses.replace(
        chunk, start=chunk.start + start, end=chunk.start + end, text=chunk.text[start:end]
    )


def headed(chunk: Chunk, start: int, end: int) -> str:
    """What the relevance model reads of the sentence ``chunk.text[start:end]``: the passage's
    headings, then the sentence, as the model was trained."""
    head = heading(chunk)
    return f"{head}\n{chunk.text[start:end]}" if head else chunk.text[start:end]


def _runs(chosen: list[int], units: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Character spans of runs of consecutive chosen sentences (unit indexes ascending)."""
    merged: list[tuple[int, int]] = []
    previous = None
    for i in chosen:
        if merged and previous == i - 1:
            merged[-1] = (merged[-1][0], units[i][2])
        else:
            merged.append((units[i][1], units[i][2]))
        previous = i
    return merged


def select_sentences(
    question: str,
    hits: Sequence[Hit],
    scorer: SentenceScorer,
    budget: int,
    count: Callable[[str], int],
) -> list[Hit]:
    """The best sentences of ``hits`` within ``budget`` wordpieces (``count`` measures), as narrowed hits.

    Passages keep their order; within a passage, runs of kept sentences keep document order.
    A passage of one sentence, or one whose sentences all fit, comes back whole.
    """
    units: list[tuple[int, int, int]] = []  # (hit, start, end)
    for n, hit in enumerate(hits):
        spans = sentence_spans(hit.chunk.text) or [(0, len(hit.chunk.text))]
        units.extend((n, s, e) for s, e in spans)
    if not units:
        return list(hits)
    texts = [headed(hits[n].chunk, s, e) for n, s, e in units]
    scores = np.asarray(scorer.logits(question, texts), dtype=np.float64)
    sizes = [count(hits[n].chunk.text[s:e]) for n, s, e in units]
    chosen: set[int] = set()
    for n in range(len(hits)):  # the best sentence of every passage, whatever the budget
        mine = [i for i, u in enumerate(units) if u[0] == n]
        chosen.add(max(mine, key=lambda i: (scores[i], -i)))
    spent = sum(sizes[i] for i in chosen)
    for i in sorted(range(len(units)), key=lambda i: (-scores[i], i)):
        if i not in chosen and spent + sizes[i] <= budget:
            chosen.add(i)
            spent += sizes[i]
    out: list[Hit] = []
    for n, hit in enumerate(hits):
        mine = [i for i in sorted(chosen) if units[i][0] == n]
        if len(mine) == sum(1 for u in units if u[0] == n):
            out.append(hit)
            continue
        out.extend(dataclasses.replace(hit, chunk=narrowed(hit.chunk, s, e)) for s, e in _runs(mine, units))
    return [dataclasses.replace(h, rank=r) for r, h in enumerate(out, start=1)]
