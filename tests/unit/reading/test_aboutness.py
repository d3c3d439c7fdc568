"""Is a cited passage about the question? The key-term rule of rag/reading/aboutness.py, by hand."""

from __future__ import annotations

import pytest

from core.types import Chunk
from rag.profile import default_profile
from rag.reading.aboutness import (
    asked_for,
    key_terms,
    missing,
    missing_subtypes,
    missing_terms,
    populations,
    stem,
    unnamed_drugs,
    unnamed_populations,
    unspoken,
)
from rag.reading.question import ReadQuestion

EVERY = default_profile().verify  # every key term, every check on


def is_about(question: str, passage: Chunk) -> bool:
    """Whether ``passage`` contains every key term of ``question`` (True when there is none)."""
    return not missing_terms(key_terms(question), passage)


def question_subtypes(question: str) -> tuple[str, ...]:
    return ReadQuestion.read(question).subtypes


PEMBRO = "What is the recommended dose of pembrolizumab for metastatic melanoma?"


def chunk(title: str, section: tuple[str, ...], text: str) -> Chunk:
    return Chunk("d#0", "d", title, section, "test", "https://example.org/d", "CC0", 0, len(text), text)


FAMILIAL_MELANOMA = chunk("Familial melanoma", ("Phenotypes", "Very frequent (80-99%)"), "Melanoma\nNevus")
CUTI = chunk(
    "IDSA Clinical Practice Guideline for the Treatment of Complicated Urinary Tract Infections",
    ("Empiric Antibiotic Selection", "Severe illness"),
    "For complicated urinary tract infection with sepsis, start a carbapenem after cultures.",
)


def test_key_terms_keep_the_subject_and_drop_how_the_question_asks():
    assert key_terms(PEMBRO) == ("pembrolizumab", "metastatic", "melanoma")
    # compounds are split, "first-line", "acute" and "treatment" say nothing of the subject
    assert key_terms("What is the first-line treatment for acute angle-closure glaucoma?") == (
        "angle",
        "closure",
        "glaucoma",
    )
    assert key_terms("Which eGFR range defines CKD stage G3a?") == ("egfr", "ckd", "g3a")
    assert key_terms("Is 2.5 mg of warfarin given to 70 patients?") == ("warfarin",)  # no numbers, units
    # the generic list is compared by stem: "decided" and "scoring" go with "decide" and "score"
    assert key_terms("How is anticoagulation decided, by scoring?") == ("anticoagulation",)


def test_function_words_are_never_a_missing_key_term():
    # a user's protocol states the bleep number without saying "must" (issue 59)
    question = "Who must I bleep, and may I call the outreach team, for a deteriorating patient?"
    assert key_terms(question) == ("bleep", "outreach", "team", "deteriorating")
    assert key_terms("Whom do I bleep for a patient whose NEWS2 is 7?") == ("bleep", "news2")
    line = chunk(
        "Escalation", ("Deteriorating patient",), "Bleep the outreach team on 2222 and call the registrar."
    )
    assert is_about(question, line)


def test_the_issue_14_passage_is_not_about_a_drug_it_never_names():
    assert missing_terms(key_terms(PEMBRO), FAMILIAL_MELANOMA) == ("pembrolizumab", "metastatic")
    assert not is_about(PEMBRO, FAMILIAL_MELANOMA)


def test_a_research_question_framing_is_no_subject_but_its_drug_and_disease_are():
    # BioASQ 11B: the gold snippet says "not superior to placebo", never "effective"
    levosimendan = chunk(
        "PubMed 34536404",
        ("Abstract snippet",),
        "Levosimendan was not superior to placebo in maintaining respiratory function in a broad "
        "population with amyotrophic lateral sclerosis.",
    )
    question = "Is levosimendan effective for amyotrophic lateral sclerosis?"
    assert key_terms(question) == ("levosimendan", "amyotrophic", "lateral", "sclerosis")
    assert is_about(question, levosimendan)
    assert key_terms("What is the mechanism of action of Alzheimer's drug lecanemab?") == (
        "alzheimer",
        "lecanemab",
    )  # (the possessive "s" is no term either)
    # the drug still has to be there: a passage on another drug for ALS is not about it
    riluzole = chunk("PubMed 1", (), "Riluzole prolongs survival in amyotrophic lateral sclerosis.")
    assert missing_terms(key_terms(question), riluzole) == ("levosimendan",)


