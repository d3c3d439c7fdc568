"""bench condition-reader: the reader scored against hand labels, per field."""

from __future__ import annotations

from bench.answers.condition_reader import score

EMPTY = {"values": [], "ages": [], "sexes": [], "pregnancy": "", "drugs": [], "attributes": {}}


def test_a_matching_read_scores_one_and_a_missed_value_lowers_recall():
    rows = [
        {
            "id": "Q1",
            "kind": "question",
            "text": "CrCl is 22 mL/min on enoxaparin: what dose?",
            "gold": {
                **EMPTY,
                "values": [{"measure": "crcl", "unit": "ml/min", "low": 22, "high": 22}],
                "drugs": ["enoxaparin"],
            },
        },
        {
            "id": "L1",
            "kind": "line",
            "text": "- Dose reduction for CrCl < 30 mL/min: 1 mg/kg once daily.",
            "lead": "",
            "headings": [],
            # labelled with a second band the reader cannot see: recall 1/2 for values
            "gold": {
                **EMPTY,
                "values": [
                    {"measure": "crcl", "unit": "ml/min", "low": None, "high": 30},
                    {"measure": "age", "unit": "years", "low": 18, "high": None},
                    {"measure": "weight", "unit": "kg", "low": 40, "high": 40},
                ],
            },
        },
    ]
    result = score(rows)
    assert result["values"] == {"precision": 1.0, "recall": round(2 / 3, 3), "found": 2, "labelled": 3}
    assert result["value measures"]["precision"] == 1.0  # crcl both times
    assert result["drugs"] == {"precision": 1.0, "recall": 1.0, "found": 1, "labelled": 1}
    assert result["rows_with_a_difference"] == 1 and result["differences"][0]["id"] == "L1"
