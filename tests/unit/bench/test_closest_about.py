"""The closest-about bench's tally (bench/answers/closest_about.py): what each rule keeps of the
replayed closest lines, and the key facts it loses."""

from __future__ import annotations

import functools

from bench.answers.closest_about import judged, tally
from evals.datasets.clinician import ClinicianItem

ANSWERABLE = ClinicianItem("A-1", "answerable", "q", "g", key_fact=r"40 mg")
FAR = ClinicianItem("F-1", "far", "q", "far:1")
THANKS = ClinicianItem("F-2", "far", "q", "far:2")
LINES = {
    # text, P(about) of its passage, every key term in it, coverage, specialist coverage
    "A-1": [("Give 40 mg daily.", 0.3, False, 0.5, 1.0), ("Other line.", 0.7, True, 1.0, 1.0)],
    "F-1": [("Capital femoral epiphysis", 0.6, False, 0.5, 0.0)],
    "F-2": [("Spinal arachnoid cyst", 0.6, False, 0.0, 1.0)],
}


def test_a_stricter_rule_shows_fewer_closest_lines_and_counts_the_key_facts_it_loses():
    items = [ANSWERABLE, FAR, THANKS]
    every = tally(items, LINES, lambda p, every, share, special: True)
    assert every["answerable"] == {"questions": 1, "closest": 1, "key_fact": 1, "key_fact_lost": 0}
    assert every["far"]["closest"] == 2
    strict = tally(items, LINES, functools.partial(judged, 0.5, "a specialist concept"))
    assert strict["answerable"] == {"questions": 1, "closest": 1, "key_fact": 0, "key_fact_lost": 1}
    assert strict["far"]["closest"] == 0  # neither passage holds a specialist concept asked about
    assert tally(items, LINES, functools.partial(judged, 0.5, "a concept"))["far"]["closest"] == 1
    assert tally(items, LINES, functools.partial(judged, 0.5, ""))["far"]["closest"] == 2


def test_a_question_the_quotes_answered_is_not_counted():
    assert tally([ANSWERABLE], {}, lambda p, every, share, special: True) == {}
