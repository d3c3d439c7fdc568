"""Calibration and threshold choice for relevance scores: pure numpy, no model inside.

- :func:`fit_logistic`: ``P(relevant) = sigmoid(X @ w + b)`` by Newton's method (IRLS) with a
  small L2 penalty on ``w``; with features ``[logit, log(rank)]`` it is Platt scaling plus the
  blend with the retrieval rank.
- :func:`reliability`: the reliability diagram's bins and the expected calibration error,
  ``ECE = sum_b (n_b / n) * |mean(p in b) - mean(y in b)|`` over equal-width bins of ``p``.
- :func:`choose_threshold`: the probability threshold with the best F1 of "kept and relevant"
  over the candidates, ties to the higher threshold (fewer, surer passages).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(np.asarray(z, dtype=np.float64) / 2.0)))


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    l2: float = 1e-3,
    iterations: int = 50,
    sample_weight: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Weights and bias of a logistic regression of ``y`` (0/1) on the columns of ``x``;
    ``sample_weight``: each row's weight in the loss (None: 1 each)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(y) or len(y) == 0:
        raise ValueError(f"need x of shape (n, d) and y of length n, got {x.shape} and {y.shape}")
    if y.min() == y.max():
        raise ValueError("calibration needs both relevant and non-relevant examples")
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if w.shape != y.shape or (w < 0).any():
        raise ValueError(f"need one non-negative weight per row, got shape {w.shape}")
    design = np.hstack([x, np.ones((len(x), 1))])
    theta = np.zeros(design.shape[1])
    penalty = np.diag([l2] * x.shape[1] + [0.0]) * w.sum()
    for _ in range(iterations):
        p = sigmoid(design @ theta)
        gradient = design.T @ (w * (p - y)) + penalty @ theta
        hessian = design.T @ (design * (w * p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(theta))
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta[:-1], float(theta[-1])


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 10) -> dict[str, Any]:
    """Per-bin count, mean predicted probability and observed rate; and the ECE."""
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1], right=False), 0, bins - 1)
    rows, ece = [], 0.0
    for b in range(bins):
        inside = which == b
        n = int(inside.sum())
        if n:
            mean_p, rate = float(p[inside].mean()), float(y[inside].mean())
            ece += n / len(p) * abs(mean_p - rate)
            rows.append(
                {
                    "low": float(edges[b]),
                    "high": float(edges[b + 1]),
                    "n": n,
                    "mean_predicted": mean_p,
                    "observed": rate,
                }
            )
    return {"bins": rows, "ece": float(ece), "n": len(p)}


def choose_threshold(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The threshold (one of the scores) maximising F1 of keeping relevant candidates."""
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=np.int64)
    best = {"threshold": 1.0, "f1": -1.0, "precision": 0.0, "recall": 0.0}
    positives = int(y.sum())
    for t in np.unique(p):
        kept = p >= t
        hits = int((kept & (y == 1)).sum())
        precision = hits / max(1, int(kept.sum()))
        recall = hits / max(1, positives)
        f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
        if f1 >= best["f1"]:
            best = {"threshold": float(t), "f1": f1, "precision": precision, "recall": recall}
    return best
