"""The shared vocabulary of medcite: plain, frozen records that every package passes around.

This module imports nothing from the project, so any layer may depend on it.

Offsets are Python string indices (code points) into ``Document.text``; for every chunk
``document.text[chunk.start:chunk.end] == chunk.text`` holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

# What the pipeline does with a generated sentence its cited passage does not support (or that
# cites a passage not about the question): leave it out, show it marked, or withhold the answer.
SupportPolicy = Literal["drop", "flag", "abstain"]


@dataclass(frozen=True)
class Section:
    """A titled span of a document: ``text[start:end]`` is the section body."""

    path: tuple[str, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Document:
    """One source document with its provenance.

    ``doc_id`` is globally unique and prefixed by the source (``orphanet:558``).
    ``sections`` are ordered, non-overlapping spans into ``text``; chunks never cross them.
    """

    doc_id: str
    title: str
    text: str
    source: str
    url: str
    license: str
    sections: tuple[Section, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Provenance:
    """Where a passage comes from: its chunk and document, title, section path, source, URL,
    licence and character span ``[start, end)`` in the document. A chunk carries it, and so does
    every citation of one."""

    chunk_id: str  # "<doc_id>#<n>", n counting from 0 in document order
    doc_id: str
    title: str
    section: tuple[str, ...]
    source: str
    url: str
    license: str
    start: int
    end: int


PROVENANCE_FIELDS = tuple(f.name for f in fields(Provenance))


@dataclass(frozen=True)
class Chunk(Provenance):
    """A passage of a document small enough to embed, carrying full provenance."""

    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "section": list(self.section),
            "source": self.source,
            "url": self.url,
            "license": self.license,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Chunk:
        return cls(
            chunk_id=str(row["chunk_id"]),
            doc_id=str(row["doc_id"]),
            title=str(row["title"]),
            section=tuple(str(s) for s in row["section"]),
            source=str(row["source"]),
            url=str(row["url"]),
            license=str(row["license"]),
            start=int(row["start"]),
            end=int(row["end"]),
            text=str(row["text"]),
        )


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with the score of the retriever that produced it (higher is better)."""

    chunk: Chunk
    score: float
    rank: int  # 1-based
    retriever: str  # "bm25", "dense", "hybrid", ...


@dataclass(frozen=True)
class Filters:
    """Metadata filters applied before ranking: empty sets mean "no restriction"."""

    sources: frozenset[str] = frozenset()
    sections: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.sources or self.sections)


@dataclass(frozen=True)
class Message:
    """One chat turn (OpenAI roles: system, user, assistant)."""

    role: str
    content: str


@dataclass(frozen=True)
class Generation:
    """What a generator returns for one completion."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str = "stop"  # "stop" | "length"


@dataclass(frozen=True)
class Citation(Provenance):
    """A source marker ``[n]`` in an answer, resolved to the exact passage it points at: that
    passage's provenance and its text as ``quote``."""

    marker: int
    quote: str
    support: float | None = None  # verifier score in [0, 1]; None when not verified

    @classmethod
    def from_chunk(cls, marker: int, chunk: Chunk, support: float | None = None) -> Citation:
        provenance = {name: getattr(chunk, name) for name in PROVENANCE_FIELDS}
        return cls(**provenance, marker=marker, quote=chunk.text, support=support)


@dataclass(frozen=True)
class SentenceSupport:
    """One generated sentence, the markers it carries, whether its cited passages support it,
    and what the support gate did with it.

    ``status``: ``shown`` (in the answer text as written), ``flagged`` (in the text behind a
    visible ``[UNSUPPORTED]``/``[UNVERIFIED]`` label), ``removed`` (not in the text; kept here
    so a caller can see what was left out and why) or ``closest`` (a closest line: the source's
    own words, shown as not confirmed, never as an answer). ``reasons`` says why a sentence was
    not shown as written; ``on_topic`` is False when a passage it cites is not about the question.
    """

    text: str
    markers: tuple[int, ...]
    support: float  # best support over its cited passages, 0 when it cites none or is unverified
    supported: bool
    status: str = "shown"  # "shown" | "flagged" | "removed" | "closest"
    reasons: tuple[str, ...] = ()
    on_topic: bool = True
    probability: float | None = None  # a quoted or closest line: the quote model's P(it answers)


@dataclass(frozen=True)
class LineScore:
    """A line the line judge scored, shown or not: where it stands, its words and P(answers)."""

    chunk_id: str
    start: int  # document offsets of the line
    end: int
    text: str
    probability: float
    for_another_patient: bool = False  # the condition reader found it stated for another patient


@dataclass(frozen=True)
class Answer:
    """The result of ``Pipeline.answer``.

    ``mode`` says what kind of answer this is, so no caller mistakes one for another:
    ``rag`` (grounded in cited evidence), ``closed-book`` (model memory only, by request),
    ``abstained`` (not an answer: the closest lines when passages about the question were
    found but no line was confirmed, else nothing relevant; ``outcome`` says which and
    ``rag/answer/outcomes.py`` builds both),
    ``degraded`` (generation failed; ``evidence`` lists the passages found, unsummarised).
    ``read`` is every passage the relevance model scored, kept or not, best first, and
    ``lines_read`` the best lines the line judge scored: what a user tunes the thresholds by,
    whatever the outcome.
    """

    question: str
    text: str
    mode: str
    citations: tuple[Citation, ...] = ()
    sentences: tuple[SentenceSupport, ...] = ()
    evidence: tuple[Hit, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    usage: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    choice: str | None = None  # multiple-choice mode: the chosen option letter
    option_probs: Mapping[str, float] | None = None
    read: tuple[Hit, ...] = ()
    lines_read: tuple[LineScore, ...] = ()
    carried: tuple[str, ...] = ()  # what earlier chat turns contributed to the question read

    @property
    def outcome(self) -> str:
        """What the user is told, one of ``OUTCOMES``: ``answer`` (mode rag), ``closest_lines``
        (abstained, with the closest lines cited), ``nothing_relevant`` (abstained, nothing
        cited), ``closed_book``, ``degraded``."""
        if self.mode == "abstained":
            return "closest_lines" if self.citations else "nothing_relevant"
        return {"rag": "answer", "closed-book": "closed_book"}.get(self.mode, self.mode)


OUTCOMES = ("answer", "closest_lines", "nothing_relevant", "closed_book", "degraded")
