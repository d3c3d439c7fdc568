"""A lead-in is quoted with the list or table it announces, each item cited to its own span, and
markers are numbered in reading order (rag/answer/outcomes.py, rag/reading/lines.py)."""

from __future__ import annotations

import dataclasses

from rag.answer.outcomes import lines_reply
from rag.reading.lines import announced
from tests.helpers import make_hit, make_turn
from tests.unit.reading.test_quote_model import Keywords, read_lines

QSOFA = (
    "A patient meets the qSOFA criteria if they exhibit at least **two** of the following three "
    "clinical parameters:\n1. **Respiratory Rate:** ≥ 22 breaths per minute\n"
    "2. **Altered Mentation:** Glasgow Coma Scale (GCS) < 15\n3. **Systolic Blood Pressure:** ≤ 100 mmHg"
)
SCALE = (
    "Adjust the insulin infusion by capillary glucose:\n\n"
    "| Glucose (mmol/L) | Insulin rate |\n|---|---|\n| 4.0-7.9 | 1 unit/h |\n| 8.0-11.9 | 2 units/h |\n\n"
    "Recheck glucose every hour."
)


def _hit(chunk_id, text, start=500):
    return make_hit(chunk_id, text, score=0.8, start=start, end=start + len(text), doc_id=chunk_id[:-2])


def _lead_in(found, text):
    return next(line for line in found.lines if line.hit.chunk.text.startswith(text))


def test_a_lead_in_is_shown_with_its_items_each_cited_to_its_span():
    hit = _hit("qsofa#1", QSOFA)
    found = read_lines("What are the qSOFA criteria?", [hit], Keywords("qSOFA criteria"))
    lead = dataclasses.replace(_lead_in(found, "A patient meets"), probability=0.9)
    answer = lines_reply(make_turn(), [lead], [hit], confirmed=True, scored=found)
    assert answer.text.splitlines()[1:] == [
        "- A patient meets the qSOFA criteria if they exhibit at least two of the following three "
        "clinical parameters: [1]",
        "  - Respiratory Rate: ≥ 22 breaths per minute [1]",
        "  - Altered Mentation: Glasgow Coma Scale (GCS) < 15 [1]",
        "  - Systolic Blood Pressure: ≤ 100 mmHg [1]",
    ]
    for citation in answer.citations:  # each its own span of the document
        assert QSOFA[citation.start - 500 : citation.end - 500] == citation.quote
    assert [c.quote[:12] for c in answer.citations] == [
        "A patient me",
        "**Respirator",
        "**Altered Me",
        "**Systolic B",
    ]
    assert [s.probability for s in answer.sentences] == [0.9, None, None, None]
    assert all(s.supported for s in answer.sentences)


def test_a_lead_in_above_a_table_is_shown_with_its_rows_under_the_headers_names():
    hit = _hit("insulin#0", SCALE)
    found = read_lines("How do I adjust the insulin infusion?", [hit], Keywords("insulin"))
    lead = _lead_in(found, "Adjust the insulin")
    text = lines_reply(make_turn(), [lead], [hit], confirmed=True, scored=found).text
    assert text.splitlines()[2:] == [
        "  - Glucose (mmol/L): 4.0-7.9; Insulin rate: 1 unit/h. [1]",
        "  - Glucose (mmol/L): 8.0-11.9; Insulin rate: 2 units/h. [1]",
    ]
    assert "Recheck" not in text  # prose after the table is not one of its items


def test_an_item_for_another_patient_is_left_out_of_its_lead_in():
    text = (
        "Replace potassium by the serum level:\n- K+ < 3.5 mmol/L: replace at 10 mmol/hour IV.\n"
        "- K+ 3.5-5.0 mmol/L: add 20-30 mmol potassium per liter of fluid."
    )
    hit = _hit("k#0", text)
    found = read_lines("Potassium of 3.1: how do I replace it?", [hit], Keywords("potassium"))
    lead = _lead_in(found, "Replace potassium")
    shown = lines_reply(make_turn(), [lead], [hit], confirmed=True, scored=found).text
    assert "< 3.5 mmol/L: replace at 10 mmol/hour" in shown and "3.5-5.0" not in shown


def test_an_item_chosen_on_its_own_is_shown_once_under_its_lead_in():
    hit = _hit("qsofa#1", QSOFA)
    found = read_lines("What are the qSOFA criteria?", [hit], Keywords("qSOFA criteria"))
    lead, item = _lead_in(found, "A patient meets"), _lead_in(found, "**Altered")
    text = lines_reply(make_turn(), [item, lead], [hit], confirmed=True, scored=found).text
    assert text.count("Altered Mentation") == 1 and text.splitlines()[1].startswith("- A patient meets")


def test_markers_are_numbered_in_reading_order_and_the_evidence_follows():
    first, second = _hit("a#0", "Prose one stands alone.", 0), _hit("b#0", "Prose two stands alone.", 0)
    found = read_lines("Which prose?", [first, second], Keywords("Prose"))
    by_text = {line.hit.chunk.text[:9]: line for line in found.lines}
    answer = lines_reply(
        make_turn(),
        [by_text["Prose two"], by_text["Prose one"]],
        [first, second],
        confirmed=True,
        scored=found,
    )
    assert answer.text.splitlines()[1:] == ["- Prose two stands alone. [1]", "- Prose one stands alone. [2]"]
    assert [h.chunk.chunk_id for h in answer.evidence] == ["b#0", "a#0"]  # evidence[n - 1] is [n]'s passage
    assert [c.marker for c in answer.citations] == [1, 2]


def test_a_line_announcing_nothing_has_no_items():
    assert announced("Dose: 5 mg daily.", 0, 5) is None
    assert announced("Criteria:\nProse follows.", 0, 9) is None
    inline = "criteria: 1. RR >= 22; 2. GCS < 15\nNext."
    assert announced(inline, 0, 9) == (9, inline.index("\n"))


ANTICOAGULANTS = (
    "### Dosing\n- **Rivaroxaban:** Standard dose is 20 mg once daily with the evening meal.\n"
    "  - *Dose Reduction:* Reduce to 15 mg once daily if CrCl ≤ 50 mL/min.\n"
    "- **Dabigatran:** Standard dose is 150 mg BID.\n"
    "  - *Dose Reduction:* Reduce to 75 mg BID if CrCl 15–30 mL/min."
)


def test_a_nested_item_is_read_and_shown_under_its_parent_item():
    # "Reduce to 15 mg" alone names no drug: shown bare it could be any anticoagulant's dose, and
    # the condition reader could not see that a dabigatran question is not about it
    hit = _hit("af#0", ANTICOAGULANTS, start=0)
    found = read_lines("Dabigatran dose for CrCl 20 mL/min?", [hit], Keywords("reduce"))
    rivaroxaban = next(line for line in found.conflicting if "15 mg" in line.hit.chunk.text)
    assert rivaroxaban.lead.startswith("- **Rivaroxaban:**")
    assert "rivaroxaban" in rivaroxaban.fit.reasons[0]
    dabigatran = next(line for line in found.lines if "75 mg" in line.hit.chunk.text)
    answer = lines_reply(
        make_turn(), [dataclasses.replace(dabigatran, probability=0.9)], [hit], confirmed=True
    )
    assert answer.text.splitlines()[1] == (
        "- Dabigatran: Standard dose is 150 mg BID. "
        "Dose Reduction: Reduce to 75 mg BID if CrCl 15–30 mL/min. [1]"
    )
