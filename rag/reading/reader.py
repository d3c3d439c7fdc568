"""The line reader: how likely is this line of a guideline to answer this patient's question?

One judgement for every step of the answer (``rag/answer/``): a passage is kept when its best line
clears the floor, the answer is the best lines when they clear the answer threshold, the closest
lines are the next best, and nothing is relevant when no line clears the floor. The reader reads
each line in its context (``lines.line_context``: title > section path > the line it hangs from,
a list's lead-in or a table's header, then the line) with the question, as a cross-encoder: the
relevance model (``rag/rerank/weights/relevance-minilm``) with low-rank adapters on its top two
layers and its own head, trained on clinicians' questions about the dev-part guideline folders
(``training/reader.py``, ``medcite train reader``; the pairs: ``training/reader_lines.py``).

``P(answers) = sigmoid(a * logit + b)``, fitted on the predictions of models that did not train
on the questions' folders (cross-fit by folder), so the probability means what it says on
guidelines the reader never saw. The manifest also holds the answer threshold chosen there by
Learn-then-Test (shown answers right >= 95% with 90% confidence) and the floor.

No reader ships yet: on held-out folders the ones trained here chose the answering line no
better than the quote model (docs/results/clinician/reader.md). ``[quote] judge = "reader"`` with
``reader_path`` runs one that ``medcite train reader`` wrote.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from core.types import Hit
from rag.profile import VerifyConfig
from rag.reading.lines import Line, lead_in, line_context, quotable
from rag.reading.question import ReadQuestion
from rag.reading.quote_model import ScoredLines, line_fit, off_scope
from rag.rerank.adapter import AdapterModel
from rag.rerank.sentences import narrowed

SHIPPED_READER = Path(__file__).parent / "weights" / "reader-minilm"
FORMAT = "medcite-reader-1"


class TrainedReader(AdapterModel):
    """The line reader of the module docstring, run by ONNX Runtime."""

    what = "line reader"
    format = FORMAT
    required = (
        "format",
        "relevance_overlay_sha256",
        "adapter_sha256",
        "rank",
        "alpha",
        "calibration",
        "answer_threshold",
        "floor",
    )
    setting = "quote.reader_path"
    command = "medcite train reader"
    export_name = "reader"

    def __init__(self, model_path: Path | str | None = None, *, batch_size: int = 32) -> None:
        super().__init__(
            Path(model_path) if model_path is not None else SHIPPED_READER, batch_size=batch_size
        )

    @classmethod
    @cache
    def shipped(cls) -> TrainedReader:
        return cls()

    @property
    def answer_threshold(self) -> float:
        return float(self.manifest["answer_threshold"])

    @property
    def floor(self) -> float:
        return float(self.manifest["floor"])

    def logits(self, question: str, lines: Sequence[str]) -> np.ndarray:
        """The raw logit for each line (in its context) against ``question``."""
        return self.pair_logits([question] * len(lines), lines)

    def probabilities(self, question: str, lines: Sequence[str]) -> np.ndarray:
        """Calibrated P(the line answers the question) for each line."""
        calibration = self.manifest["calibration"]
        (a,) = (float(w) for w in calibration["weights"])
        return self.sigmoid(a * self.logits(question, lines) + float(calibration["bias"]))


@dataclass(frozen=True)
class Probability:
    """The "model" over a column of probabilities already calibrated: the reader's lines carry
    their P(answers) as their one feature, so ``quote_model.best_lines`` and ``closest_lines``
    order them as they order the quote model's."""

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(rows, dtype=np.float64)[:, 0] if len(rows) else np.zeros(0)


def read_lines(
    read: ReadQuestion,
    hits: Sequence[Hit],
    reader: TrainedReader,
    verify: VerifyConfig,
    *,
    conflicts: bool = True,
) -> ScoredLines:
    """The quotable lines of ``hits``, each document span once (none from a passage the passage
    checks bar, ``quote_model.off_scope``), with the reader's P(answers) as their one feature.
    With ``conflicts``, lines the condition reader finds stated for another patient are set apart
    (``conflicting``: never an answer, a closest line with the reason)."""
    barred = off_scope(read, hits, verify)
    seen: set[tuple[str, int, int]] = set()
    lines: list[Line] = []
    texts: list[str] = []
    for n, hit in enumerate(hits):
        if n in barred:
            continue
        chunk = hit.chunk
        for start, end in quotable(chunk):
            span = (chunk.doc_id, chunk.start + start, chunk.start + end)
            if span in seen:
                continue
            seen.add(span)
            lead = lead_in(chunk.text, start, chunk.start > 0)
            fit = line_fit(read, chunk, start, end, lead)
            lines.append(
                Line(dataclasses.replace(hit, chunk=narrowed(chunk, start, end)), n + 1, 0.0, lead, fit)
            )
            texts.append(line_context(chunk, start, end, lead))
    if not lines:
        return ScoredLines((), np.zeros((0, 1)))
    p = reader.probabilities(read.text, texts)
    apart = [i for i, line in enumerate(lines) if conflicts and line.fit.state == "conflicts"]
    keep = [i for i in range(len(lines)) if i not in set(apart)]
    column = p[:, None]
    return ScoredLines(
        tuple(lines[i] for i in keep),
        column[keep],
        tuple(lines[i] for i in apart),
        column[apart] if apart else None,
    )


@dataclass(frozen=True)
class ReaderJudge:
    """Lines judged by the line reader (``[quote] judge = "reader"``), at its own answer
    threshold and floor unless the profile gives others."""

    reader: TrainedReader
    verify: VerifyConfig
    conflicts: bool = True
    model: Probability = Probability()

    @property
    def answer_threshold(self) -> float:
        return self.reader.answer_threshold

    @property
    def floor(self) -> float:
        return self.reader.floor

    def lines(self, read: ReadQuestion, hits: Sequence[Hit]) -> ScoredLines:
        return read_lines(read, hits, self.reader, self.verify, conflicts=self.conflicts)
