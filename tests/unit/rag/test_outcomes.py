"""The three outcomes (rag/answer/outcomes.py) as every interface shows them: ``Answer.outcome`` from the
mode, the terminal text, the JSON record and the API's medcite field."""

from __future__ import annotations

import math

import pytest

from api.completions import extras
from core.types import OUTCOMES, Answer
from rag.answer.outcomes import CLOSEST_LEAD, NOTHING_RELEVANT, line_text, lines_reply, nothing_relevant
from rag.reading.lines import Line
from rag.render import answer_to_dict, answer_to_text
from tests.helpers import make_hit, make_turn

LINE = "Repeat draw: At 1 to 3 hours after the initial sample."
HIT = make_hit("acs#8", LINE, score=0.7, start=3019, end=3019 + len(LINE), doc_id="acs")


@pytest.mark.parametrize(
    ("mode", "cited", "outcome"),
    [
        ("rag", True, "answer"),
        ("abstained", True, "closest_lines"),
        ("abstained", False, "nothing_relevant"),
        ("closed-book", False, "closed_book"),
        ("degraded", False, "degraded"),
    ],
)
def test_the_outcome_follows_from_the_mode_and_whether_lines_are_cited(mode, cited, outcome):
    base = lines_reply(make_turn(), [Line(HIT, 1, 0.4)], [HIT], confirmed=False)
    answer = Answer("q", "text", mode, citations=base.citations if cited else ())
    assert answer.outcome == outcome and outcome in OUTCOMES


def test_each_outcome_reads_differently_in_the_terminal_and_carries_its_name_in_json_and_the_api():
    quoted = lines_reply(make_turn(), [Line(HIT, 1, 0.8)], [HIT], confirmed=True)
    closest = lines_reply(make_turn(), [Line(HIT, 1, 0.17)], [HIT], confirmed=False, notes=["a note"])
    nothing = nothing_relevant(make_turn(), ["no passage cleared the evidence threshold (30 below it)"])
    texts = {a.outcome: answer_to_text(a) for a in (quoted, closest, nothing)}
    assert texts["answer"].startswith("Answer (quoted word for word; the best line 80% likely to answer)")
    assert texts["closest_lines"].startswith("Not confirmed: medcite found no line that answers")
    assert closest.text == f"{CLOSEST_LEAD}\n- {LINE} [1] (17% likely to answer; not confirmed)"
    assert "Where the closest lines stand (not an answer):" in texts["closest_lines"]
    assert "support" not in texts["closest_lines"].split("Where the closest")[1].splitlines()[1]
    assert texts["nothing_relevant"].startswith(
        f"Nothing relevant in the indexed sources\n{NOTHING_RELEVANT}"
    )
    for answer in (quoted, closest, nothing):
        assert answer_to_dict(answer)["outcome"] == extras(answer)["medcite"]["outcome"] == answer.outcome
    (line,) = answer_to_dict(closest)["sentences"]
    assert line["status"] == "closest" and line["probability"] == 0.17 and not line["supported"]


def test_closest_passages_nobody_scored_say_so_instead_of_a_probability():
    answer = lines_reply(make_turn(), [Line(HIT, 1, math.nan)], [HIT], confirmed=False)
    assert "(not scored; not confirmed)" in answer.text
    assert answer.sentences[0].probability is None


def test_a_lines_own_bracketed_numbers_are_made_inert_and_an_unscored_passage_shows_where_it_stands():
    text = "Give 2 g [3] then 1 g [4-6] daily."
    hit = make_hit(
        "d#0", text, score=0.7, start=0, end=len(text), doc_id="d", title="Guide", section=("Dosing",)
    )
    assert line_text(Line(hit, 1, 0.3)) == "Give 2 g (3) then 1 g (4-6) daily."  # never read as citations
    answer = lines_reply(make_turn(), [Line(hit, 1, math.nan)], [hit], confirmed=False)
    assert answer.text.endswith("- Guide › Dosing [1] (not scored; not confirmed)")  # not the passage's text
    assert answer.citations[0].quote == text  # which the citation opens, exactly
