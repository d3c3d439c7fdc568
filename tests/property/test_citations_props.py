"""Property tests of citation parsing on hostile answers: random Unicode, control characters and
the malformed markers a small model writes. tests/unit/generate/test_citations.py covers the
documented forms one by one; here every combination must still resolve only to given passages."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.generate.citations import parse_answer, strip_markers
from tests.helpers import numbered_hit

SOURCES = [numbered_hit(n) for n in range(1, 6)]
N = st.integers(0, 5)
NORMALISED = re.compile(r"\[([0-9]+)\](?!\()")


def _pair(k: int, n: int) -> tuple[list[int], list[str]]:
    return ([k], []) if 1 <= k <= n else ([], [f"[{k}]"])


def _list(ks: tuple[int, ...], n: int) -> tuple[list[int], list[str]]:
    return [k for k in ks if 1 <= k <= n], [f"[{k}]" for k in ks if not 1 <= k <= n]


# marker as written -> (n -> (source numbers it yields, rejections it reports)), for n <= 5
MARKERS = {
    "[0]": lambda n: ([], ["[0]"]),
    "[999]": lambda n: ([], ["[999]"]),
    "[1,2": lambda n: ([], ["[1,2"]),
    "[[1]]": lambda n: ([], ["[[1]]"]),
    "[1,]": lambda n: ([], ["[1,]"]),
    "[-1]": lambda n: ([], ["[-1]"]),
    "[99999999999999999999]": lambda n: ([], ["[99999999999999999999]"]),
    "[3-1]": lambda n: ([], ["[3-1]"]),
    "[1]": lambda n: _pair(1, n),
    "[１]": lambda n: _pair(1, n),  # full-width digit
    "【2】": lambda n: _pair(2, n),
    "[Source 4]": lambda n: _pair(4, n),
    "[^3]": lambda n: _pair(3, n),
    "[1][2]": lambda n: _list((1, 2), n),
    "[1, 2]": lambda n: _list((1, 2), n),
    "[2;5]": lambda n: _list((2, 5), n),
    "[2-3]": lambda n: ([2, 3], []) if n >= 3 else ([], ["[2-3]"]),
}
WORDS = st.text(alphabet="abc XYZ,%é中", max_size=10)


@settings(max_examples=200)
@given(st.lists(st.tuples(WORDS, st.sampled_from(sorted(MARKERS))), max_size=8), N)
def test_each_marker_on_its_line_is_resolved_or_reported(lines, n):
    text = "".join(f"{words} {marker}\n" for words, marker in lines)
    parsed = parse_answer(text, SOURCES[:n])
    expected = [MARKERS[marker](n) for _, marker in lines]
    assert [c.marker for c in parsed.citations] == list(dict.fromkeys(k for ks, _ in expected for k in ks))
    assert list(parsed.rejected) == [r for _, rs in expected for r in rs]
    assert {int(k) for k in NORMALISED.findall(parsed.text)} == {c.marker for c in parsed.citations}


ANY = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
CONTROL = st.sampled_from(list("\x00\x07\x0b\x0c\x1b\x7f\x85\u200b\u2028\u2029\u202e\ufeff\r\t\n"))
SOUP = st.lists(
    ANY | CONTROL | st.sampled_from([*MARKERS, "[", "]", "【", "］", "](", "(", ". ", "\n\n"]), max_size=16
)


def check(parsed_text: str, n: int) -> None:
    """Every contract of a parsed answer for ``n`` sources."""
    sources = SOURCES[:n]
    parsed = parse_answer(parsed_text, sources)
    markers = [c.marker for c in parsed.citations]
    assert all(1 <= k <= n for k in markers) and len(set(markers)) == len(markers)
    assert all(c.chunk_id == sources[c.marker - 1].chunk.chunk_id for c in parsed.citations)
    assert {int(k) for k in NORMALISED.findall(parsed.text)} <= set(range(1, n + 1))
    assert {k for s in parsed.sentences for k in s.markers} == set(markers)
    for sentence in parsed.sentences:
        assert not NORMALISED.search(sentence.claim)
    again = parse_answer(parsed.text, sources)  # the shown text is clean: nothing more to remove
    assert (again.text, again.rejected, again.citations) == (parsed.text, (), parsed.citations)


@settings(max_examples=300)
@given(SOUP, N)
def test_any_text_resolves_only_to_given_sources(pieces, n):
    check("".join(pieces), n)


@settings(max_examples=200)
@given(st.text(st.characters(exclude_categories=["Cs"])), N)
def test_random_unicode_never_raises(text, n):
    check(text, n)
    assert isinstance(strip_markers(text), str)


@settings(max_examples=8, deadline=5000)  # ms, on two busy cores
@given(st.lists(st.sampled_from([*MARKERS, "Risk is high", ". ", "\n", "[", "e.g.", "A."]), min_size=1))
def test_100k_character_answers_parse_in_bounded_time(unit):
    text = "".join(unit)
    text = (text * (100_000 // len(text) + 1))[:100_000]
    parsed = parse_answer(text, SOURCES[:3])
    assert all(1 <= c.marker <= 3 for c in parsed.citations)


@settings(max_examples=200)
@given(SOUP)
def test_strip_markers_is_total_and_removes_normalised_markers(pieces):
    parsed = parse_answer("".join(pieces), SOURCES[:3])
    assert not NORMALISED.search(strip_markers(parsed.text))


@pytest.mark.parametrize(
    ("text", "shown", "rejected", "cited"),
    [
        ("[0]](", "(", ("[0]]",), []),  # was kept whole, as if "[0]" were the text of a markdown link
        ("[[1]](", "(", ("[[1]]",), []),
        ("[[0]](u) a [2]](v)", "(u) a(v)", ("[[0]]", "[2]]"), []),
        ("[1][2]](", "[1](", ("[2]]",), []),  # what is left reads as a link: [1] is not cited
        ("see [1](https://e.org) [1]", "see [1](https://e.org) [1]", (), [1]),  # a real link stays
    ],
)
def test_a_stray_marker_before_a_parenthesis_is_not_taken_for_a_link(text, shown, rejected, cited):
    parsed = parse_answer(text, SOURCES[:1])
    assert (parsed.text, parsed.rejected) == (shown, rejected)
    assert [c.marker for c in parsed.citations] == cited
    check(text, 1)