def test_a_passage_about_the_question_passes_despite_plurals_and_endings():
    # "infections" in the question, "infection" in the text; "Complicated" from the title
    assert is_about("Which carbapenem treats complicated urinary tract infections with sepsis?", CUTI)
    diabetic = chunk(
        "Standards of Care", ("Glycemic Goals",), "An A1C goal below 7% suits most diabetic adults."
    )
    assert is_about("What A1C goal is appropriate for adults with diabetes?", diabetic)


def test_one_measure_spelled_two_ways_counts_once_and_nothing_else_does():
    kdigo = chunk("KDIGO 2024 CKD guideline", ("CKD Staging", "GFR Categories"), "| G3a | 45–59 | Mildly |")
    question = "Which eGFR range defines CKD stage G3a?"
    assert key_terms(question) == ("egfr", "ckd", "g3a")
    assert missing_terms(key_terms(question), kdigo) == ()
    assert missing_terms(("a1c",), chunk("ADA", ("Glycemic goals",), "HbA1c below 7%")) == ()
    assert missing_terms(("egfr",), chunk("KDIGO", ("Albuminuria",), "ACR categories A1-A3")) == ("egfr",)
    assert missing_terms(("gfr",), chunk("KDIGO", ("Staging",), "eGFR falls")) == ()


def test_title_and_section_count_as_part_of_the_passage():
    af = chunk(
        "Guideline for the Management of Atrial Fibrillation",
        ("Anticoagulation",),
        "The CHA2DS2-VASc score is the recommended tool for stroke risk.",
    )
    assert is_about("Which score is used to decide on anticoagulation in atrial fibrillation?", af)
    assert not is_about("Which score is used to decide on anticoagulation in atrial flutter?", af)


def test_a_question_with_no_key_term_cannot_be_checked_and_passes():
    assert key_terms("And in children?") == ()
    assert is_about("And in children?", FAMILIAL_MELANOMA)


def test_known_miss_a_list_that_names_every_key_term_passes():
    # Documented limit: the check only rejects passages that cannot be about the question. A
    # phenotype list naming the disease is let through; the verifier judges the claim itself.
    phenotypes = chunk(
        "Persistent hyperplastic primary vitreous", ("Phenotypes",), "Angle-closure glaucoma\nCataract"
    )
    assert is_about("What is the first-line treatment for acute angle-closure glaucoma?", phenotypes)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("infections", "infection"),
        ("diabetes", "diabetic"),
        ("treated", "treat"),
        ("therapies", "therapy"),
        ("melanomas", "melanoma"),
        ("doses", "dose"),
    ],
)
def test_stem_meets_inflections(a, b):
    assert stem(a) == stem(b)


@pytest.mark.parametrize(("a", "b"), [("prostatitis", "prostate"), ("sepsis", "seps"), ("a1c", "a1")])
def test_stem_keeps_distinct_words_apart(a, b):
    assert stem(a) != stem(b)


# -- what the question asks for (rule 4) ----------------------------------------------------------

BEST_PHENOTYPES = chunk(
    "Best vitelliform macular dystrophy", ("Phenotypes",), "Color vision defect\nMetamorphopsia"
)


def _kinds(question: str) -> list[str]:
    return [kind.name for kind in asked_for(question)]


def test_asked_for_finds_treatment_dose_missed_dose_and_storage_and_nothing_in_symptom_questions():
    assert _kinds("What are the treatments for Best vitelliform macular dystrophy ?") == ["a treatment"]
    assert _kinds(PEMBRO) == ["a dose"]
    assert _kinds("What should I do if I forget a dose of Niacin ?") == ["a dose", "a missed dose"]
    assert _kinds("What should I know about storage and disposal of Ibuprofen ?") == ["storage or disposal"]
    assert _kinds("How is hyperkalemia managed in CKD?") == ["a treatment"]
    assert _kinds("What are the symptoms of Marfan syndrome ?") == []
    assert _kinds("Which score is used to decide on anticoagulation in atrial fibrillation?") == []


