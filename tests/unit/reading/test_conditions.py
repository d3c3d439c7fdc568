"""The condition reader: a line for another band, age, sex, drug or route conflicts; the line for
the patient fits. Lines and questions are the shapes of the default corpus's guidelines."""

from __future__ import annotations

import pytest

from rag.reading.conditions import LineContext, drugs, question_conditions, read_values, verdict

TABLE = "| Route | Dose | Concentration |\n|---|---|---|"
AKI = "| Stage | Serum Creatinine | Urine Output |\n|---|---|---|"
EVD = "| EVD output | Dosing frequency |\n|---|---|"


def judged(question: str, line: str, lead: str = "", asks_amount: bool = True) -> str:
    return verdict(question_conditions(question), LineContext(line, lead), asks_amount).state


@pytest.mark.parametrize(
    ("question", "line", "lead", "state"),
    [
        (
            "Potassium of 3.1 in DKA: how fast to replace?",
            "--> K+ < 3.5 mmol/L? --> Replace at 10 mmol/hour IV",
            "",
            "fits",
        ),
        (
            "Potassium of 3.1 in DKA: how fast to replace?",
            "--> K+ 3.5-5.0 mmol/L? --> Add 20-30 mmol per liter",
            "",
            "conflicts",
        ),
        (
            "Potassium of 5.4 in DKA: how fast to replace?",
            "--> K+ > 5.0 mmol/L? --> Do not give potassium",
            "",
            "fits",
        ),
        (
            "CrCl is 22 mL/min: enoxaparin dose?",
            "- Dose reduction for CrCl < 30 mL/min: 1 mg/kg once daily.",
            "",
            "fits",
        ),
        (
            "CrCl is 45 mL/min: enoxaparin dose?",
            "- Dose reduction for CrCl < 30 mL/min: 1 mg/kg once daily.",
            "",
            "conflicts",
        ),
        (
            "Creatinine 2.4 times baseline: AKI stage?",
            "| **Stage 2** | 2.0-2.9 times baseline | < 0.5 mL/kg/h |",
            AKI,
            "fits",
        ),
        (
            "Creatinine 2.4 times baseline: AKI stage?",
            "| **Stage 1** | 1.5-1.9 times baseline | < 0.5 mL/kg/h |",
            AKI,
            "conflicts",
        ),
        (
            "EVD draining about 70 mL a day: how often to dose?",
            "| **50-100 mL/day** | Every other day |",
            EVD,
            "fits",
        ),
        (
            "EVD draining about 70 mL a day: how often to dose?",
            "| **>100 mL/day** | Once daily |",
            EVD,
            "conflicts",
        ),
        (
            "Newborn, no umbilical line: epinephrine dose via the ET tube?",
            "| **IV (umbilical vein)** | 0.01-0.03 mg/kg | 1:10,000 |",
            TABLE,
            "conflicts",
        ),
        (
            "Newborn, no umbilical line: epinephrine dose via the ET tube?",
            "| **Endotracheal (ET)** | 0.05-0.1 mg/kg | 1:10,000 |",
            TABLE,
            "fits",
        ),
        (
            "Osteoporosis screening age for men?",
            "- Screen postmenopausal women aged 65 or older",
            "",
            "conflicts",
        ),
        ("Fluticasone dose for a 7-year-old?", "- Fluticasone 100-250 mcg daily in adults", "", "conflicts"),
        (
            "Edoxaban reversal: andexanet dose?",
            "Factor Xa inhibitor: Apixaban <= 5 mg; Bolus: 400 mg IV",
            "",
            "conflicts",
        ),
        ("Cangrelor bolus dose at PCI?", "- Bolus: 0.75 mg/kg IV", "**Bivalirudin** (Class I):", "conflicts"),
        (
            "Basilar artery occlusion: thrombectomy window?",
            "- Anterior circulation LVO within 6 hours: thrombectomy",
            "",
            "conflicts",
        ),
        (
            "What is the first-line drug for AF rate control?",
            "- Beta-blockers or diltiazem are first line",
            "",
            "silent",
        ),
    ],
)
def test_verdicts(question: str, line: str, lead: str, state: str) -> None:
    assert judged(question, line, lead) == state


def test_a_heading_condition_fits_only_where_the_line_says_nothing() -> None:
    question = "72-year-old with STEMI: enoxaparin dose?"
    under = LineContext("- Enoxaparin: 0.75 mg/kg SC every 12 hours", "", ("Elderly (>= 75 years)",))
    found = verdict(question_conditions(question), under)
    assert found.state == "conflicts"
    older = verdict(question_conditions("80-year-old with STEMI: enoxaparin dose?"), under)
    assert older.state == "fits" and older.from_heading and older.tier == 2


def test_a_line_recommending_an_amount_states_no_condition() -> None:
    # "give 1 mg/kg", "recheck at 2 hours": what to do, not whom for
    assert read_values("Recheck K+ at 2 hours after starting insulin", point_values=False) == []
    bands = read_values("eGFR 30-44 mL/min/1.73 m2", point_values=False)
    assert [(b.measure, b.unit, b.low, b.high) for b in bands] == [("egfr", "ml/min", 30.0, 44.0)]


