"""Closest lines need a passage naming enough of the question (rag/answer/closest.py, judged)."""

from __future__ import annotations

from rag.answer.closest import about_lines
from rag.profile import default_profile
from rag.reading.lines import Line
from tests.helpers import make_hit, make_turn

JUDGED = default_profile().verify.model_copy(update={"about": "judged", "min_about": 0.0})


def test_a_passage_naming_too_small_a_share_of_the_question_gives_no_closest_line():
    question = "How far is the Moon from the Earth?"  # three everyday concepts, one in the passage
    moon = make_hit("hpo:moon#0", "Moon facies", score=0.95)
    lines = [Line(moon, 1, 0.07)]
    turn = make_turn(question, [moon])
    assert about_lines(turn, lines, [moon], JUDGED, min_coverage=0.2)[0] == lines  # one of three: a third
    kept, lacking = about_lines(turn, lines, [moon], JUDGED, min_coverage=0.5)
    assert kept == [] and set(lacking) == {"far", "earth"}


def test_a_passage_sharing_no_concept_never_gives_one_however_relevant_the_model_finds_it():
    hypo = make_hit("g#0", "Hypoglycaemia protocol: give 15 g of glucose.", score=0.96)
    turn = make_turn("Thanks, that helps!", [hypo])
    assert about_lines(turn, [Line(hypo, 1, 0.3)], [hypo], JUDGED, min_coverage=0.0)[0] == []