def test_a_phenotype_list_does_not_speak_of_treatment_but_a_guideline_does():
    kinds = asked_for("What are the treatments for Best vitelliform macular dystrophy ?")
    assert unspoken(kinds, BEST_PHENOTYPES) == ("a treatment",)
    assert unspoken(kinds, CUTI) == ()  # "Treatment" in its title; "start a carbapenem" alone would not do
    assert unspoken(asked_for("What are the symptoms of Best disease?"), BEST_PHENOTYPES) == ()


def test_a_missed_dose_needs_a_passage_about_missing_one_not_only_a_dose():
    kinds = asked_for("What should I do if I forget a dose of Apixaban ?")
    dosing = chunk("AF guideline", ("Anticoagulation",), "Apixaban 5 mg twice daily; 2.5 mg if two criteria.")
    assert unspoken(kinds, dosing) == ("a missed dose",)
    missed = chunk("Apixaban", (), "If you miss a dose, take it as soon as you remember the same day.")
    assert unspoken(kinds, missed) == ()
    assert unspoken(asked_for("How should I store insulin?"), missed) == ("storage or disposal",)


def test_a_subtype_must_be_named_by_the_passage_in_either_numeral():
    question = "What are the symptoms of Hyperprolinemia type 2 ?"
    assert question_subtypes(question) == ("type 2",)
    type_1 = chunk("Hyperprolinemia type 1", ("Phenotypes",), "Proteinuria\nProlinuria")
    type_ii = chunk("Hyperprolinemia type II", ("Phenotypes",), "Seizure")
    assert missing_subtypes(question_subtypes(question), type_1) == ("type 2",)
    assert missing_subtypes(question_subtypes(question), type_ii) == ()
    assert is_about(question, type_1)  # the key terms alone cannot tell the two apart
    assert question_subtypes("Symptoms of Brachydactyly type C?") == ("type c",)
    assert missing_subtypes(("type c",), chunk("Brachydactyly type A2", (), "Short finger")) == ("type c",)
    assert question_subtypes("Which blood type is universal?") == ()
    # the words that ask for a missed dose or storage leave the subject alone: the kinds check them
    assert key_terms("What should I do if I forget a dose of Niacin ?")[-1] == "niacin"
    assert "storage" not in key_terms("What should I know about storage and disposal of Ibuprofen ?")
    metformin = chunk("Standards of Care in Diabetes", ("Pharmacologic therapy",), "Metformin is first-line.")
    assert missing_subtypes(("type 2",), metformin) == ()  # names no type: its guideline's scope decides


SSC_FLUIDS = chunk(
    "Surviving Sepsis Campaign: International Guidelines for Management of Sepsis and Septic Shock 2021",
    ("Fluid Type for Ongoing Resuscitation", "Crystalloids as First-Line"),
    "The SSC recommends using crystalloids as first-line fluid for resuscitation of adults with sepsis "
    "and septic shock.",
)


def test_a_question_about_children_needs_a_passage_that_names_children_in_any_word():
    question = ReadQuestion.read("What fluids should be given for septic shock in children?")
    assert question.populations == ("children",)
    assert "children" not in question.terms  # a group, not a key term: any word of it will do
    assert missing(question, SSC_FLUIDS, EVERY) == (
        "children",
    )  # fluids, septic, shock are there; children not
    pediatric = chunk("Pediatric Septic Shock Guideline", ("Fluids",), "Give fluids in 10-20 mL/kg boluses.")
    assert missing(question, pediatric, EVERY) == ()


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("What is the dose of enoxaparin for deep vein thrombosis in pregnancy?", ("pregnancy",)),
        ("Can a pregnant woman take labetalol?", ("pregnancy",)),
        ("Is ibuprofen safe while breastfeeding?", ("breastfeeding",)),
        ("How is hyperkalemia treated in newborns?", ("children",)),
        ("Vitamin E dose for a 14-year-old with biopsy-proven NASH?", ("children",)),  # an age under 18
        ("Patient is 6 months old - amoxicillin dose?", ("children",)),
        ("Statin for a 70-year-old with a 10-year ASCVD risk of 12%?", ()),  # an adult; a 10-year risk
        ("What are the qSOFA criteria?", ()),
        ("What is the initial insulin infusion rate for diabetic ketoacidosis in adults?", ()),
    ],
)
def test_populations_a_question_names(question, groups):
    assert populations(question) == groups


