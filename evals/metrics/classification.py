"""Binary-decision metrics for scores against 0/1 labels: ROC-AUC, precision and recall.

Pure functions over arrays; used to judge the support verifier (``evals.studies.verifier``), where
"positive" means "the passage supports the sentence" and a pair is accepted when its score is at
or above the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Scores = Sequence[float] | np.ndarray
Labels = Sequence[int] | np.ndarray


def _arrays(scores: Scores, labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be 1-d and the same length, got {s.shape} and {y.shape}")
    if not set(np.unique(y).tolist()) <= {0, 1}:
        raise ValueError("labels must be 0 or 1")
    return s, y


def roc_auc(scores: Scores, labels: Labels) -> float:
    """P(score of a random positive > score of a random negative), ties counting half.

    Computed from average ranks (the Mann-Whitney U statistic); ``nan`` without both classes.
    """
    s, y = _arrays(scores, labels)
    positives, negatives = int(y.sum()), int(len(y) - y.sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_scores = s[order]
    i = 0
    while i < len(s):  # average rank over each run of tied scores
        j = i
        while j + 1 < len(s) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    u = ranks[y == 1].sum() - positives * (positives + 1) / 2.0
    return float(u / (positives * negatives))


def precision_recall(scores: Scores, labels: Labels, threshold: float) -> dict[str, float]:
    """Precision, recall and F1 of accepting ``score >= threshold``, with the counts behind them."""
    s, y = _arrays(scores, labels)
    accepted = s >= threshold
    tp = int(np.sum(accepted & (y == 1)))
    fp = int(np.sum(accepted & (y == 0)))
    fn = int(np.sum(~accepted & (y == 1)))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return {
        "threshold": float(threshold),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def threshold_for_recall(scores: Scores, labels: Labels, recall: float) -> float:
    """The highest threshold whose recall is at least ``recall`` (so precision is as high as the
    scores allow at that recall); choose it on a development split, report it on another."""
    s, y = _arrays(scores, labels)
    positive_scores = np.sort(s[y == 1])[::-1]
    if len(positive_scores) == 0:
        raise ValueError("no positive labels: recall is undefined")
    needed = max(1, int(np.ceil(recall * len(positive_scores))))
    return float(positive_scores[needed - 1])
