"""The clinician training set as (question, line) pairs for the line reader (``training/reader.py``).

Each question is read as the chain reads it: the lines (``rag/reading/lines.py``: quotable
sentences, list items, table rows, flowchart steps, each with the line it hangs from) of the
hybrid retriever's top ``candidates`` chunks of the default index, plus the chunks that hold its
answering and sibling lines, each line in its context (``line_context``). A line is an
**answer** when it lies inside one of the question's answering lines (``quote``, ``also_lines``:
located in the guideline's files), a **sibling** when inside a sibling line (the line for another
patient), **same_chunk** when it shares a chunk with an answer, else **other**. Near-corpus
questions have no answer. Training samples, per question, every answer and sibling and then other
lines up to ``negatives`` (a few of the answering chunk's, the rest of other chunks); evaluation reads
every candidate line.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.types import Chunk, Hit
from evals.datasets.clinician import ClinicianItem
from rag.reading.lines import lead_in, line_context, quotable

Span = tuple[str, int, int]  # (document id, start, end) in the document's text


@dataclass(frozen=True)
class ReadLine:
    """One candidate line of one question, as the reader reads it, with its label."""

    qid: str
    text: str  # line_context: headings, lead-in, the line
    kind: str  # answer | sibling | same_chunk | other
    span: Span
    rank: int  # the rank of the first candidate chunk holding it

    @property
    def label(self) -> int:
        return int(self.kind == "answer")


class Guidelines:
    """The open-medicine section files (``<folder>/<file>.md``), read once, and where lines stand."""

    def __init__(self, content: Path) -> None:
        self.content = content
        self._texts: dict[str, str] = {}

    def text(self, doc_id: str) -> str:
        if doc_id not in self._texts:
            folder_file = doc_id.removeprefix("open-medicine:")
            self._texts[doc_id] = (self.content / f"{folder_file}.md").read_text(encoding="utf-8")
        return self._texts[doc_id]

    def spans(self, guideline: str, lines: Sequence[str]) -> list[Span]:
        """Where each of ``lines`` stands in the guideline's files (every occurrence)."""
        out: list[Span] = []
        for path in sorted((self.content / guideline).glob("*.md")):
            doc_id = f"open-medicine:{guideline}/{path.stem}"
            text = self.text(doc_id)
            for line in lines:
                start = text.find(line)
                while start >= 0:
                    out.append((doc_id, start, start + len(line)))
                    start = text.find(line, start + 1)
        return out


def _inside(span: Span, spans: Sequence[Span]) -> bool:
    """Whether ``span`` lies within one of ``spans`` (at least 80% of it, for a line cut short)."""
    doc, start, end = span
    for other_doc, a, b in spans:
        if doc == other_doc and min(end, b) - max(start, a) >= 0.8 * max(1, end - start):
            return True
    return False


def holding(chunks_of: Callable[[str], Sequence[Chunk]], spans: Sequence[Span]) -> list[Chunk]:
    """The chunks whose span overlaps one of ``spans``."""
    out: dict[str, Chunk] = {}
    for doc, start, end in spans:
        for chunk in chunks_of(doc):
            if chunk.start < end and start < chunk.end:
                out[chunk.chunk_id] = chunk
    return list(out.values())


def candidate_lines(
    item: ClinicianItem,
    hits: Sequence[Hit],
    guidelines: Guidelines,
    chunks_of: Callable[[str], Sequence[Chunk]],
) -> list[ReadLine]:
    """Every line of ``hits`` and of the chunks holding the item's answer and sibling lines, each
    document span once, labelled (module docstring)."""
    answers: list[Span] = []
    siblings: list[Span] = []
    if item.guideline and not item.group.startswith(("hpo:", "far:")):
        if item.answerable and item.quote:
            answers = guidelines.spans(item.guideline, [item.quote, *item.also_lines])
        siblings = guidelines.spans(item.guideline, list(item.siblings))
    extra = [
        c
        for c in holding(chunks_of, answers + siblings)
        if c.chunk_id not in {h.chunk.chunk_id for h in hits}
    ]
    chunks = [(h.rank, h.chunk) for h in hits] + [(len(hits) + 1, c) for c in extra]
    answer_chunks = {c.chunk_id for _, c in chunks if any(_overlaps(c, a) for a in answers)}
    seen: set[Span] = set()
    out: list[ReadLine] = []
    for rank, chunk in chunks:
        for start, end in quotable(chunk):
            span = (chunk.doc_id, chunk.start + start, chunk.start + end)
            if span in seen:
                continue
            seen.add(span)
            kind = "other"
            if _inside(span, answers):
                kind = "answer"
            elif _inside(span, siblings):
                kind = "sibling"
            elif chunk.chunk_id in answer_chunks:
                kind = "same_chunk"
            lead = lead_in(chunk.text, start, chunk.start > 0)
            out.append(ReadLine(item.qid, line_context(chunk, start, end, lead), kind, span, rank))
    return out


def _overlaps(chunk: Chunk, span: Span) -> bool:
    doc, start, end = span
    return chunk.doc_id == doc and chunk.start < end and start < chunk.end


def training_lines(
    lines: Sequence[ReadLine], negatives: int, rng: random.Random, same_chunk: int = 4
) -> list[ReadLine]:
    """What one question trains on: every answer and sibling, then up to ``same_chunk`` other
    lines of the answering chunk, then lines of the other chunks read, up to ``negatives`` lines
    that do not answer. Most negatives come from other chunks: the reader's first errors were
    lines of the wrong chunk (docs/results/clinician/reader.md)."""
    keep = [line for line in lines if line.kind in ("answer", "sibling")]
    room = negatives - sum(1 for line in keep if line.kind == "sibling")
    for kind, cap in (("same_chunk", same_chunk), ("other", negatives)):
        pool = [line for line in lines if line.kind == kind]
        rng.shuffle(pool)
        taken = pool[: max(0, min(room, cap))]
        keep += taken
        room -= len(taken)
    return keep


def read_questions(
    items: Sequence[ClinicianItem],
    retrieve: Callable[[str], Sequence[Hit]],
    guidelines: Guidelines,
    chunks_of: Callable[[str], Sequence[Chunk]],
) -> Iterator[tuple[ClinicianItem, list[ReadLine]]]:
    """Each item with its candidate lines."""
    for item in items:
        yield item, candidate_lines(item, retrieve(item.question), guidelines, chunks_of)
