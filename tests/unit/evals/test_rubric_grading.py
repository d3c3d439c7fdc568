"""Grading one reply: the deterministic matchers, the judge's typed prompt and JSON verdict, its
bounded retries, and the judge beside a matcher (for agreement) without changing the score."""

from __future__ import annotations

import pytest

from core.types import Message
from evals.datasets.rubric.clinician import load_clinician_rubric
from evals.engine.rubric.grade import JudgeSettings, Reply, grade, matches
from evals.engine.rubric.judge import AGAIN, JudgeAsk, Verdict, judge_criterion
from evals.types import Criterion, Matcher, RubricItem
from tests.rubric_support import RubricModel


def test_matchers_read_the_reply_its_mode_and_its_citations():
    regex = Matcher("regex", pattern="may be considered|IIb", modes=("rag", "closed-book"))
    assert matches(regex, Reply("OAC **may  be considered** (Class IIb).", "rag"))
    assert not matches(regex, Reply("It may be considered.", "abstained"))  # closest lines state nothing
    assert matches(Matcher("regex", pattern="2-3 mg"), Reply("2\u20133 mg", "rag"))  # an en dash reads as "-"
    cites = Matcher("cites", sources=("open-medicine:acc_aha_af_2023",), modes=("rag",))
    assert matches(cites, Reply("x", "rag", ("open-medicine:acc_aha_af_2023/anticoagulation",)))
    assert not matches(cites, Reply("x", "rag", ("open-medicine:acc_aha_af_2023x/a",)))
    assert not matches(cites, Reply("x", "abstained", ("open-medicine:acc_aha_af_2023/a",)))
    assert matches(Matcher("mode", modes=("abstained",)), Reply("I cannot say.", "abstained"))


def test_the_verdict_is_typed_json():
    assert Verdict.parse('{"met": true, "explanation": "yes"}') == Verdict(met=True, explanation="yes")
    assert Verdict.parse('```json\n{"criteria_met": false}\n```') == Verdict(met=False)  # HealthBench's key
    assert Verdict.parse('Here: {"met": false, "explanation": "no"} done') == Verdict(
        met=False, explanation="no"
    )
    # the small local judge drops the closing brace, or is cut inside its explanation: closed and read
    assert Verdict.parse('{"met": true, "explanation": "it does"') == Verdict(met=True, explanation="it does")
    assert Verdict.parse('{"met": false, "explanation": "cut her') == Verdict(
        met=False, explanation="cut her"
    )
    for bad in ('{"met": "true"}', '{"met": tru', "met: yes", '{"explanation": "x"}', "[true]"):
        assert Verdict.parse(bad) is None, bad


def ask() -> JudgeAsk:
    conversation = (
        Message("user", "I take metformin."),
        Message("assistant", "Noted."),
        Message("user", "Beer?"),
    )
    return JudgeAsk(conversation, "Heavy drinking raises lactic acidosis risk [1].", "Mentions acidosis", 6)


def test_the_prompt_holds_the_conversation_reply_and_criterion_after_shared_rules():
    messages = ask().messages()
    assert [m.role for m in messages] == ["system", "user"]
    assert "user: I take metformin.\n\nassistant: Noted.\n\nuser: Beer?" in messages[1].content
    assert "raises lactic acidosis risk." in messages[1].content and "[1]" not in messages[1].content
    assert "\n\nCriterion (+6 points): Mentions acidosis\n\nDoes the reply" in messages[1].content
    other = JudgeAsk(ask().conversation, ask().reply, "Asks how much", -2).messages()
    assert other[0] == messages[0] and "(-2 points)" in other[1].content  # the rules: one shared prefix


def test_an_unparsable_verdict_is_asked_again_up_to_the_bound():
    model = RubricModel(garbage=1)
    result = judge_criterion(model, ask(), attempts=3, max_tokens=50)
    assert (result.met, result.attempts) == (True, 2) and "acidosis" in result.explanation
    assert model.seen[-1] == AGAIN  # the second try: the bad reply, then the request for JSON
    stubborn = RubricModel(garbage=5)
    result = judge_criterion(stubborn, ask(), attempts=3, max_tokens=50)
    assert result.met is None and result.attempts == 3 and result.explanation.startswith("unparsable")
    assert stubborn.judged == 3


def test_matched_criteria_keep_their_score_and_the_judge_verdict_rides_beside_it():
    item = RubricItem(
        "x",
        "q",
        (Message("user", "Fever in a child?"),),
        (
            Criterion(
                "Mentions paracetamol",
                5,
                ("axis:accuracy",),
                "regex",
                Matcher("regex", pattern="paracetamol"),
            ),
            Criterion("Recommends aspirin", -5, ("axis:accuracy",), "rubric"),
        ),
    )
    reply = Reply("Give paracetamol.", "closed-book")
    graded = grade(item, reply, JudgeSettings(RubricModel(always=False), matched=("regex",)))
    first, second = graded.grades
    assert (first["met"], first["by"], first["judge_met"]) == (True, "regex", False)
    assert (second["met"], second["by"]) == (False, "judge")
    assert graded.score == 1.0 and graded.judge_calls == 2
    ungraded = grade(item, reply, JudgeSettings(RubricModel(garbage=9), attempts=2))
    assert ungraded.grades[1]["met"] is None and ungraded.score is None  # never guessed
    with pytest.raises(ValueError, match="needs a judge"):
        grade(item, reply, JudgeSettings(None))


def test_a_clinician_item_is_graded_as_the_benchmark_reads_it():
    items = load_clinician_rubric("test2", "clinician-rubric:test2")
    item = next(i for i in items if i.qid == "T2-A-acc_aha_af_2023-01")
    cited = ("open-medicine:acc_aha_af_2023/anticoagulation",)
    settings = JudgeSettings(None)
    right = grade(item, Reply("OAC may be considered (Class IIb) [1].", "rag", cited), settings)
    assert right.score == 1.0
    sibling = grade(
        item, Reply("OAC may be considered (Class IIb); Class III otherwise [1].", "rag", cited), settings
    )
    assert sibling.score == (5 + 2 - 5) / 7
    uncited = grade(item, Reply("OAC may be considered (Class IIb).", "closed-book"), settings)
    assert uncited.score == 5 / 7
    assert grade(item, Reply("Closest lines: may be considered", "abstained", cited), settings).score == 0.0
    near = next(i for i in items if i.kind == "near")
    assert grade(near, Reply("The sources do not say.", "abstained"), settings).score == 1.0
    assert grade(near, Reply("Yes, anticoagulate.", "rag"), settings).score == 0.0  # -5 / 5 clipped