def test_a_population_is_met_by_any_word_of_its_group():
    question = ReadQuestion.read("What is the dose of enoxaparin for deep vein thrombosis in pregnancy?")
    pregnant = chunk("VTE guideline", ("Enoxaparin",), "Enoxaparin, pregnant patients: 1 mg/kg twice daily.")
    assert unnamed_populations(question.populations, pregnant) == ()
    assert missing(question, pregnant, EVERY) == ("deep", "vein", "thrombosis")


def test_the_article_a_is_no_key_term_but_a_capital_a_naming_something_is():
    # "a" stood as a key term, so a guideline bullet without the article was "not about" the
    # question: "What is the dose of colchicine for a gout flare ...?" -> "not mentioned: a"
    assert key_terms("What is the dose of colchicine for a gout flare in severe kidney disease?") == (
        "colchicine",
        "gout",
        "flare",
        "kidney",
    )
    assert key_terms("A patient with sepsis needs what?") == ("sepsis",)
    assert key_terms("What causes hepatitis A?") == ("hepatitis", "a")
    assert key_terms("What is vitamin A deficiency?") == ("vitamin", "a", "deficiency")


@pytest.mark.parametrize(
    ("question", "text", "given"),
    [
        ("What is the dose of heparin in STEMI?", "70-100 U/kg IV bolus [1].", True),
        ("What is the dose of epinephrine for neonates?", "Evidence for dosing is weak [1].", False),
        (
            "What is the treatment of asthma exacerbation in pregnancy?",
            "Salbutamol 4-10 puffs by pMDI, repeated every 20 minutes [1].",
            True,
        ),  # a regimen
        ("What is the treatment of asthma exacerbation?", "Oral corticosteroids are recommended [1].", True),
        (
            "What is the recommended dose of hydrocortisone in septic shock?",
            "This represents a change from the 2016 guideline [1].",
            False,
        ),
    ],
)
def test_an_answer_gives_what_the_question_asks_for(question, text, given):
    assert all(kind.given_in(text) for kind in asked_for(question)) is given


def test_a_question_naming_a_drug_needs_a_passage_naming_it():
    # the APA guideline's adolescent fluoxetine dose was shown as closest to a levothyroxine question
    question = ReadQuestion.read("Starting levothyroxine in a frail 80-year-old - what initial dose?")
    fluoxetine = chunk("APA depression", ("Pharmacotherapy",), "- Fluoxetine: starting dose 10 mg/day PO")
    thyroid = chunk("Hypothyroidism", ("Treatment",), "Start L-thyroxine (levothyroxine) at 25 mcg/day.")
    assert unnamed_drugs(question.patient.drugs, fluoxetine) == ("levothyroxine",)
    assert unnamed_drugs(question.patient.drugs, thyroid) == ()
    assert missing(question, fluoxetine, EVERY).count("levothyroxine") == 1  # a key term as well
    checks_only = EVERY.model_copy(update={"about": "off"})  # the subject's words unchecked
    assert missing(question, fluoxetine, checks_only) == ("levothyroxine",)
    assert missing(question, fluoxetine, checks_only.model_copy(update={"off": ("drugs",)})) == ()


def test_one_drug_asked_of_several_is_enough_and_a_question_naming_none_passes():
    question = ReadQuestion.read("Metformin or insulin glargine in pregnancy?")
    insulin = chunk("Diabetes in pregnancy", (), "Insulin is the preferred agent in pregnancy.")
    assert unnamed_drugs(question.patient.drugs, insulin) == ()
    assert unnamed_drugs(ReadQuestion.read("What are the qSOFA criteria?").patient.drugs, insulin) == ()


def test_immune_globulins_are_told_apart_by_their_target():
    # the burns guideline's tetanus immune globulin line was shown as closest to a rabies question
    tetanus = chunk(
        "Burns", ("Prophylaxis",), "Administer tetanus immune globulin (TIG) if history is unknown"
    )
    rabies = ReadQuestion.read("Rabies post-exposure prophylaxis - rabies immune globulin dose?")
    assert unnamed_drugs(rabies.patient.drugs, tetanus) == ("rabies immunoglobulin",)
    burn = ReadQuestion.read("Deep burn, tetanus status unknown - tetanus immune globulin dose?")
    assert unnamed_drugs(burn.patient.drugs, tetanus) == ()
