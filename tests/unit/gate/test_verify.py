"""Support verification logic with the deterministic HashEmbedder and a fake yes/no judge."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import ConfigError
from core.types import Chunk, Hit
from rag.gate.copy_check import changed_words
from rag.gate.dose_scope import unscoped_qualifiers
from rag.gate.support_signals import (
    lexical_coverage,
    listed_in_passage,
    listed_in_passages,
    names_agree,
    numbers_agree,
    passage_units,
    plain,
    quantities,
    quoted_from_passage,
)
from rag.gate.verify import CHECK_PENALTY, SupportVerifier
from rag.generate.citations import parse_answer
from tests.helpers import HashEmbedder

QSOFA = (
    "A patient meets the qSOFA criteria with at least **two** of three parameters.\n"
    "1. **Respiratory Rate:** ≥ 22 breaths per minute\n"
    "2. **Systolic Blood Pressure:** ≤ 100 mmHg"
)
DOAC = "Apixaban standard dose is 5 mg BID. Reduce to 2.5 mg BID in older patients."


def chunk(text: str, *, n: int = 1, section: tuple[str, ...] = (), title: str = "Guide") -> Chunk:
    return Chunk(
        f"g:{n}#0", f"g:{n}", title, section, "test", "https://example.org", "CC0", 0, len(text), text
    )


def hit(c: Chunk, rank: int) -> Hit:
    return Hit(chunk=c, score=1.0, rank=rank, retriever="bm25")


# -- signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "claim,passage,ok",
    [
        ("respiratory rate of 22 or more", QSOFA, True),
        ("respiratory rate of 30 or more", QSOFA, False),
        ("at least 2 of 3 parameters", QSOFA, True),  # number words in the passage count
        ("SBP of 100 mmHg or less", QSOFA, True),
        ("reduce to 2.50 mg", DOAC, True),
        ("reduce to 2.5 mg", "reduce to 2.5 mL", False),  # same number, another unit
        ("rise of 0.3 mg/dL within 48 h", "SCr >= 0.3 mg/dL within 48 hours", True),
        ("platelets below 100,000", "Platelet count < 100000/mm3", True),
        ("80-99% of cases", "seen in 80 to 99 percent", True),
        ("80-95% of cases", "seen in 80 to 99 percent", False),
        ("age 80 years", "Age >= 80", True),  # the passage gives no unit: presence is enough
        ("CHA2DS2-VASc and HbA1c", "no numbers here", True),  # digits inside names are no numbers
        ("no numbers at all", "", True),
        # each number must stand near a word it stands next to in the claim, not anywhere:
        ("aspirin, 200 mg", "aspirin 100 mg daily; 200 patients were enrolled", False),
        ("aspirin, 200 mg daily", "We gave 200 mg of aspirin", True),
        ("OAC when the CHA2DS2-VASc score is 3 or higher", "CHA2DS2-VASc ≥ 3: OAC is recommended", True),
        ("approved for stage 2 disease", "approved for stage 1; 2 trials ongoing", False),
        ("IL-2RA and 10058-F4 block it", "IL-2RA and 10058-F4 inhibit it", True),  # names are words
    ],
)
def test_numbers_agree(claim, passage, ok):
    assert numbers_agree(claim, passage) is ok


@pytest.mark.parametrize(
    "claim,passage,ok",
    [
        ("It is treated with Anakinra [1].", "anakinra is an IL-1 receptor antagonist", True),
        ("It is treated with Tocilizumab.", "anakinra is an IL-1 receptor antagonist", False),
        ("BRD4 binds acetylated histones", "BRD4 binds histones", True),  # the first word is not checked
        ("It binds BRD2", "BRD4 binds histones", False),  # letters and digits: a name
        ("The CHA₂DS₂-VASc score", "CHA2DS2 VASc: 2 points", True),  # Unicode forms, hyphens, spaces
        ("Give it IV or BID", "intravenously, twice daily", True),  # short abbreviations are not checked
        ("Acute Kidney Injury stages", "acute kidney injury (AKI) stages", True),  # case aside
        ("Mutations in PALB2s", "PALB2 mutations", True),  # a plural s
    ],
)
def test_names_agree(claim, passage, ok):
    assert names_agree(claim, passage) is ok


def test_a_missing_name_caps_support_like_a_wrong_number():
    verifier = SupportVerifier(HashEmbedder())
    text = "Anakinra is an IL-1 receptor antagonist used in rheumatoid arthritis."
    swapped = text.replace("Anakinra", "The drug Rilonacept")
    right, wrong = verifier.score_pairs([(text, chunk(text)), (swapped, chunk(text))])
    assert right.checks_ok and not wrong.names_ok and wrong.numbers_ok
    assert wrong.support <= CHECK_PENALTY < verifier.threshold


def test_quantities_canonicalise_numbers_and_units():
    assert quantities("2.50 mg, 1,000 units, 10 percent, 48 hours, 0.5 mL/kg/h, ratio 0.70") == {
        ("2.5", "mg"),
        ("1000", "unit"),
        ("10", "%"),
        ("48", "h"),
        ("0.5", "ml"),
        ("0.7", None),
    }


def test_lexical_coverage_counts_content_tokens_found_in_passage_title_or_section():
    c = chunk(QSOFA, section=("Sepsis-3", "qSOFA Criteria"))
    # wanted: qsofa, need(s), lactate, level(s) -> only qsofa is there
    assert lexical_coverage("qSOFA needs lactate levels", c) == pytest.approx(1 / 4)
    # wanted: sepsis, sepsis3, define(s), qsofa ("3" is left to the number check) -> 3 found
    assert lexical_coverage("Sepsis-3 defines qSOFA", c) == pytest.approx(3 / 4)
    assert lexical_coverage("the 22", c) == 0.0  # nothing but stop words and numbers


def test_passage_units_are_items_with_their_headings_and_the_whole_passage():
    c = chunk(QSOFA, section=("Sepsis-3", "Clinical Use", "qSOFA Criteria"))
    units = passage_units(c)
    assert units[1] == "Clinical Use > qSOFA Criteria: Respiratory Rate: ≥ 22 breaths per minute"
    assert units[-1] == plain(QSOFA) and "**" not in units[-1]
    assert len(units) == 4


# -- scores -----------------------------------------------------------------------------------


def test_a_sentence_copied_from_the_passage_is_fully_supported():
    [score] = SupportVerifier(HashEmbedder()).score_pairs(
        [("Reduce to 2.5 mg BID in older patients.", chunk(DOAC))]
    )
    assert score.cosine == pytest.approx(1.0, abs=1e-5)
    assert (score.semantic, score.lexical, score.numbers_ok) == (pytest.approx(1.0), 1.0, True)
    assert score.support == pytest.approx(1.0)


def test_pieces_of_one_chunk_are_each_read_as_themselves():
    """Sentence selection cuts a chunk into pieces that share its id; each is its own passage."""
    from rag.rerank.sentences import narrowed

    whole = chunk(DOAC)
    first, second = narrowed(whole, 0, 35), narrowed(whole, 36, len(DOAC))
    assert first.chunk_id == second.chunk_id and first.text == "Apixaban standard dose is 5 mg BID."
    on_first, on_second = SupportVerifier(HashEmbedder()).score_pairs(
        [("Apixaban standard dose is 5 mg BID.", first), ("Apixaban standard dose is 5 mg BID.", second)]
    )
    assert on_first.cosine == pytest.approx(1.0, abs=1e-5)
    assert on_second.cosine < 0.9


def test_support_combines_semantic_and_lexical_and_a_wrong_number_caps_it():
    c = chunk(QSOFA, section=("qSOFA Criteria",))
    right, wrong = SupportVerifier(HashEmbedder()).score_pairs(
        [
            ("qSOFA counts a respiratory rate of 22 or more.", c),
            ("qSOFA counts a respiratory rate of 30 or more.", c),
        ]
    )
    for s in (right, wrong):
        assert s.semantic == pytest.approx(min(1.0, max(0.0, (s.cosine - 0.35) / (0.80 - 0.35))))
    assert right.numbers_ok and not wrong.numbers_ok
    assert right.support == pytest.approx(0.6 * right.semantic + 0.4 * right.lexical)
    assert wrong.support == pytest.approx(0.3 * (0.6 * wrong.semantic + 0.4 * wrong.lexical))
    assert wrong.support <= 0.3


def test_verify_scores_sentences_by_their_best_source_and_citations_by_their_mean():
    qsofa, doac = chunk(QSOFA, n=1), chunk(DOAC, n=2)
    sources = [hit(qsofa, 1), hit(doac, 2)]
    raw = "Reduce apixaban to 2.5 mg BID [2]. Respiratory rate 22 counts [1][2]. Sepsis is common."
    embedder = HashEmbedder()
    verifier = SupportVerifier(embedder, threshold=0.5)
    scored = verifier.score_sentences(parse_answer(raw, sources).sentences, sources)
    sentences = [sentence for sentence, _ in scored]
    assert embedder.calls == 1  # every claim and passage unit in one batch

    fresh = SupportVerifier(HashEmbedder())
    a2, b1, b2 = (
        s.support
        for s in fresh.score_pairs(
            [
                ("Reduce apixaban to 2.5 mg BID.", doac),
                ("Respiratory rate 22 counts.", qsofa),
                ("Respiratory rate 22 counts.", doac),
            ]
        )
    )
    assert [s.text for s in sentences] == [
        "Reduce apixaban to 2.5 mg BID.",
        "Respiratory rate 22 counts.",
        "Sepsis is common.",
    ]
    assert [s.markers for s in sentences] == [(2,), (1, 2), ()]
    assert [s.support for s in sentences] == pytest.approx([a2, max(b1, b2), 0.0])
    assert [s.supported for s in sentences] == [True, True, False]  # a2 = 1.0, b1 = 0.62 here
    assert b2 <= 0.3  # "22" is not in the DOAC passage
    assert [by_marker for _, by_marker in scored] == [
        {2: pytest.approx(a2)},
        {1: pytest.approx(b1), 2: pytest.approx(b2)},
        {},
    ]


def test_threshold_decides_supported():
    sources = [hit(chunk(DOAC), 1)]
    parsed = parse_answer("Reduce to 2.5 mg BID in older patients [1].", sources)
    [(strict, _)] = SupportVerifier(HashEmbedder(), threshold=1.0).score_sentences(parsed.sentences, sources)
    [(lenient, _)] = SupportVerifier(HashEmbedder(), threshold=0.0).score_sentences(parsed.sentences, sources)
    assert lenient.supported and lenient.support == pytest.approx(strict.support)


def test_a_marker_only_sentence_has_nothing_to_support():
    sources = [hit(chunk(DOAC), 1)]
    parsed = parse_answer("[1]", sources)
    [(sentence, by_marker)] = SupportVerifier(HashEmbedder()).score_sentences(parsed.sentences, sources)
    assert sentence.markers == (1,) and sentence.support == 0.0 and not sentence.supported
    assert by_marker == {1: 0.0}


@pytest.mark.parametrize("threshold", [-0.1, 1.5])
def test_threshold_outside_unit_interval_is_a_config_error(threshold):
    with pytest.raises(ConfigError, match="threshold"):
        SupportVerifier(HashEmbedder(), threshold=threshold)


def test_score_sentences_gives_each_sentences_support_per_cited_passage():
    qsofa, doac = chunk(QSOFA, n=1), chunk(DOAC, n=2)
    sources = [hit(qsofa, 1), hit(doac, 2)]
    parsed = parse_answer("Reduce apixaban to 2.5 mg BID [2]. Respiratory rate 22 counts [1][2].", sources)
    verifier = SupportVerifier(HashEmbedder())
    scored = verifier.score_sentences(parsed.sentences, sources)
    (_, first), (second_sentence, second) = scored
    assert set(first) == {2} and set(second) == {1, 2}
    assert second_sentence.support == max(second.values())  # its best cited passage
    with pytest.raises(ValueError, match="outside the 1 sources"):
        verifier.score_sentences(parsed.sentences, sources[:1])


HPO = (
    "Gait disturbance\nAbnormality of movement\nIntellectual disability, severe\nChorea\n"
    "Absent fingernail\nNausea and vomiting\nClinodactyly of the 5th finger\n5 mg, twice daily"
)


@pytest.mark.parametrize(
    ("claim", "listed"),
    [
        ("Gait disturbance; Abnormality of movement.", True),
        ("Symptoms of BHC include gait disturbance, abnormal movement and chorea.", False),  # paraphrase
        ("Symptoms of chorea include gait disturbance, abnormality of movement and chorea.", True),
        ("Benign hereditary chorea is characterized by chorea and gait disturbance [1].", True),
        ("Intellectual disability, severe; Chorea", True),  # an entry with a comma, items joined back
        ("Gait disturbance; Seizures", False),  # an item the passage does not list
        ("Gait; Chorea", False),  # part of an entry is not an entry
        ("Symptoms do not include gait disturbance, chorea", False),  # a negation
        ("Symptoms include absent fingernail and chorea", True),  # a negation inside an entry
        ("Symptoms include absent chorea and gait disturbance", False),  # ... not inside another
        ("Chorea, nausea and vomiting", True),  # an entry with an "and", items joined back
        ("Gait disturbance", False),  # one item: not a list, the model decides
        ("Chorea, 2 times daily; gait disturbance", False),  # an item with a number that is no entry
        ("Symptoms include clinodactyly of the 5th finger and chorea.", True),  # a numbered entry, whole
        ("Symptoms include chorea, 5 mg and twice daily.", False),  # "5 mg, twice daily" is never joined
        ("Symptoms of 22q11.2 duplication include chorea and gait disturbance.", True),  # in the name only
        ("Benign hereditary chorea symptoms include chorea and gait disturbance.", True),
        ("Benign hereditary chorea can cause symptoms such as chorea and gait disturbance.", True),
        ("Benign hereditary chorea cannot cause chorea and gait disturbance.", False),
    ],
)
def test_a_list_is_listed_only_when_every_item_is_a_whole_entry_of_the_passage(claim, listed):
    assert listed_in_passage(claim, chunk(HPO, section=("Phenotypes",))) is listed


def test_a_listed_claim_has_full_support_whatever_the_model_says():
    class Doubtful:
        threshold = 0.4

        def probabilities(self, pairs):
            return np.full(len(pairs), 0.1)

    verifier = SupportVerifier(HashEmbedder(), model=Doubtful())  # type: ignore[arg-type]
    pairs = [("Gait disturbance; Chorea", chunk(HPO)), ("Chorea occurs.", chunk(HPO))]
    listed, single = verifier.score_pairs(pairs)
    assert (listed.listed, listed.support) == (True, 1.0)
    assert (single.listed, single.support) == (False, pytest.approx(0.1))


HPO_MORE = "Hypotonia\nSeizure"


@pytest.mark.parametrize(
    ("claim", "listed"),
    [
        ("Symptoms include chorea, gait disturbance, hypotonia and seizure.", True),  # both give items
        ("Symptoms include chorea, gait disturbances, hypotonia and seizures.", True),  # plurals of entries
        ("Symptoms include chorea and gait disturbance.", False),  # the second passage gives none
        ("Symptoms include chorea, hypotonia and ataxia.", False),  # an item neither lists
    ],
)
def test_a_list_may_take_its_items_from_all_the_passages_it_cites(claim, listed):
    chunks = [chunk(HPO, n=1), chunk(HPO_MORE, n=2)]
    assert listed_in_passages(claim, chunks) is listed
    assert not listed_in_passage(claim, chunks[0]) or not listed  # neither alone holds a split list


def test_a_list_split_over_two_cited_passages_is_supported_by_both():
    class Doubtful:
        threshold = 0.4

        def probabilities(self, pairs):
            return np.full(len(pairs), 0.1)

    sources = [hit(chunk(HPO, n=1), 1), hit(chunk(HPO_MORE, n=2), 2)]
    parsed = parse_answer("Symptoms include chorea, gait disturbance, hypotonia and seizure [1][2].", sources)
    verifier = SupportVerifier(HashEmbedder(), model=Doubtful())  # type: ignore[arg-type]
    [(sentence, by_marker)] = verifier.score_sentences(parsed.sentences, sources)
    assert sentence.supported and by_marker == {1: 1.0, 2: 1.0}
    parsed = parse_answer("Symptoms include chorea and gait disturbance [1][2].", sources)
    [(sentence, _)] = verifier.score_sentences(parsed.sentences, sources)
    assert sentence.support == pytest.approx(1.0)  # listed in [1] alone: its own rule
    parsed = parse_answer("Symptoms include chorea and ataxia [1][2].", sources)
    [(sentence, _)] = verifier.score_sentences(parsed.sentences, sources)
    assert not sentence.supported


@pytest.mark.parametrize(
    ("claim", "quoted"),
    [
        ("Systolic Blood Pressure: ≤ 100 mmHg. [1]", True),  # a whole list line, marks and markup aside
        ("Systolic Blood Pressure: ≤ 90 mmHg.", False),  # a changed number is no quotation
        ("Respiratory rate ≥ 22/min", False),  # part of a line
        ("Apixaban standard dose is 5 mg BID.", False),  # not in this passage
    ],
)
def test_a_quotation_of_a_whole_passage_entry_is_supported(claim, quoted):
    assert quoted_from_passage(claim, chunk(QSOFA)) is quoted


def test_a_one_word_quotation_counts_only_for_a_content_word():
    passage = chunk("Pruritus\nNone\nYes")
    assert quoted_from_passage("Pruritus. [1]", passage)
    assert not quoted_from_passage("None.", passage) and not quoted_from_passage("Yes", passage)
    assert not quoted_from_passage("Pruritic.", passage)


# The enoxaparin passage of the default index (ASH 2020 VTE guideline), as the chain cited it for
# "What is the dose of enoxaparin for deep vein thrombosis in pregnancy?".
ENOXAPARIN = chunk(
    "For initial parenteral anticoagulation:\n\n"
    "| Drug | Dose | Route | Frequency |\n|---|---|---|---|\n"
    "| Enoxaparin | 1 mg/kg | Subcutaneous | Every 12 hours |\n"
    "| Enoxaparin (alternative) | 1.5 mg/kg | Subcutaneous | Once daily |\n\n"
    "- Dose reduction for CrCl < 30 mL/min: 1 mg/kg subcutaneously once daily.\n"
    "- Monitoring: Anti-Xa levels may be used in obesity, renal impairment, or pregnancy.",
    title="Guidelines for Management of Venous Thromboembolism: Treatment of Deep Vein Thrombosis",
    section=("Parenteral Anticoagulation", "LMWH"),
)


@pytest.mark.parametrize(
    ("claim", "unscoped"),
    [
        # the renal dose, read as the dose in pregnancy: "pregnancy" stands only in another line
        ("The enoxaparin dose for DVT in pregnancy is 1 mg/kg subcutaneously once daily.", ("pregnancy",)),
        ("In children, enoxaparin is given at 1.5 mg/kg once daily.", ("children",)),
        ("For pregnant women with obesity, enoxaparin is 1 mg/kg every 12 hours.", ("obesity", "pregnancy")),
        # the group stands in a line that holds the dose: tied to it
        ("For CrCl < 30 mL/min, enoxaparin is reduced to 1 mg/kg once daily.", ()),
        ("In renal impairment the dose is 1 mg/kg subcutaneously once daily.", ()),
        # no group, or no dose: nothing to check
        ("The enoxaparin dose for deep vein thrombosis is 1 mg/kg every 12 hours.", ()),
        ("In pregnancy, anti-Xa levels may be used for monitoring.", ()),
    ],
)
def test_a_group_a_dose_claim_names_must_be_tied_to_that_dose(claim, unscoped):
    assert unscoped_qualifiers(claim, ENOXAPARIN) == unscoped


def test_the_title_and_section_tie_a_group_to_every_dose_of_the_passage():
    neonatal = chunk("Epinephrine IV: 0.01 to 0.03 mg/kg.", title="Neonatal Resuscitation", section=("IV",))
    assert unscoped_qualifiers("For newborns, epinephrine is 0.01 mg/kg IV.", neonatal) == ()
    assert unscoped_qualifiers("In pregnancy, epinephrine is 0.01 mg/kg IV.", neonatal) == ("pregnancy",)


def test_a_dose_tied_to_another_group_caps_support_like_a_wrong_number():
    verifier = SupportVerifier(HashEmbedder())
    right, wrong = verifier.score_pairs(
        [
            ("For CrCl < 30 mL/min, enoxaparin is 1 mg/kg subcutaneously once daily.", ENOXAPARIN),
            ("In pregnancy, enoxaparin is 1 mg/kg subcutaneously once daily.", ENOXAPARIN),
        ]
    )
    assert right.checks_ok and right.scope_ok
    assert wrong.numbers_ok and wrong.names_ok and not wrong.scope_ok and not wrong.checks_ok
    assert wrong.support <= CHECK_PENALTY < verifier.threshold


SEPSIS3 = chunk(
    "The Sepsis-3 consensus redefined sepsis to emphasize the dysregulated host response.\n\n"
    "- **Sepsis** is defined as life-threatening organ dysfunction caused by a dysregulated host "
    "response to infection.\n- Saracatinib (AZD0530) is a selective Src kinase inhibitor.",
    title="Sepsis-3",
    section=("Septic Shock",),
)


PRONE = chunk(
    "The SSC recommends using prone positioning for > 12 hours per day for adults with "
    "sepsis-induced moderate-to-severe ARDS. Typical sessions are 16 hours prone, 8 hours supine.",
    title="Surviving Sepsis Campaign 2021",
    section=("Ventilation",),
)


@pytest.mark.parametrize(
    ("passage", "claim", "changes"),
    [
        # the chain's answer to "criteria for septic shock": the sepsis definition, subject swapped
        (
            SEPSIS3,
            "Septic shock is defined as life-threatening organ dysfunction caused by a dysregulated host "
            "response to infection [1].",
            ("septic shock <- sepsis",),
        ),
        (
            SEPSIS3,
            "Sepsis is not defined as life-threatening organ dysfunction caused by a dysregulated host "
            "response to infection.",
            ("not <- (nothing)",),
        ),
        (
            SEPSIS3,
            "The Sepsis-3 consensus redefined sepsis to emphasize the regulated host response.",
            ("regulated <- dysregulated",),
        ),
        # faithful copies, shortened copies and spellings of the same words pass
        (
            SEPSIS3,
            "Sepsis is defined as life-threatening organ dysfunction caused by a dysregulated host "
            "response to infection [1].",
            (),
        ),
        (SEPSIS3, "Sepsis is organ dysfunction caused by a dysregulated host response to an infection.", ()),
        (SEPSIS3, "AZD0530 is a selective Src kinase inhibitor.", ()),  # the copied sentence names it too
        (SEPSIS3, "Saracatinib (AZD0530) is a selective Src kinase inhibitor.", ()),
        (SEPSIS3, "The Sepsis-3 consensus redefined sepsis to emphasise the dysregulated host response.", ()),
        # no sentence of the passage is copied: nothing to compare
        (SEPSIS3, "Organ failure from infection defines sepsis.", ()),
        # another line's number put into a copy of this line: the number check cannot see it
        (
            PRONE,
            "The SSC recommends using prone positioning for > 16 hours per day for adults with "
            "sepsis-induced moderate-to-severe ARDS.",
            ("16 <- 12",),
        ),
        (
            PRONE,
            "The SSC recommends using prone positioning for > 12 hours per day for adults with "
            "sepsis-induced moderate-to-severe ARDS.",
            (),
        ),
        (
            PRONE,
            "The SSC recommends using prone positioning for > 12.0 hours per day for adults with ARDS.",
            (),
        ),
        # a number written in words, or one added, is left to the number check
        (PRONE, "The SSC recommends using prone positioning for more than twelve hours per day in ARDS.", ()),
    ],
)
def test_a_near_copy_of_a_passage_sentence_must_keep_its_words_and_numbers(passage, claim, changes):
    assert changed_words(claim, passage) == changes


def test_a_changed_copy_caps_support_like_a_wrong_number():
    verifier = SupportVerifier(HashEmbedder())
    copied = "Sepsis is defined as life-threatening organ dysfunction caused by a dysregulated host response."
    swapped = copied.replace("Sepsis", "Septic shock")
    right, wrong = verifier.score_pairs([(copied, SEPSIS3), (swapped, SEPSIS3)])
    assert right.copy_ok and right.checks_ok
    assert not wrong.copy_ok and wrong.numbers_ok and wrong.names_ok and wrong.support <= CHECK_PENALTY


def test_one_letter_typos_pass_but_other_words_with_the_same_letters_do_not():
    potassium = chunk("Treat hypokalemia with oral potassium chloride in most patients.")
    assert changed_words("Treat hyperkalemia with oral potassium chloride in most patients.", potassium) == (
        "hyperkalemia <- hypokalemia",
    )
    assert changed_words("Treat hypokalemia with oral potasium chloride in most patients.", potassium) == ()


def test_a_copy_is_compared_with_the_closest_sentence_when_two_hold_its_words():
    both = chunk("Sepsis is not a shock state of the circulation. Sepsis is a shock state of the circulation")
    assert changed_words("Sepsis is a shock state of the circulation.", both) == ()
    assert changed_words("Sepsis is not a shock state of the circulation.", both) == ()
