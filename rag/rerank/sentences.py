"""Lines of a passage as the relevance model reads them, and as citations resolve to them.

A line is read after its passage's headings, as the model was trained (:func:`headed`); a line
cut out of its chunk keeps the chunk's id with its document span moved (:func:`narrowed`), so
``document.text[start:end]`` is still exactly the quoted text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from core.types import Chunk
from rag.rerank.evidence import heading


@runtime_checkable
class SentenceScorer(Protocol):
    """What reads a line against a question: the trained reranker is one
    (``rag/rerank/trained.py``), so quoting reuses the model that already judged the passages
    instead of loading a second one."""

    def logits(self, question: str, passages: Sequence[str]) -> np.ndarray: ...


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