def test_a_question_value_and_a_line_of_another_measure_do_not_meet() -> None:
    # an INR of 6.2 says nothing about a potassium band, and the reverse
    assert (
        judged("INR 6.2 on warfarin, no bleeding: what now?", "--> K+ < 3.5 mmol/L? --> replace") == "silent"
    )


def test_drugs_decide_only_for_an_amount() -> None:
    # "which drug instead of penicillin?": the line's other drug is the answer, not a conflict
    line = "- Vancomycin is an alternative"
    assert judged("Penicillin allergy: which antibiotic instead?", line, asks_amount=False) == "silent"
    assert (
        judged("Penicillin dose for strep throat?", "- Vancomycin 15 mg/kg IV every 12 hours") == "conflicts"
    )


def test_a_number_inside_a_name_does_not_end_the_lines_subject() -> None:
    # "P2Y12" holds digits: the line's drug (ticagrelor) still comes before its first number
    line = "- P2Y12 Inhibitor: Add Ticagrelor (180 mg load, 90 mg BID)"
    assert judged("NSTEMI on prasugrel: maintenance dose?", line) == "conflicts"


def test_a_line_for_a_narrower_age_group_does_not_answer_for_the_wider_one():
    assert (
        judged("What time in range should most adults on CGM reach?", "- Frail older adults: TIR > 50%")
        == "conflicts"
    )
    assert judged("72-year-old on CGM: time in range target?", "- Frail older adults: TIR > 50%") == "fits"


ACS_TITLE = "2023 ESC Guidelines for the management of acute coronary syndromes"
VTE_TITLE = "American Society of Hematology 2020 Guidelines for Management of Venous Thromboembolism"
RENAL_DOSE = (
    "- Dose: 1 mg/kg subcutaneously every 12 hours (reduce to 1 mg/kg once daily if CrCl < 30 mL/min)."
)


@pytest.mark.parametrize(
    ("question", "title", "state"),
    [
        # the line's own CrCl band holds the patient, but its guideline is another disease's
        (
            "Treating a DVT with enoxaparin in a patient whose CrCl is 22 mL/min - what dose?",
            ACS_TITLE,
            "conflicts",
        ),
        (
            "Treating a DVT with enoxaparin in a patient whose CrCl is 22 mL/min - what dose?",
            VTE_TITLE,
            "fits",
        ),
        ("NSTEMI on enoxaparin with a CrCl of 22 mL/min: what dose?", ACS_TITLE, "fits"),
        # a question naming both diseases meets either guideline; one naming none is not judged
        ("AF patient with a PE and CrCl 22 mL/min: enoxaparin dose?", VTE_TITLE, "fits"),
        ("Enoxaparin dose when the CrCl is 22 mL/min?", ACS_TITLE, "fits"),
    ],
)
def test_a_line_under_another_diseases_guideline_conflicts(question: str, title: str, state: str) -> None:
    context = LineContext(RENAL_DOSE, "", (title, "Parenteral Anticoagulation > Enoxaparin"))
    assert verdict(question_conditions(question), context).state == state


def test_indication_words_need_their_abbreviations_in_capitals() -> None:
    from rag.reading.conditions import read

    assert read("pulmonary embolism or DVT").attributes["indication"] == {"venous thromboembolism"}
    assert "indication" not in read("the pe of the patient, a cap of 2 g").attributes


def test_a_phrase_the_drug_dictionary_matches_without_a_name_is_no_drug() -> None:
    # the dictionary matches "milk protein" with no entry name; the reading named it a KeyError
    assert drugs("when to suspect cow's milk protein allergy? try simeticone?") == {"simeticone"}


def test_a_cirrhosis_class_is_no_child():
    assert question_conditions("Child C, 2 admissions with grade II hepatic encephalopathy").ages == ()
    assert question_conditions("Child-Pugh B cirrhosis on lactulose").ages == ()
    assert question_conditions("a febrile child - paracetamol dose?").ages == ((0.0, 17.99),)


def test_a_line_naming_the_asked_drug_is_not_stated_for_its_headings_drug_class():
    # the APA table's citalopram row sits under "Selective Serotonin Reuptake Inhibitors (SSRIs)"
    patient = question_conditions("67 F on citalopram 20 mg - maximum dose?")
    headings = ("Pharmacotherapy", "Selective Serotonin Reuptake Inhibitors (SSRIs)")
    row = LineContext(line="| **Citalopram** | 20 mg/day PO | 20-40 mg/day | 40 mg/day |", headings=headings)
    other = LineContext(
        line="| **Paroxetine** | 20 mg/day PO | 20-50 mg/day | 50 mg/day |", headings=headings
    )
    assert verdict(patient, row).state != "conflicts"
    assert verdict(patient, other).state == "conflicts"
