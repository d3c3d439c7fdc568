"""Citation markers parsed back to the numbered sources; sentence splitting of answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.generate.citations import parse_answer, split_sentences, strip_markers
from tests.helpers import numbered_hit

SOURCES = [numbered_hit(n) for n in range(1, 4)]  # markers [1]..[3] are valid


# -- sentences --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "Give approx. 2.5 mg daily, e.g. with food. Dr. Lee agrees.",
            ["Give approx. 2.5 mg daily, e.g. with food.", "Dr. Lee agrees."],
        ),
        (
            "Warfarin vs. DOACs differ, i.e. in bleeding. Both work.",
            ["Warfarin vs. DOACs differ, i.e. in bleeding.", "Both work."],
        ),
        ("Common in the U.S. Also in Europe.", ["Common in the U.S. Also in Europe."]),
        ("Take vitamin D. Then rest!", ["Take vitamin D.", "Then rest!"]),
        ("Is it sepsis? Check qSOFA.", ["Is it sepsis?", "Check qSOFA."]),
        (
            "Risk is high [1]. qSOFA helps. eGFR falls. pH drops. and so on.",
            ["Risk is high [1].", "qSOFA helps.", "eGFR falls.", "pH drops. and so on."],
        ),
        ("High risk. [1] Low risk [2]. Next [1][3]", ["High risk. [1]", "Low risk [2].", "Next [1][3]"]),
        ("Sepsis is X [1] Septic shock is Y [2]", ["Sepsis is X [1]", "Septic shock is Y [2]"]),
        (
            "Criteria:\n- RR >= 22 [1]\n- SBP <= 100\n1. First item.\n2) Second",
            ["Criteria:", "RR >= 22 [1]", "SBP <= 100", "First item.", "Second"],
        ),
        ("## Heading\nBody text.\n\n> Quoted note.", ["Heading", "Body text.", "Quoted note."]),
        ("A sentence wrapped\nover two lines. Next.", ["A sentence wrapped\nover two lines.", "Next."]),
        ("Risk is high.\n[1]", ["Risk is high.\n[1]"]),
        (  # a list numbered inside one line: each number starts a sentence, as on its own line
            "qSOFA needs two of: 1. Respiratory rate >= 22; 2. Altered mentation; 3. SBP <= 100 [1].",
            [
                "qSOFA needs two of:",
                "1. Respiratory rate >= 22;",
                "2. Altered mentation;",
                "3. SBP <= 100 [1].",
            ],
        ),
        ("Take 2. Then stop. Grade 3. Done.", ["Take 2.", "Then stop.", "Grade 3.", "Done."]),
        ("", []),
        (" \n\n - \n***", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


@given(st.text())
def test_split_sentences_never_raises_and_returns_trimmed_pieces_of_the_text(text):
    pieces = split_sentences(text)
    for piece in pieces:
        assert piece and piece == piece.strip() and piece in text


def test_strip_markers_tidies_the_space_before_punctuation():
    assert strip_markers("Risk is high [1][2]. More [3] here.") == "Risk is high. More here."
    assert strip_markers("See [the link](https://x.org) [2](https://y.org)") == (
        "See [the link](https://x.org) [2](https://y.org)"
    )


# -- markers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,text,markers",
    [
        ("Risk [1].", "Risk [1].", [1]),
        ("Risk [1, 2].", "Risk [1][2].", [1, 2]),
        ("Risk [1,2].", "Risk [1][2].", [1, 2]),
        ("Risk [1;3].", "Risk [1][3].", [1, 3]),
        ("Risk [1][2].", "Risk [1][2].", [1, 2]),
        ("Risk [1-3].", "Risk [1][2][3].", [1, 2, 3]),
        ("Risk [2–3].", "Risk [2][3].", [2, 3]),
        ("Risk 【1】.", "Risk [1].", [1]),
        ("Risk 【１】.", "Risk [1].", [1]),
        ("Risk [Source 2].", "Risk [2].", [2]),
        ("Risk [sources 1 and 3].", "Risk [1][3].", [1, 3]),
        ("Risk [^1].", "Risk [1].", [1]),
        ("Risk [ 2 ].", "Risk [2].", [2]),
        ("Risk [02].", "Risk [2].", [2]),
        ("Risk [1, 1].", "Risk [1].", [1]),
        ("Risk. [3]", "Risk. [3]", [3]),
    ],
)
def test_accepted_marker_forms_are_normalised(raw, text, markers):
    parsed = parse_answer(raw, SOURCES)
    assert parsed.text == text
    assert parsed.markers == (tuple(markers),)
    assert [c.marker for c in parsed.citations] == markers
    assert parsed.rejected == ()


@pytest.mark.parametrize(
    "raw,text,rejected",
    [
        ("Risk [0].", "Risk.", ("[0]",)),
        ("Risk [999].", "Risk.", ("[999]",)),
        ("Risk [4] and more.", "Risk and more.", ("[4]",)),
        ("Risk [1, 4].", "Risk [1].", ("[4]",)),
        ("Risk [2-5].", "Risk.", ("[2-5]",)),
        ("Risk [3-1].", "Risk.", ("[3-1]",)),
        ("Risk [1,2", "Risk", ("[1,2",)),
        ("Risk [1,2\nNext line.", "Risk\nNext line.", ("[1,2",)),
        ("Risk [[1]].", "Risk.", ("[[1]]",)),
        ("Risk [1]].", "Risk.", ("[1]]",)),
        ("Risk [1,].", "Risk.", ("[1,]",)),
        ("Risk [12345678901234567890].", "Risk.", ("[12345678901234567890]",)),
    ],
)
def test_invalid_markers_are_removed_and_reported(raw, text, rejected):
    parsed = parse_answer(raw, SOURCES)
    assert parsed.text == text
    assert parsed.rejected == rejected
    assert all(c.marker in (1,) for c in parsed.citations)


@pytest.mark.parametrize(
    "raw",
    [
        "See [a] for details.",
        "Give [2.5 mg] daily.",
        "See [Table 1] below.",
        "Read [the guideline](https://example.org).",
        "Read [1](https://example.org) first.",
        "A range [1,2 and more] in text.",
    ],
)
def test_bracketed_text_that_is_no_marker_is_left_alone(raw):
    parsed = parse_answer(raw, SOURCES)
    assert parsed.text == raw
    assert parsed.citations == () and parsed.rejected == ()


def test_citations_are_numbered_by_source_and_ordered_by_first_use():
    parsed = parse_answer("Low risk [3]. High risk [1][3]. Mortality rises [2, 1].", SOURCES)
    assert [c.marker for c in parsed.citations] == [3, 1, 2]
    assert parsed.markers == ((3,), (1, 3), (2, 1))
    third = parsed.citations[0]
    assert third.chunk_id == "guide:doc3#0" and third.quote == "passage 3 text"
    assert third.url == "https://example.org/3" and third.support is None


def test_sentences_carry_the_claim_without_markers():
    parsed = parse_answer("- qSOFA uses three criteria [1].\n- Score >= 2 is high risk. [2]", SOURCES)
    assert [s.text for s in parsed.sentences] == [
        "qSOFA uses three criteria [1].",
        "Score >= 2 is high risk. [2]",
    ]
    assert [s.claim for s in parsed.sentences] == ["qSOFA uses three criteria.", "Score >= 2 is high risk."]


def test_a_sentence_without_markers_has_none():
    parsed = parse_answer("Sepsis is common. It kills [2].", SOURCES)
    assert parsed.markers == ((), (2,))


def test_with_no_sources_every_marker_is_rejected():
    parsed = parse_answer("Risk [1]. More [2].", [])
    assert parsed.text == "Risk. More." and parsed.citations == () and parsed.rejected == ("[1]", "[2]")


def test_rejected_markers_can_be_sorted_for_the_pipeline_note():
    parsed = parse_answer("A [9]. B [0]. C [1,", SOURCES)
    assert sorted(set(parsed.rejected)) == ["[0]", "[1,", "[9]"]


# -- properties -------------------------------------------------------------------------------

N_SOURCES = 3
_WORDS = st.text(alphabet="abcXYZ .,;:!?\n-–0123456789%≥é中", max_size=12)


@st.composite
def marker(draw) -> tuple[str, list[int], list[str]]:
    """A well-formed marker with the numbers it should yield and the rejections it should cause."""
    numbers = st.integers(0, N_SOURCES + 3) | st.integers(0, 10**6)
    kind = draw(st.sampled_from(["one", "list", "range", "fullwidth"]))
    if kind == "range":
        a, b = draw(numbers), draw(numbers)
        ok = 1 <= a <= b <= N_SOURCES
        return f"[{a}-{b}]", list(range(a, b + 1)) if ok else [], [] if ok else [f"[{a}-{b}]"]
    items = draw(st.lists(numbers, min_size=1, max_size=3)) if kind == "list" else [draw(numbers)]
    valid = [k for k in items if 1 <= k <= N_SOURCES]
    rejected = [f"[{k}]" for k in items if not 1 <= k <= N_SOURCES]
    text = "[" + ", ".join(map(str, items)) + "]"
    return (f"【{text[1:-1]}】" if kind == "fullwidth" else text), valid, rejected


@settings(max_examples=300)
@given(st.lists(st.tuples(_WORDS, marker()), max_size=8), _WORDS)
def test_marker_soup_keeps_exactly_the_in_range_numbers(parts, tail):
    text = "".join(words + m for words, (m, _, _) in parts) + tail
    parsed = parse_answer(text, SOURCES[:N_SOURCES])
    expected_valid = {k for _, (_, valid, _) in parts for k in valid}
    assert {c.marker for c in parsed.citations} == expected_valid
    assert list(parsed.rejected) == [r for _, (_, _, rejected) in parts for r in rejected]


_SOUP = st.lists(
    st.text(max_size=10)
    | st.sampled_from(
        ["[1]", "[2, 3]", "[0]", "[999]", "[1-3]", "【2】", "[[1]]", "[1,2", "[a]", "](", "[", "]"]
    ),
    max_size=12,
)


@settings(max_examples=300)
@given(_SOUP, st.integers(0, 4))
def test_any_text_parses_to_known_sources_and_cleaning_is_idempotent(pieces, n):
    sources = SOURCES[:n] if n <= 3 else [*SOURCES, numbered_hit(4)]
    parsed = parse_answer("".join(pieces), sources)
    ids = {h.chunk.chunk_id for h in sources}
    assert all(c.chunk_id in ids and 1 <= c.marker <= len(sources) for c in parsed.citations)
    assert len({c.marker for c in parsed.citations}) == len(parsed.citations)
    assert all(sources[c.marker - 1].chunk.chunk_id == c.chunk_id for c in parsed.citations)
    again = parse_answer(parsed.text, sources)
    assert again.text == parsed.text
    assert again.rejected == ()
    assert again.citations == parsed.citations
    assert again.markers == parsed.markers


@given(st.text())
def test_parse_is_deterministic_and_total_on_random_unicode(text):
    assert parse_answer(text, SOURCES) == parse_answer(text, SOURCES)


@pytest.mark.parametrize(
    "raw",
    ["First claim [1]. Second claim [2][3].", "- Item one [1]\n- Item two.\n\nPara [Source 2]. Tail [9]."],
)
def test_each_parsed_sentence_knows_its_span_in_the_cleaned_text(raw):
    parsed = parse_answer(raw, [numbered_hit(1), numbered_hit(2), numbered_hit(3)])
    assert parsed.sentences
    for s in parsed.sentences:
        assert parsed.text[s.start : s.end] == s.text
    assert [s.start for s in parsed.sentences] == sorted(s.start for s in parsed.sentences)
