"""One question's trip through the chain: what was read of it, the evidence found, the clock.

``Pipeline.answer`` makes a :class:`Turn` once the evidence is in and hands it to each answerer in
order (``rag/answer/``); what one answerer computes (the scored lines of the passages kept) stays
on the turn for the next, so nothing is scored twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.types import Hit
from rag.reading.question import ReadQuestion

if TYPE_CHECKING:
    from rag.reading.quote_model import ScoredLines


class Clock:
    """Accumulates seconds per pipeline stage."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Count the seconds of the ``with`` block under ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)


@dataclass
class Evidence:
    """What retrieval and reranking produced for one question, with their cost and caveats."""

    kept: list[Hit]
    dropped: list[Hit]
    usage: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # why nothing was kept whatever the passages' relevance


@dataclass
class Turn:
    """One question on its way through the answerers."""

    read: ReadQuestion
    found: Evidence
    clock: Clock
    stream_tokens: bool = False  # the generator streams its tokens to the client
    cancelled: Callable[[], bool] | None = None  # asked after every generated token
    lines: ScoredLines | None = None  # the kept passages' lines, once the quote model scored them
    why: list[str] = field(default_factory=list)  # why the answerers that passed did not answer
    off_topic: bool = False  # no kept passage is about the question

    @property
    def question(self) -> str:
        return self.read.text
