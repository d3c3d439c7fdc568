"""Quoted answers (rag/reading/quote_model.py): which sentences are quotable, their features, the model
file, and the answer made of them. The relevance model is a keyword stand-in here; the shipped
quote model is measured on the clinician benchmark (docs/results/clinician/)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import ConfigError
from rag.answer.outcomes import lines_reply
from rag.profile import default_profile
from rag.reading.lines import lead_in, line_words, shown_text
from rag.reading.question import ReadQuestion
from rag.reading.quote_model import FEATURES, QUOTE_MODEL, QuoteModel, best_lines, closest_lines, score_lines
from tests.helpers import make_hit, make_turn

# no passage barred by the passage checks: these tests are about the lines
NO_BARS = default_profile().verify.model_copy(
    update={"off": ("subtypes", "asked_for", "populations", "drugs")}
)


def read_lines(question, hits, scorer):
    return score_lines(ReadQuestion.read(question), hits, scorer, NO_BARS)


DOC = (
    "Ascites\n\n**Spironolactone:** Start 100 mg daily, titrate up to 400 mg daily. "
    "Maintain a 100:40 ratio with furosemide. Restrict sodium."
)


class Keywords:
    def __init__(self, *words: str) -> None:
        self.words = words

    def logits(self, question, passages):
        return np.array([sum(w in p for w in self.words) for p in passages], dtype=float)


def cut_hit(offset: int, score: float = 0.8):
    """A passage of DOC from ``offset`` on (chunks overlap, so one may start mid-word)."""
    return make_hit("doc#0", DOC[offset:], score=score, start=offset, end=len(DOC), doc_id="doc")


def test_every_sentence_is_a_quote_with_its_exact_span_and_one_feature_row():
    start = DOC.index("**Spiro")
    found = read_lines("What is the top spironolactone dose?", [cut_hit(start)], Keywords("400 mg"))
    assert found.features.shape == (3, len(FEATURES)) and np.isfinite(found.features).all()
    for q in found.lines:
        assert DOC[q.hit.chunk.start : q.hit.chunk.end] == q.hit.chunk.text and q.source == 1
    assert [q.hit.chunk.text for q in found.lines][1:] == [
        "Maintain a 100:40 ratio with furosemide.",
        "Restrict sodium.",
    ]
    gives = found.features[:, FEATURES.index("number_given")]  # the question asks "what ... dose"
    assert gives.tolist() == [1.0, 1.0, 0.0]


@pytest.mark.parametrize(
    "cut_at",
    [
        "olactone:",  # inside "Spironolactone"
        ", titrate up",  # after a word: ", titrate up to 400 mg daily." has lost its subject
    ],
)
def test_a_first_sentence_cut_mid_sentence_is_not_quotable(cut_at):
    found = read_lines("What dose?", [cut_hit(DOC.index(cut_at))], Keywords("mg"))
    assert [q.hit.chunk.text for q in found.lines] == [
        "Maintain a 100:40 ratio with furosemide.",
        "Restrict sodium.",
    ]


def test_a_chunk_that_starts_where_a_sentence_starts_keeps_it():
    found = read_lines("What ratio?", [cut_hit(DOC.index("Maintain"))], Keywords("ratio"))
    assert [q.hit.chunk.text for q in found.lines] == [
        "Maintain a 100:40 ratio with furosemide.",
        "Restrict sodium.",
    ]


def test_no_sentences_no_quotes():
    empty = read_lines("What dose?", [], Keywords("mg"))
    assert empty.lines == () and best_lines(empty, QuoteModel.shipped(), 3) == []


def test_best_quotes_are_best_first():
    found = read_lines(
        "What is the top spironolactone dose?", [cut_hit(DOC.index("**Spiro"))], Keywords("400")
    )
    model = QuoteModel(
        (1.0,) + (0.0,) * (len(FEATURES) - 1), 0.0, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES)
    )
    best = best_lines(found, model, 3)
    assert [round(q.probability, 3) for q in best] == [0.731, 0.5, 0.5]  # logits 1, 0, 0
    assert "400 mg" in best[0].hit.chunk.text
    assert len(best_lines(found, model, 1)) == 1


def test_a_sentence_two_overlapping_chunks_hold_is_quoted_once():
    start = DOC.index("**Spiro")
    hits = [cut_hit(start), cut_hit(DOC.index("Maintain"))]  # the second chunk repeats two sentences
    found = read_lines("What is the top spironolactone dose?", hits, Keywords("ratio", "sodium"))
    model = QuoteModel(
        (1.0,) + (0.0,) * (len(FEATURES) - 1), 0.0, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES)
    )
    best = best_lines(found, model, 3)
    spans = [(q.hit.chunk.doc_id, q.hit.chunk.start) for q in best]
    assert len(found.lines) == 5 and len(best) == 3 and len(set(spans)) == 3


def test_a_quote_model_for_other_features_is_refused_with_the_command_to_retrain(tmp_path):
    raw = json.loads(QUOTE_MODEL.read_text())
    raw["features"] = ["relevance_logit"]
    path = tmp_path / "quotes.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="medcite train quotes"):
        QuoteModel.read(path)
    with pytest.raises(ConfigError, match="cannot read"):
        QuoteModel.read(tmp_path / "missing.json")


def test_the_shipped_quote_model_was_fitted_on_the_frozen_dev_part_only():
    manifest = json.loads(QUOTE_MODEL.read_text())["manifest"]
    from evals.datasets.clinician import FROZEN_SHA256

    assert manifest["frozen_sha256"] == FROZEN_SHA256 and "dev part only" in manifest["data"]
    assert manifest["command"] == "python -m training.quotes"  # `medcite train quotes` runs it


def test_a_quoted_answer_cites_each_line_to_its_passage_and_span():
    found = read_lines(
        "What is the top spironolactone dose?", [cut_hit(DOC.index("**Spiro"))], Keywords("400")
    )
    quotes = best_lines(found, QuoteModel.shipped(), 2)
    answer = lines_reply(
        make_turn(notes=["earlier note"], timings={"quote": 0.1}), quotes, [cut_hit(0)], confirmed=True
    )
    assert answer.mode == "rag" and answer.text.startswith("The sources say:\n- ")
    assert answer.text.count("[1]") == 2 and "**" not in answer.text  # plain text, each line cited
    assert [c.quote for c in answer.citations] == [q.hit.chunk.text for q in quotes]
    assert all(s.supported and s.markers == (1,) for s in answer.sentences)
    assert answer.notes[0] == "earlier note" and answer.notes[-1].startswith("Quoted word for word")
    assert ".py" not in answer.notes[-1]  # words for people, not module names


LIST = (
    "inhibitor) or 250-300 seconds\n- Additional boluses as needed\n\n"
    "**Bivalirudin** (Class I, LOE: B):\n- **Bolus:** 0.75 mg/kg IV, then 1.75 mg/kg/h\n"
    "- Reduce the infusion if CrCl < 30 mL/min\n\n"
    "| Drug | Low dose | High dose |\n|---|---|---|\n| Fluticasone (DPI) | 100-250 | >500 |\n\n"
    "Prose stands alone. So does this."
)


@pytest.mark.parametrize(
    "fragment, lead",
    [
        ("- **Bolus", "**Bivalirudin** (Class I, LOE: B):"),
        ("- Reduce", "**Bivalirudin** (Class I, LOE: B):"),  # a later item of the same list
        ("| Fluticasone", "| Drug | Low dose | High dose |\n|---|---|---|"),
        ("Prose", ""),
        ("So does", ""),
        ("- Additional", ""),  # its lead-in would be the chunk's first line, which may be cut
    ],
)
def test_a_list_item_or_table_row_carries_the_line_it_hangs_from(fragment, lead):
    assert lead_in(LIST, LIST.index(fragment), cut=True) == lead


def test_a_quote_shows_its_lead_in_and_a_table_row_its_columns_and_cites_only_its_sentence():
    hit = make_hit("doc#0", LIST, score=0.8, start=40, end=40 + len(LIST), doc_id="doc")
    # no drug named: a question naming bivalirudin bars the fluticasone row (another drug's dose)
    found = read_lines("What is the bolus dose?", [hit], Keywords("Bolus", "Fluticasone"))
    by_start = {q.hit.chunk.text.split()[0]: q for q in found.lines}
    bolus, row = by_start["**Bolus:**"], by_start["|"]
    assert by_start["Prose"].lead == "" and line_words(by_start["Prose"]) == "Prose stands alone."
    assert line_words(bolus) == "Bivalirudin (Class I, LOE: B): Bolus: 0.75 mg/kg IV, then 1.75 mg/kg/h"
    assert line_words(row) == "Drug: Fluticasone (DPI); Low dose: 100-250; High dose: >500."
    assert bolus.hit.chunk.section[-1] == "Bivalirudin (Class I, LOE: B):"  # the reader's context too
    assert (
        LIST[bolus.hit.chunk.start - 40 : bolus.hit.chunk.end - 40] == bolus.hit.chunk.text
    )  # the span: the item
    answer = lines_reply(make_turn(), [bolus], [hit], confirmed=True)
    assert "Bivalirudin (Class I, LOE: B): Bolus: 0.75 mg/kg IV" in answer.text


BANDS = (
    "- K+ < 3.5 mmol/L: replace at 10 mmol/hour IV before insulin.\n"
    "- K+ 3.5-5.0 mmol/L: add 20-30 mmol potassium per liter of fluid.\n"
    "- Recheck potassium every 2 hours.\n"
)


def test_a_line_for_another_band_is_never_a_quote_and_the_patients_line_comes_first():
    hit = make_hit("doc#0", BANDS, score=0.8, start=0, end=len(BANDS), doc_id="doc")
    found = read_lines("Potassium of 3.1: how fast do I replace it?", [hit], Keywords("mmol"))
    texts = [q.hit.chunk.text for q in found.lines]
    assert not any("3.5-5.0" in t for t in texts)  # the sibling band conflicts: barred
    fit = {q.hit.chunk.text.split(":")[0]: q.fit for q in found.lines}
    assert fit["K+ < 3.5 mmol/L"].state == "fits" and fit["K+ < 3.5 mmol/L"].tier == 2
    band = found.features[:, FEATURES.index("condition_band")]
    assert band.tolist() == [1.0, 0.0]
    model = QuoteModel(
        (1.0,) + (0.0,) * (len(FEATURES) - 1), 0.0, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES)
    )
    # only lines whose band holds the patient are shown once one is likely
    assert [q.hit.chunk.text[:8] for q in best_lines(found, model, 3)] == ["K+ < 3.5"]
    answer = lines_reply(make_turn(), best_lines(found, model, 3), [hit], confirmed=True)
    assert "stated for the patient asked about: < 3.5 mmol/L" in answer.sentences[0].reasons
    # the sibling band is scored apart: never an answer, last among the closest lines, with why
    assert [q.hit.chunk.text[:8] for q in found.conflicting] == ["K+ 3.5-5"]
    closest = closest_lines(found, model, 3)
    assert [q.hit.chunk.text[:8] for q in closest] == ["K+ < 3.5", "Recheck ", "K+ 3.5-5"]
    shown = lines_reply(make_turn(), closest, [hit], confirmed=False)
    assert shown.outcome == "closest_lines" and shown.mode == "abstained"
    assert shown.text.startswith("medcite could not confirm an answer in the sources. The closest lines:\n- ")
    why = "not for this patient: stated for 3.5-5.0 mmol/L; the question gives 3.1"
    assert why in shown.text.splitlines()[3]
    assert [s.status for s in shown.sentences] == ["closest"] * 3
    assert not any(s.supported for s in shown.sentences)
    assert all(c.support is None for c in shown.citations)  # not verified as an answer
    assert [c.quote for c in shown.citations] == [q.hit.chunk.text for q in closest]  # each its own span


def test_a_condition_only_a_heading_states_is_shown_with_the_line():
    text = "- Enoxaparin 0.75 mg/kg SC every 12 hours, no IV bolus.\n"
    hit = make_hit(
        "doc#0", text, score=0.8, start=0, end=len(text), doc_id="doc", section=("Elderly (>= 75 years)",)
    )
    found = read_lines("80-year-old with STEMI: enoxaparin dose?", [hit], Keywords("mg"))
    assert found.lines[0].fit.from_heading
    assert shown_text(found.lines[0]).startswith("Elderly (>= 75 years): Enoxaparin 0.75 mg/kg")
    assert read_lines("60-year-old with STEMI: enoxaparin dose?", [hit], Keywords("mg")).lines == ()


FLOW = (
    "Check serum potassium on admission\n"
    "  --> K+ < 3.5 mmol/L (hypokalemia)?\n"
    "      --> Replace at 10 mmol/hour IV\n"
    "  --> K+ 3.5-5.0 mmol/L?\n"
    "      --> Add 20-30 mmol potassium per liter of IV fluid\n"
)


def test_a_flowchart_step_hangs_from_the_step_above_and_is_read_with_its_condition():
    assert lead_in(FLOW, FLOW.index("--> Replace"), cut=False) == "--> K+ < 3.5 mmol/L (hypokalemia)?"
    assert lead_in(FLOW, FLOW.index("--> Add"), cut=False) == "--> K+ 3.5-5.0 mmol/L?"
    hit = make_hit("doc#0", FLOW, score=0.8, start=0, end=len(FLOW), doc_id="doc")
    found = read_lines("DKA, potassium 3.1: how fast do I replace it?", [hit], Keywords("mmol"))
    shown = [line_words(q) for q in found.lines]
    assert "K+ < 3.5 mmol/L (hypokalemia)? Replace at 10 mmol/hour IV" in shown
    assert not any("20-30" in text for text in shown)  # the 3.5-5.0 branch's action conflicts
