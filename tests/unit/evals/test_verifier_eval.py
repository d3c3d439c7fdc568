"""The verifier report: thresholds chosen on dev, reported on test, per kind, for each verifier."""

from __future__ import annotations

import numpy as np

from core.types import Chunk
from evals.datasets.support_set import SupportPair
from evals.studies.verifier import _verifier_report, markdown

PASSAGE = Chunk("p#0", "p", "", (), "bioasq", "", "", 0, 1, "x")


def pairs_and_scores() -> tuple[list[SupportPair], np.ndarray]:
    pairs, scores = [], []
    for split in ("dev", "test"):
        for i, (kind, score) in enumerate(
            [
                ("own", 0.9),
                ("own", 0.7),
                ("own", 0.6),
                ("own", 0.2),
                ("negation", 0.65),
                ("other", 0.1),
                ("number", 0.3),
            ]
        ):
            pairs.append(SupportPair(f"{split}{i}", split, kind, int(kind == "own"), "c", PASSAGE))
            scores.append(score)
    return pairs, np.array(scores)


def test_the_dev_threshold_keeps_recall_on_dev_and_is_reported_on_test() -> None:
    pairs, scores = pairs_and_scores()
    report = _verifier_report(pairs, scores)
    assert report["dev_threshold_for_recall_0.80"] == 0.2  # 0.6 keeps 3 of 4 supported: 0.75 < 0.80
    test = report["test"]
    assert test["at_dev_threshold"]["recall"] == 1.0 and test["at_dev_threshold"]["precision"] == 4 / 6
    assert test["pairs"] == 7 and test["supported"] == 4
    assert test["at_profile_threshold"]["precision"] == 3 / 4  # 0.9, 0.7, 0.6 and the negation 0.65
    assert test["by_kind"]["negation"]["caught"] == 0.0 and test["by_kind"]["other"]["caught"] == 1.0


def test_markdown_has_a_row_per_verifier_and_a_column_per_kind() -> None:
    pairs, scores = pairs_and_scores()
    report = {
        "questions": {"dev": 7, "test": 7},
        "heuristic": _verifier_report(pairs, scores),
        "trained": _verifier_report(pairs, scores[::-1].copy()),
        "seconds": 1.0,
        "environment": {"command": "medcite study verifier", "machine": "x86_64"},
    }
    text = markdown(report)
    assert "| heuristic | 7 |" in text and "| trained model | 7 |" in text
    assert "| negation | 1 |" in text and "trained model (dev t)" in text


def test_the_paired_comparison_resamples_questions_and_keeps_the_point_difference() -> None:
    from evals.studies.verifier import paired_by_question

    qids = ["a", "a", "b", "b", "c", "c", "d", "d"]
    labels = [1, 0, 1, 0, 1, 0, 1, 0]
    a = np.array([0.9, 0.8, 0.7, 0.9, 0.6, 0.1, 0.8, 0.2])  # accepts two negatives at 0.5
    b = np.array([0.9, 0.1, 0.7, 0.2, 0.6, 0.1, 0.8, 0.6])  # accepts one
    out = paired_by_question(qids, labels, a, b, 0.5, 0.5, resamples=200, seed=1)
    assert out["questions"] == 4 and out["pairs"] == 8
    assert out["precision_at_threshold"]["difference"] == 4 / 5 - 4 / 6
    assert out["recall_at_threshold"]["difference"] == 0.0
    low, high = out["precision_at_threshold"]["ci95"]
    assert low <= 4 / 5 - 4 / 6 <= high and high - low > 0
    assert out["recall_at_threshold"]["ci95"] == [0.0, 0.0]  # both accept every positive in any resample
