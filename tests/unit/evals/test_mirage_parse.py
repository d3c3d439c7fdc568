"""Strict reading of MIRAGE-style outputs, and MIRAGE's own scoring rule (for reproduction only)."""

from __future__ import annotations

import json

import pytest

from evals.studies.reference.parse import REASONS, choice_text, mirage_letter, mirage_letters, parse_answer

ABCD = ("A", "B", "C", "D")


def out(choice: str, thinking: str = "Reasoning.") -> str:
    return json.dumps({"step_by_step_thinking": thinking, "answer_choice": choice})


@pytest.mark.parametrize(
    ("choice", "letter"),
    [
        ("B", "B"),
        (" C ", "C"),
        ("A. yes", "A"),
        ("(D) Scaphoid fracture", "D"),
        ("Option B", "B"),
        ("answer: C", "C"),
        ("D. None of the above", "D"),
        ("B)", "B"),
        ("[A]", "A"),
    ],
)
def test_one_clear_letter_is_the_answer(choice: str, letter: str) -> None:
    assert parse_answer(out(choice), ABCD) == (letter, None)


@pytest.mark.parametrize(
    ("choice", "reason"),
    [
        ("A/B", "several options"),
        ("B and C", "several options"),
        ("C or D", "several options"),
        ("A, B, C, D", "several options"),
        ("Cannot be determined", "no option letter"),
        ("None of the above", "no option letter"),
        ("N/A", "no option letter"),
        ("", "no option letter"),
        ("I cannot answer", "no option letter"),
        ("All of the above", "no option letter"),
        ("E", "not an option"),
        ("E. Both", "not an option"),
    ],
)
def test_no_clear_letter_is_no_answer_with_a_reason(choice: str, reason: str) -> None:
    assert parse_answer(out(choice), ABCD) == (None, reason)


def test_letters_outside_the_items_options_are_refused() -> None:
    assert parse_answer(out("C. maybe"), ("A", "B")) == (None, "not an option")  # BioASQ is yes/no
    assert parse_answer(out("C. maybe"), ("A", "B", "C")) == ("C", None)


def test_outputs_without_an_answer_field() -> None:
    assert parse_answer(None, ABCD) == (None, "empty output")
    assert parse_answer("  ", ABCD) == (None, "empty output")
    assert parse_answer("Request timed out: HTTPSConnectionPool(...)", ABCD) == (None, "provider error")
    assert parse_answer("'content'", ABCD) == (None, "provider error")
    assert parse_answer("Please provide the options.", ABCD) == (None, "no answer_choice")
    assert {r for r in REASONS} >= {"empty output", "provider error", "no answer_choice"}


def test_broken_json_still_yields_its_answer_field() -> None:
    raw = '{"step_by_step_thinking": "so it is \\"B\\"." "answer_choice": "B"}'  # a comma missing
    assert choice_text(raw) == "B"
    assert parse_answer(raw, ABCD) == ("B", None)
    assert choice_text('x "answer_choice": "A" y "answer_choice": "C"') == "C"  # the last one, as MIRAGE


def test_mirage_rule_defaults_to_a() -> None:
    assert mirage_letter(out("Cannot be determined")) == "A"
    assert mirage_letter(out("C/D")) == "C"
    assert mirage_letter(out("B. no")) == "B"
    assert mirage_letter(out("B. the option D is wrong")) == "D"  # "Option X" is tried before "X."
    assert mirage_letter("no field at all: D is right") == "D"  # ": X" anywhere in the output


def test_mirage_letters_reuse_the_previous_output_for_an_empty_one() -> None:
    rows = [
        {"qid": "q2", "raw": []},
        {"qid": "q1", "raw": [out("C")]},
        {"qid": "q3", "raw": [out("None")]},
        {"qid": "q0", "raw": []},
    ]
    # sorted: q0 (empty, nothing before -> A), q1 C, q2 (empty -> q1's C), q3 (no letter -> A)
    assert mirage_letters(rows) == {"q0": "A", "q1": "C", "q2": "C", "q3": "A"}
