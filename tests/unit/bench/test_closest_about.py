"""The closest-about bench's tally (bench/answers/closest_about.py): what each rule keeps of the
replayed closest lines, and the key facts it loses."""

from __future__ import annotations

import functools

from bench.answers.closest_about import Line, judged, tally
from evals.datasets.clinician import ClinicianItem
from rag.reading.aboutness import AboutnessModel

ANSWERABLE = ClinicianItem("A-1", "answerable", "q", "g", key_fact=r"40 mg")
FAR = ClinicianItem("F-1", "far", "q", "far:1")
THANKS = ClinicianItem("F-2", "far", "q", "far:2")
LINES = {
    # text, every key term, coverage, specialist coverage, P(relevant), a specialist concept asked
    "A-1": [
        Line("Give 40 mg daily.", False, 0.5, 1.0, 0.9, True),
        Line("Other line.", True, 1.0, 1.0, 0.9, True),
    ],
    "F-1": [Line("Capital femoral epiphysis", False, 0.3, 1.0, 0.9, False)],
    "F-2": [Line("Spinal arachnoid cyst", False, 0.0, 1.0, 0.96, False)],
}
MODEL = AboutnessModel.shipped()


def test_a_stricter_rule_shows_fewer_closest_lines_and_counts_the_key_facts_it_loses():
    items = [ANSWERABLE, FAR, THANKS]
    every = tally(items, LINES, lambda line: True)
    assert every["answerable"] == {"questions": 1, "closest": 1, "key_fact": 1, "key_fact_lost": 0}
    assert every["far"]["closest"] == 2
    assert (
        tally(items, LINES, functools.partial(judged, MODEL, 0.2, 0.0))["far"]["closest"] == 1
    )  # F-2: none shared
    strict = tally(items, LINES, functools.partial(judged, MODEL, 0.2, 0.6))
    assert strict["answerable"] == {"questions": 1, "closest": 1, "key_fact": 0, "key_fact_lost": 1}
    assert strict["far"]["closest"] == 0


def test_a_question_the_quotes_answered_is_not_counted():
    assert tally([ANSWERABLE], {}, lambda line: True) == {}
