"""A follow-up read with the turns before it (rag/reading/conversation.py)."""

from __future__ import annotations

from core.types import Message
from rag.reading.conditions import LineContext, question_conditions, verdict
from rag.reading.conversation import carry, earlier_questions, replaced
from rag.reading.question import ReadQuestion


def test_a_question_without_earlier_turns_is_read_as_it_is():
    alone = carry("What is the apixaban dose in AF?", [])
    assert alone.read == ReadQuestion.read("What is the apixaban dose in AF?")
    assert alone.carried == () and alone.said == ""


def test_the_drug_and_the_value_of_the_first_turn_are_carried_and_said():
    asked = carry(
        "and how long before surgery do we stop it?", ["Dabigatran for AF, CrCl 24 mL/min - what dose?"]
    )
    assert asked.read.patient.drugs == {"dabigatran"}
    assert [b.low for b in asked.read.patient.values] == [24.0]
    assert "dabigatran" in asked.read.terms and "surgery" in asked.read.terms
    assert asked.said == "Read with: CrCl 24 mL/min, dabigatran (from your earlier messages).\n\n"


def test_a_value_the_follow_up_states_replaces_the_earlier_one_of_its_measure():
    asked = carry("now her eGFR is 25 - same dose?", ["72 F on apixaban, eGFR 60 - dose?"])
    assert [(b.measure, b.low) for b in asked.read.patient.values] == [("egfr", 25.0)]
    assert asked.read.patient.drugs == {"apixaban"}
    assert "eGFR 60" not in asked.said and "apixaban" in asked.said


def test_what_is_asked_comes_from_the_last_turn_that_asked_when_the_follow_up_asks_nothing_of_its_own():
    asked = carry("and if penicillin allergic?", ["CAP, CURB-65 1, at home - first-line treatment?"])
    assert [k.name for k in asked.read.kinds] == ["a treatment"]
    own = carry("how many days in total?", ["CAP, CURB-65 1, at home - first-line treatment?"])
    assert own.read.asks_number and not own.read.kinds


def test_each_kind_of_fact_is_replaced_only_by_its_own_kind():
    earlier = question_conditions("pregnant, 30 years old, on heparin, K 3.1 mmol/L")
    now = question_conditions("potassium now 4.2 mmol/L")
    patient = replaced(earlier, now)
    assert [b.low for b in patient.values if b.measure == "potassium"] == [4.2]
    assert patient.pregnancy == "pregnant" and patient.drugs == earlier.drugs and patient.ages == earlier.ages


def test_a_line_for_another_drug_conflicts_with_a_follow_up_whose_drug_was_named_only_before():
    """Issue 60's unrelated-drug answer: the follow-up names no drug; the first turn does."""
    asked = carry("what's the dose with that kidney function?", ["Dabigatran for AF, CrCl 24 mL/min"])
    line = LineContext(line="Apixaban 2.5 mg twice daily.", headings=("Dosing",))
    assert verdict(asked.read.patient, line).state == "conflicts"
    alone = ReadQuestion.read("what's the dose with that kidney function?")
    assert verdict(alone.patient, line).state != "conflicts"  # read alone, nothing excluded it


def test_only_the_users_turns_are_earlier_questions():
    history = [Message("user", " CAP? "), Message("assistant", "Amoxicillin [1]."), Message("user", "")]
    assert earlier_questions(history) == ["CAP?"]


def test_only_values_written_with_their_measure_or_unit_are_carried():
    asked = carry("fluids - how much?", ["65 M, sepsis, BP 84/50, lactate 4.6, weighs 80 kg, 5 h ago"])
    assert asked.carried == ("BP 84", "lactate 4.6", "weighs 80 kg")
    assert sorted(b.low for b in asked.read.patient.values) == [4.6, 80.0, 84.0]
    # a score's name with its own number ("CURB-65") is not a value of the score
    assert carry("what instead?", ["CAP, CURB-65 2, on the ward"]).carried == ("CURB-65 2",)


def test_a_drug_named_only_before_bars_no_passage_but_still_rules_out_another_drugs_line():
    """The fondaparinux line answers "and for the parenteral anticoag?" after an aspirin turn: the
    carried drug is the patient's, not what the follow-up asks about, so a passage need not name it."""
    from rag.profile import default_profile
    from rag.reading.aboutness import missing
    from tests.unit.reading.test_aboutness import chunk

    asked = carry(
        "and for the parenteral anticoag, given that bleed?", ["NSTEMI, GI bleed last year - aspirin load?"]
    )
    assert asked.read.patient.drugs == {"aspirin"} and asked.read.drugs == frozenset()
    passage = chunk("UA/NSTEMI", ("Anticoagulant Therapy",), "- **OR Fondaparinux:** 2.5 mg SC daily.")
    checks_only = default_profile().verify.model_copy(update={"about": "off"})
    assert missing(asked.read, passage, checks_only) == ()
    own = carry("and the dose of dabigatran then?", ["NSTEMI, GI bleed last year - aspirin load?"])
    assert missing(own.read, passage, checks_only) == ("dabigatran",)  # the follow-up's own drug is asked
