"""The concepts a question names and how a passage covers them (rag/reading/terms.py, abbreviations.py)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from core.types import Chunk
from rag.reading.abbreviations import best_long_form, corpus_pairs, pairs_in
from rag.reading.terms import Vocabulary, chunk_stems, coverage, stem
from tests.helpers import make_chunk


def _chunk(text: str, title: str = "", section: tuple[str, ...] = ()) -> Chunk:
    return make_chunk("d#0", text, title=title, section=section, url="", license="")


def test_schwartz_hearst_finds_the_papers_examples():
    # Schwartz & Hearst (2003): the short form's characters, right to left, the first at a word start
    assert (
        best_long_form("HSF", "the expression of heat shock transcription factor")
        == "heat shock transcription factor"
    )
    assert (
        best_long_form("CAP", "Start antibiotics for Community Acquired Pneumonia")
        == "Community Acquired Pneumonia"
    )
    assert best_long_form("XYZ", "nothing to match here") is None
    found = pairs_in("Adults with atrial fibrillation (AF) and acute coronary syndrome (ACS; see below).")
    assert found == [("AF", "atrial fibrillation"), ("ACS", "acute coronary syndrome")]


def test_parentheses_that_are_no_abbreviation_are_skipped():
    assert pairs_in("Give aspirin (162-325 mg) chewed.") == []  # no letter run that spells it
    assert pairs_in("A dose (see the table below for details) is given.") == []  # too long to be one
    assert pairs_in("The score (score) counts.") == []  # the short form is a word of its long form


def test_a_corpus_keeps_each_abbreviations_most_frequent_long_form():
    texts = [
        "community acquired pneumonia (CAP)",
        "Community Acquired Pneumonia (CAP)",
        "chronic airway problems (CAP)",
    ]
    assert corpus_pairs(texts) == {"cap": "community acquired pneumonia"}


def test_stem_meets_the_forms_guidelines_use():
    assert stem("orally") == stem("oral")
    assert stem("infections") == stem("infection")
    assert stem("treated") == stem("treat")
    assert stem("sepsis") == "sepsis" and stem("egfr") == "egfr"


def _vocabulary() -> Vocabulary:
    df = Counter({"pneumonia": 50, "community": 10, "acquir": 10, "amoxicillin": 5, "patient": 900})
    return Vocabulary(df, 1000, {"cap": "community acquired pneumonia"})


def test_an_abbreviation_and_its_long_form_cover_each_other():
    vocabulary = _vocabulary()
    (cap,) = vocabulary.concepts(("cap",))
    assert cap.covered_by(chunk_stems(_chunk("Amoxicillin for community-acquired pneumonia.")))
    (long_form,) = vocabulary.concepts(("community", "acquired", "pneumonia"))
    assert long_form.text == "community acquired pneumonia"
    assert long_form.covered_by(chunk_stems(_chunk("x", title="Antibiotics for CAP")))
    assert not long_form.covered_by(chunk_stems(_chunk("Pneumonia in the community.")))


def test_coverage_weighs_concepts_by_idf():
    vocabulary = _vocabulary()
    concepts = vocabulary.concepts(("amoxicillin", "patients"))
    share, missing = coverage(concepts, chunk_stems(_chunk("Amoxicillin 500 mg three times daily.")))
    idf = [vocabulary.idf("amoxicillin"), vocabulary.idf("patient")]
    assert share == pytest.approx(idf[0] / (idf[0] + idf[1]))
    assert missing == ("patients",)
    assert vocabulary.idf("pembrolizumab") == pytest.approx(
        math.log((1000 + 0.5) / 0.5 + 1)
    )  # never seen: rarest
    assert coverage((), frozenset()) == (1.0, ())


def test_the_vocabulary_is_saved_as_json_and_read_back(tmp_path):
    chunks = [_chunk("Community acquired pneumonia (CAP) in adults."), _chunk("Amoxicillin for CAP.")]
    path = tmp_path / "vocabulary" / "abc.json"
    built = Vocabulary.cached(path, chunks)
    assert path.is_file() and built.long_forms["cap"] == ("community", "acquir", "pneumonia")
    read = Vocabulary.cached(path, [])  # read from the file: the chunks are not needed again
    assert read.df == built.df and read.documents == 2 and read.abbreviations == built.abbreviations
    path.write_text("{not json")
    assert Vocabulary.cached(path, chunks).documents == 2  # damaged: rebuilt
