"""Property tests of the chunker on hostile text: any Unicode, control characters, empty and huge
sections, and the real wordpiece tokenizer (whose offsets are the ones production uses).

tests/unit/corpora/test_chunking.py already checks coverage and determinism on short UTF-8 text
with the whitespace tokenizer; these extend the same contract to the nastier inputs of issue 7.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ConfigError
from core.types import Chunk, Document
from corpora.chunking import ChunkerConfig, TokenSpans, WordpieceSpans, chunk_document
from tests.helpers import make_doc, whitespace_spans

# Every code point except lone surrogates (not encodable, never in a decoded document).
ANY_CHAR = st.characters(exclude_categories=["Cs"])
# Control and format characters, odd spaces and line breaks, combining marks, wide and RTL scripts.
NASTY_CHARS = st.sampled_from(
    list("\x00\x01\x07\x08\x0b\x0c\x1b\x1c\x1f\x7f\x85\xa0\u200b\u200d\u2028\u2029\u202e\ufeff\ufffd")
    + list("a Z.!?;\n\t\r\u0301\u0308中文한국어العربية𝔘🧬ﷺ\U0010fffd")
    + ["\n\n", ". ", "  "]
)
TEXT = st.text(ANY_CHAR, max_size=60) | st.lists(NASTY_CHARS, max_size=60).map("".join)
SECTION_NAME = st.text(ANY_CHAR, min_size=1, max_size=8).filter(lambda s: "/" not in s)


@cache
def wordpiece() -> WordpieceSpans:
    from indexes.dense.embedder import packaged_minilm_dir

    return WordpieceSpans(packaged_minilm_dir() / "tokenizer.json")


def check_chunks(
    doc: Document, chunks: list[Chunk], spans: TokenSpans, config: ChunkerConfig, *, budget: bool = True
) -> None:
    """The chunker's contract: exact slices inside one section, numbered in order, within the
    token budget, and together covering every token of every section."""
    sections = doc.sections or ()
    assert [c.chunk_id for c in chunks] == [f"{doc.doc_id}#{i}" for i in range(len(chunks))]
    covered: set[int] = set()
    for chunk in chunks:
        assert 0 <= chunk.start < chunk.end <= len(doc.text)
        assert doc.text[chunk.start : chunk.end] == chunk.text
        owner = [s for s in sections if s.start <= chunk.start and chunk.end <= s.end]
        if sections:
            assert len(owner) == 1 and owner[0].path == chunk.section  # never crosses a section
        if budget:
            assert len(spans(chunk.text)) <= config.max_tokens
        covered.update(range(chunk.start, chunk.end))
    for section in sections:
        for s, e in spans(doc.text[section.start : section.end]):
            assert set(range(section.start + s, section.start + e)) <= covered


def chunk_and_check(doc: Document, spans: TokenSpans, max_tokens: int, data, *, budget: bool = True) -> None:
    """Chunks ``doc`` with an overlap drawn from ``data``: the chunks keep the contract of
    :func:`check_chunks`, and chunking again gives the same chunks (deterministic)."""
    overlap = data.draw(st.integers(0, max_tokens // 2 - 1))
    config = ChunkerConfig(max_tokens=max_tokens, overlap=overlap)
    chunks = chunk_document(doc, spans, config)
    check_chunks(doc, chunks, spans, config, budget=budget)
    assert chunk_document(doc, spans, config) == chunks


@settings(max_examples=150, deadline=None)
@given(
    bodies=st.dictionaries(SECTION_NAME, TEXT, max_size=5),
    repeat=st.integers(1, 12),
    max_tokens=st.integers(8, 30),
    data=st.data(),
)
def test_any_unicode_chunks_to_exact_in_section_slices(bodies, repeat, max_tokens, data):
    doc = make_doc("p:1", {name: body * repeat for name, body in bodies.items()})
    chunk_and_check(doc, whitespace_spans, max_tokens, data)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bodies=st.lists(TEXT, min_size=1, max_size=4),
    repeat=st.integers(1, 8),
    max_tokens=st.integers(8, 40),
    data=st.data(),
)
def test_real_wordpiece_offsets_chunk_any_unicode(bodies, repeat, max_tokens, data):
    doc = make_doc("p:2", {f"s{i}": body * repeat for i, body in enumerate(bodies)})
    # No budget check here: a chunk's text re-tokenized on its own can split differently than in
    # context ("0UW:0" inside a longer run); the budget is checked on windows in the test below.
    chunk_and_check(doc, wordpiece(), max_tokens, data, budget=False)


def test_wordpiece_window_never_exceeds_the_token_budget():
    # Windows are cut at character boundaries: a Hangul syllable's three pieces stay together.
    doc = make_doc("ko", {"A": "한" * 9})  # 27 wordpieces, 3 per syllable, all spanning the syllable
    config = ChunkerConfig(max_tokens=8, overlap=0)
    assert len(wordpiece()("한")) == 3
    chunks = chunk_document(doc, wordpiece(), config)
    assert [len(wordpiece()(c.text)) for c in chunks if len(wordpiece()(c.text)) > 8] == []


@settings(max_examples=100, deadline=None)
@given(text=TEXT, pad=st.text(" \t\n\r\x0b\x0c\x1c\x85\u2028\u3000", max_size=5))
def test_document_without_sections_is_chunked_as_one_section(text, pad):
    doc = Document(doc_id="raw", title="", text=pad + text + pad, source="s", url="", license="")
    config = ChunkerConfig(max_tokens=8, overlap=2)
    chunks = chunk_document(doc, whitespace_spans, config)
    check_chunks(doc, chunks, whitespace_spans, config)
    assert all(c.section == () for c in chunks)
    assert [t for c in chunks for t in c.text.split()][:1] == doc.text.split()[:1]
    assert (chunks == []) == (doc.text.split() == [])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00" * 1000,
        " \n\t\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029\u3000" * 100,
        "\u200b\ufeff\u202e" * 1000,  # not whitespace to Python: each run is one token
    ],
)
def test_empty_and_control_only_text(text):
    doc = Document(doc_id="c", title="", text=text, source="s", url="", license="")
    chunks = chunk_document(doc, whitespace_spans, ChunkerConfig(max_tokens=8, overlap=0))
    check_chunks(doc, chunks, whitespace_spans, ChunkerConfig(max_tokens=8, overlap=0))
    assert len(chunks) == len(whitespace_spans(text))  # one run of non-space per chunk at most


@settings(max_examples=5, deadline=None)
@given(unit=st.lists(NASTY_CHARS, min_size=1, max_size=40).map("".join))
def test_huge_sections_chunk_in_bounded_time(unit):
    body = (unit * (100_000 // len(unit) + 1))[:100_000]
    doc = make_doc("big", {"A": body, "B": "tail"})
    config = ChunkerConfig(max_tokens=200, overlap=32)
    for spans in (whitespace_spans, wordpiece()):
        chunks = chunk_document(doc, spans, config)
        check_chunks(doc, chunks, spans, config, budget=spans is whitespace_spans)


@settings(max_examples=200, deadline=None)
@given(max_tokens=st.integers(-(10**6), 10**6), overlap=st.integers(-(10**6), 10**6))
def test_config_is_valid_or_refused_with_a_config_error(max_tokens, overlap):
    valid = max_tokens >= 8 and 0 <= overlap < max_tokens // 2
    if valid:
        assert ChunkerConfig(max_tokens=max_tokens, overlap=overlap).max_tokens == max_tokens
    else:
        with pytest.raises(ConfigError, match=r"max_tokens|overlap"):
            ChunkerConfig(max_tokens=max_tokens, overlap=overlap)


@pytest.mark.parametrize(
    ("max_tokens", "overlap"), [(0, 0), (8, 8), (8, 100), (200, 200), (200, 100), (10, 5), (7, 0)]
)
def test_overlap_at_or_above_half_the_window_and_tiny_windows_are_refused(max_tokens, overlap):
    with pytest.raises(ConfigError):
        ChunkerConfig(max_tokens=max_tokens, overlap=overlap)
