import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ConfigError
from core.types import Document, Section
from corpora.chunking import ChunkerConfig, chunk_document
from tests.helpers import make_doc, whitespace_spans


def test_short_sections_become_one_chunk_each_with_provenance():
    doc = make_doc(
        "src:1", {"Definition": "A rare disorder.", "Inheritance": "Autosomal dominant."}, title="Disease X"
    )
    chunks = chunk_document(doc, whitespace_spans, ChunkerConfig(max_tokens=50, overlap=5))
    assert [c.chunk_id for c in chunks] == ["src:1#0", "src:1#1"]
    assert [c.section for c in chunks] == [("Definition",), ("Inheritance",)]
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert (c.doc_id, c.title, c.source, c.url, c.license) == (
            "src:1",
            "Disease X",
            "test",
            "https://example.org/src:1",
            "CC0",
        )


def test_long_section_is_windowed_with_overlap_and_never_crosses_sections():
    words = " ".join(f"w{i}" for i in range(100))
    doc = make_doc("d", {"A": words, "B": "tail words here"})
    chunks = chunk_document(doc, whitespace_spans, ChunkerConfig(max_tokens=30, overlap=10))
    a_chunks = [c for c in chunks if c.section == ("A",)]
    assert all(len(c.text.split()) <= 30 for c in chunks)
    assert a_chunks[0].text.split()[-10:] == a_chunks[1].text.split()[:10]  # 10-token overlap
    assert a_chunks[-1].text.endswith("w99")
    assert chunks[-1].text == "tail words here"
    section_a = doc.sections[0]
    assert all(section_a.start <= c.start and c.end <= section_a.end for c in a_chunks)


def test_cut_prefers_a_sentence_end_in_the_second_half_of_the_window():
    text = "one two three four five six seven. eight nine ten eleven twelve"
    doc = make_doc("d", {"S": text})
    first = chunk_document(doc, whitespace_spans, ChunkerConfig(max_tokens=10, overlap=0))[0]
    assert first.text == "one two three four five six seven."


def test_document_without_sections_is_one_section_and_empty_text_gives_no_chunk():
    doc = Document(doc_id="d", title="t", text="  some text  ", source="s", url="", license="")
    assert [c.text for c in chunk_document(doc, whitespace_spans, ChunkerConfig())] == ["some text"]
    empty = Document(doc_id="e", title="t", text="   ", source="s", url="", license="")
    assert chunk_document(empty, whitespace_spans, ChunkerConfig()) == []


@pytest.mark.parametrize("max_tokens,overlap", [(4, 0), (20, 10), (20, -1)])
def test_invalid_config_is_refused(max_tokens, overlap):
    with pytest.raises(ConfigError):
        ChunkerConfig(max_tokens=max_tokens, overlap=overlap)


words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=80, deadline=None)
@given(
    bodies=st.lists(words, min_size=1, max_size=4), max_tokens=st.integers(8, 40), overlap=st.integers(0, 3)
)
def test_chunks_cover_every_token_of_every_section(bodies, max_tokens, overlap):
    doc = make_doc("h", {f"s{i}": b * 5 for i, b in enumerate(bodies)})
    config = ChunkerConfig(max_tokens=max_tokens, overlap=overlap)
    chunks = chunk_document(doc, whitespace_spans, config)
    assert chunks == chunk_document(doc, whitespace_spans, config)  # deterministic
    covered = set()
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert len(whitespace_spans(c.text)) <= max_tokens
        covered.update(range(c.start, c.end))
    for section in doc.sections:
        for s, e in whitespace_spans(doc.text[section.start : section.end]):
            assert set(range(section.start + s, section.start + e)) <= covered
    assert all(isinstance(s, Section) for s in doc.sections)
