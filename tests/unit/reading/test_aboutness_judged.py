"""The judged aboutness rule (rag/reading/aboutness.py: AboutnessModel over terms.py's concepts)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from core.types import Chunk
from evals.datasets.clinician import FROZEN_SHA256
from rag.profile import default_profile
from rag.reading.aboutness import ABOUTNESS_MODEL, AboutnessModel, missing, written_abbreviations
from rag.reading.question import ReadQuestion
from rag.reading.terms import Vocabulary, everyday_words

JUDGED = default_profile().verify.model_copy(update={"about": "judged", "min_about": None})


def chunk(title: str, section: tuple[str, ...], text: str) -> Chunk:
    return Chunk("d#0", "d", title, section, "test", "https://example.org/d", "CC0", 0, len(text), text)


def vocabulary() -> Vocabulary:
    df = Counter(
        {"pneumonia": 40, "community": 30, "acquir": 30, "amoxicillin": 8, "oral": 200, "melanoma": 3}
    )
    return Vocabulary(df, 2000, {"cap": "community acquired pneumonia"}, everyday_words())


def test_the_shipped_model_was_fitted_on_the_frozen_benchmarks_dev_part_only():
    manifest = json.loads(ABOUTNESS_MODEL.read_text())["manifest"]
    assert manifest["data_sha256"] == FROZEN_SHA256 and "dev part only" in manifest["data"]
    assert (
        manifest["command"] == "python -m training.aboutness"
    )  # as written then; `medcite train aboutness` runs it now


def test_more_coverage_or_more_relevance_is_never_less_about():
    model = AboutnessModel.shipped()
    assert 0.0 < model.threshold < 1.0
    for low, high in ((0.2, 0.8), (0.0, 1.0)):
        for special in (0.0, 1.0):
            at = {"specialist_coverage": special}
            assert model.probability({**at, "coverage": low, "relevance": 0.6}) < model.probability(
                {**at, "coverage": high, "relevance": 0.6}
            )
            assert model.probability({**at, "coverage": 0.6, "relevance": low}) < model.probability(
                {**at, "coverage": 0.6, "relevance": high}
            )
            assert model.probability({**at, "coverage": low}) < model.probability({**at, "coverage": high})


def test_an_abbreviation_the_corpus_defines_meets_its_long_form():
    question = ReadQuestion.read("What oral antibiotic is first-line for low-severity CAP?", vocabulary)
    bts = chunk(
        "Antibiotic Therapy for Community Acquired Pneumonia",
        ("Low Severity",),
        "First-line: Amoxicillin 500 mg TDS orally for 5 days.",
    )
    assert missing(question, bts, JUDGED, 0.9) == ()
    assert missing(question, bts, JUDGED) == ()  # without a relevance probability too


def test_a_passage_that_never_names_the_drug_asked_about_is_not_about_it():
    question = ReadQuestion.read(
        "What is the recommended dose of pembrolizumab for metastatic melanoma?", vocabulary
    )
    familial = chunk("Familial melanoma", ("Phenotypes", "Very frequent (80-99%)"), "Melanoma\nNevus")
    assert "pembrolizumab" in missing(question, familial, JUDGED, 0.6)


@pytest.mark.parametrize(
    ("question", "written"),
    [
        ("Low-severity CAP: first-line?", {"cap"}),
        ("At what SpO2 should oxygen be given?", {"spo2"}),
        ("When is the second hs-cTn drawn?", {"ctn"}),
        ("Which eGFR defines stage G3a?", {"egfr"}),  # a code like G3a is matched as written, not expanded
        ("What dose of Aspirin is chewed?", set()),
    ],
)
def test_abbreviations_are_read_from_how_the_question_writes_them(question, written):
    assert written_abbreviations(question) == written
