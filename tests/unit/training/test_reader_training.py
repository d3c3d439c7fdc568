"""The line reader's training: its pairs, folds, calibration and thresholds (training/reader*.py).

The model itself is trained by ``medcite train reader`` (hours on CPU) and measured on the
clinician benchmark (docs/results/clinician/reader.md); these tests hold the pieces that decide
what it learns from and how its thresholds are chosen.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from core.types import Hit
from evals.datasets.clinician import ClinicianItem, load_training
from tests.helpers import make_chunk
from training.reader import binomial_tail, calibrate, floor_of, folds_of, learn_then_test, risk_curve, shown
from training.reader_lines import Guidelines, candidate_lines, training_lines

DOC = (
    "Before insulin:\n"
    "- K+ < 3.5 mmol/L: replace at 10 mmol/hour IV before insulin.\n"
    "- K+ 3.5-5.0 mmol/L: add 20-30 mmol potassium per liter of fluid.\n"
    "- Recheck potassium every 2 hours.\n"
)


def item(**fields) -> ClinicianItem:
    base = {
        "qid": "TR-A-dka-001",
        "kind": "answerable",
        "question": "K 3.1 in DKA, how fast do I replace it?",
        "group": "dka",
        "guideline": "dka",
        "quote": "K+ < 3.5 mmol/L: replace at 10 mmol/hour IV before insulin.",
        "siblings": ("K+ 3.5-5.0 mmol/L: add 20-30 mmol potassium per liter of fluid.",),
    }
    return ClinicianItem(**{**base, **fields})


@pytest.fixture
def guidelines(tmp_path) -> Guidelines:
    (tmp_path / "dka").mkdir()
    (tmp_path / "dka" / "insulin.md").write_text(DOC, encoding="utf-8")
    return Guidelines(tmp_path)


def chunk_of_doc(start: int = 0):
    text = DOC[start:]
    return make_chunk(
        "open-medicine:dka/insulin#0",
        text,
        doc_id="open-medicine:dka/insulin",
        title="DKA",
        section=("Potassium",),
        start=start,
        end=len(DOC),
    )


def test_a_line_is_labelled_by_where_it_stands_in_the_guidelines_file(guidelines):
    chunk = chunk_of_doc()
    hit = Hit(chunk=chunk, score=0.1, rank=1, retriever="hybrid")
    lines = candidate_lines(item(), [hit], guidelines, lambda doc: [chunk])
    kinds = {line.text.split("\n")[-1][:8]: line.kind for line in lines}
    assert kinds == {
        "Before i": "same_chunk",
        "K+ < 3.5": "answer",
        "K+ 3.5-5": "sibling",
        "Recheck ": "same_chunk",
    }
    # each item read after the line it hangs from, under the passage's headings
    assert all(
        line.text.startswith("DKA > Potassium\nBefore insulin:\n") for line in lines if "K+" in line.text
    )
    near = candidate_lines(item(kind="near", quote=None), [hit], guidelines, lambda doc: [chunk])
    assert not any(line.label for line in near)


def test_the_chunk_holding_the_answer_is_read_even_when_retrieval_missed_it(guidelines):
    chunk = chunk_of_doc()
    other = make_chunk(
        "open-medicine:x/y#0", "Unrelated line about something else.", doc_id="open-medicine:x/y"
    )
    hits = [Hit(chunk=other, score=0.1, rank=1, retriever="hybrid")]
    lines = candidate_lines(
        item(), hits, guidelines, lambda doc: [chunk] if doc.endswith("dka/insulin") else []
    )
    assert [line.rank for line in lines if line.kind == "answer"] == [2]  # after the retrieved one


def test_training_keeps_every_answer_and_sibling_and_caps_the_other_negatives(guidelines):
    chunk = chunk_of_doc()
    lines = candidate_lines(item(), [Hit(chunk, 0.1, 1, "hybrid")], guidelines, lambda doc: [chunk])
    kept = training_lines(lines, negatives=1, rng=random.Random(0))
    assert sorted(line.kind for line in kept) == ["answer", "sibling"]  # the cap is spent on the sibling
    assert {line.kind for line in training_lines(lines, 5, random.Random(0))} == {
        "answer",
        "sibling",
        "same_chunk",
    }
    assert "same_chunk" not in {line.kind for line in training_lines(lines, 5, random.Random(0), 0)}


def test_folds_split_the_training_folders_without_overlap_and_in_balance():
    items = load_training()
    folds = folds_of(items, 3)
    assert set().union(*folds) == {i.group for i in items} and sum(len(f) for f in folds) == len(
        set().union(*folds)
    )
    sizes = [sum(1 for i in items if i.group in fold) for fold in folds]
    assert max(sizes) - min(sizes) <= 0.05 * len(items)


def test_what_a_question_is_told_at_a_threshold():
    p = np.array([0.9, 0.8, 0.2])
    assert shown(p, ["answer", "other", "sibling"], 0.5) == "right"
    assert shown(p, ["answer", "sibling", "other"], 0.5) == "wrong"  # a sibling shown beside it
    assert shown(p, ["other", "answer", "other"], 0.5) == "wrong"
    assert shown(p, ["answer", "other", "other"], 0.95) == "none"


def test_the_binomial_p_value_and_learn_then_test_stop_at_the_first_threshold_not_supported():
    assert binomial_tail(0, 10, 0.05) == pytest.approx(0.95**10)
    assert binomial_tail(1, 2, 0.5) == pytest.approx(0.75)
    curve = [
        {"threshold": 0.9, "answered": 100, "p_value": 0.005},
        {"threshold": 0.8, "answered": 200, "p_value": 0.05},
        {"threshold": 0.7, "answered": 300, "p_value": 0.3},  # not supported: stop here
        {"threshold": 0.6, "answered": 400, "p_value": 0.01},  # never reached
    ]
    assert learn_then_test(curve) == 0.8
    assert learn_then_test([{"threshold": 0.9, "answered": 5, "p_value": 0.5}]) == 1.0  # none supported


def _row(logits, kinds, answerable=True):
    return {"logits": logits, "kinds": kinds, "answerable": answerable}


def test_calibration_and_the_risk_curve_read_the_held_out_lines():
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(200):
        good = rng.normal(2.0, 1.0)
        rows.append(
            _row([good, rng.normal(-2.0, 1.0), rng.normal(-2.0, 1.0)], ["answer", "sibling", "other"])
        )
    a, b = calibrate(rows)
    assert a > 0  # a higher logit is more likely an answer
    curve = risk_curve(rows, a, b, [0.5, 0.9])
    assert curve[0]["answered"] >= curve[1]["answered"] and curve[1]["right_among_shown"] >= 0.9
    assert all(0.0 <= row["p_value"] <= 1.0 for row in curve)
    assert 0.0 < floor_of(rows, a, b) < 1.0


def test_the_p_value_is_that_of_too_many_wrong_among_those_answered():
    # 200 answered with 4 wrong: is the error rate over 5%? unlikely, p = P(Bin(200, .05) <= 4)
    p = binomial_tail(4, 200, 0.05)
    assert p == pytest.approx(sum(math.comb(200, j) * 0.05**j * 0.95 ** (200 - j) for j in range(5)))
    assert p < 0.1
