"""Split documents into embedder-sized chunks: pure, deterministic, section-respecting.

A chunk never crosses a section boundary. A section that fits in ``max_tokens`` wordpieces is
one chunk; a longer one is cut into windows of at most ``max_tokens`` tokens that overlap by
``overlap`` tokens, each cut moved back to the nearest paragraph, line or sentence end when
one lies in the second half of the window. Token counts come from the embedder's own tokenizer
(all-MiniLM-L6-v2 reads at most 256 wordpieces; the default leaves room for the title and
section path that are embedded with each chunk).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError
from core.types import Chunk, Document, Section

TokenSpans = Callable[[str], list[tuple[int, int]]]
"""Maps text to the character span of each token, in order."""


@dataclass(frozen=True)
class ChunkerConfig:
    max_tokens: int = 200
    overlap: int = 32

    def __post_init__(self) -> None:
        if self.max_tokens < 8:
            raise ConfigError(f"max_tokens must be at least 8, got {self.max_tokens}")
        if not 0 <= self.overlap < self.max_tokens // 2:
            raise ConfigError(
                f"overlap must be in [0, max_tokens/2), got {self.overlap} for {self.max_tokens}"
            )


def chunk_document(doc: Document, spans: TokenSpans, config: ChunkerConfig) -> list[Chunk]:
    """Chunks of ``doc`` in document order with ids ``doc_id#0``, ``doc_id#1``, ..."""
    sections = doc.sections or (Section(path=(), start=0, end=len(doc.text)),)
    chunks: list[Chunk] = []
    for section in sections:
        for start, end in _section_windows(doc.text, section, spans, config):
            chunks.append(chunk_at(doc, len(chunks), section.path, start, end))
    return chunks


def chunk_at(doc: Document, n: int, path: tuple[str, ...], start: int, end: int) -> Chunk:
    """Chunk ``doc_id#n``: ``doc``'s text from ``start`` to ``end``, in the section at ``path``."""
    return Chunk(
        chunk_id=f"{doc.doc_id}#{n}",
        doc_id=doc.doc_id,
        title=doc.title,
        section=path,
        source=doc.source,
        url=doc.url,
        license=doc.license,
        start=start,
        end=end,
        text=doc.text[start:end],
    )


def chunk_documents(docs: Iterable[Document], spans: TokenSpans, config: ChunkerConfig) -> Iterator[Chunk]:
    for doc in docs:
        yield from chunk_document(doc, spans, config)


def _section_windows(
    text: str, section: Section, spans: TokenSpans, config: ChunkerConfig
) -> Iterator[tuple[int, int]]:
    body = text[section.start : section.end]
    tokens = spans(body)
    if not tokens:
        return
    base = section.start
    if len(tokens) <= config.max_tokens:
        yield base + tokens[0][0], base + tokens[-1][1]
        return
    i = 0
    while i < len(tokens):
        stop = min(i + config.max_tokens, len(tokens))
        if stop < len(tokens):
            stop = _best_cut(body, tokens, i, stop)
            stop = _back_to_character(tokens, i, stop)
        yield base + tokens[i][0], base + tokens[stop - 1][1]
        if stop == len(tokens):
            return
        i = max(stop - config.overlap, i + 1)
        while i < stop and _inside_character(tokens, i):  # start on a character's first piece
            i += 1


def _inside_character(tokens: list[tuple[int, int]], k: int) -> bool:
    """Whether token ``k`` continues the character of token ``k - 1``.

    Wordpieces of one character (a Hangul syllable is three jamo pieces) share its span; a cut
    between them would keep the whole character on both sides and overrun the token budget.
    """
    return 0 < k < len(tokens) and tokens[k][0] < tokens[k - 1][1]


def _back_to_character(tokens: list[tuple[int, int]], lo: int, stop: int) -> int:
    """Move a window end back to the nearest character boundary (unchanged if there is none)."""
    k = stop
    while k > lo + 1 and _inside_character(tokens, k):
        k -= 1
    return k if not _inside_character(tokens, k) else stop


def _best_cut(body: str, tokens: list[tuple[int, int]], lo: int, hi: int) -> int:
    """The window end (exclusive token index) in (lo + half, hi] at the strongest boundary."""
    best, best_rank = hi, 0
    for k in range(hi, lo + (hi - lo) // 2, -1):
        gap = body[tokens[k - 1][1] : tokens[k][0]]
        prev = body[tokens[k - 1][0] : tokens[k - 1][1]]
        rank = 3 if "\n\n" in gap else 2 if "\n" in gap else 1 if prev.endswith((".", "!", "?", ";")) else 0
        if rank > best_rank:
            best, best_rank = k, rank
            if rank == 3:
                break
    return best


class WordpieceSpans:
    """Token spans from a Hugging Face ``tokenizer.json`` (the embedder's own wordpieces)."""

    def __init__(self, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.name = f"wordpiece:{tokenizer_file.parent.name}"

    def __call__(self, text: str) -> list[tuple[int, int]]:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [(s, e) for s, e in encoding.offsets if e > s]

    def count(self, text: str) -> int:
        return len(self(text))
