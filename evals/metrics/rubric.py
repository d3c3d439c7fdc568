"""Rubric scores: pure functions over criteria points and met / not-met verdicts.

- Example score: ``clip(sum(points_i * met_i) / sum(points_i for points_i > 0), 0, 1)``; undefined
  (None) without a positive criterion. Negative points (something bad the reply did) subtract.
- Tag score of an example (HealthBench's): an example tag takes the example's score; a criterion
  tag the score of the criteria carrying that tag alone (None when none of them is positive).
- A run's mean over examples with its percentile bootstrap interval (:func:`mean_interval`);
  two arms over the same examples (:func:`paired_scores`): mean(B) - mean(A), its paired bootstrap
  interval, and help (B scored higher) / harm (lower) / tie counts.
- Agreement of two graders on the same criteria (:func:`agreement`): raw agreement and Cohen's
  kappa ``(p_o - p_e) / (1 - p_e)``, ``p_e = p_a * p_b + (1 - p_a) * (1 - p_b)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evals.metrics.stats import paired_bootstrap_mean_diff


def example_score(points: Sequence[float], met: Sequence[bool]) -> float | None:
    """Points met over positive points, clipped to [0, 1]; None when no criterion is positive."""
    if len(points) != len(met):
        raise ValueError(f"{len(points)} criteria but {len(met)} verdicts")
    possible = sum(p for p in points if p > 0)
    if possible <= 0:
        return None
    achieved = sum(p for p, m in zip(points, met, strict=True) if m)
    return min(1.0, max(0.0, achieved / possible))


def tag_scores(
    points: Sequence[float],
    met: Sequence[bool],
    criterion_tags: Sequence[Sequence[str]],
    example_tags: Sequence[str] = (),
) -> dict[str, float]:
    """One example's score per tag (module docstring); tags whose score is undefined are left out."""
    out: dict[str, float] = {}
    overall = example_score(points, met)
    if overall is not None:
        out.update(dict.fromkeys(example_tags, overall))
    for tag in dict.fromkeys(t for tags in criterion_tags for t in tags):
        chosen = [i for i, tags in enumerate(criterion_tags) if tag in tags]
        score = example_score([points[i] for i in chosen], [met[i] for i in chosen])
        if score is not None:
            out[tag] = score
    return out


@dataclass(frozen=True)
class MeanInterval:
    n: int
    mean: float
    low: float
    high: float


def mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> MeanInterval:
    """The mean and its percentile bootstrap interval, resampling the values with replacement."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("need a non-empty list of scores")
    if n_resamples < 1 or not 0.0 < confidence < 1.0:
        raise ValueError("need n_resamples >= 1 and 0 < confidence < 1")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, 1000):  # blocks keep memory at 1000 x n
        stop = min(n_resamples, start + 1000)
        means[start:stop] = x[rng.integers(0, x.size, (stop - start, x.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return MeanInterval(int(x.size), float(x.mean()), float(low), float(high))


@dataclass(frozen=True)
class PairedScores:
    """Arm B against arm A over the same examples: the mean difference B - A with its paired
    bootstrap interval, and how many examples B scored higher (help), lower (harm) or the same."""

    n: int
    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    help: int
    harm: int
    ties: int


def paired_scores(
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedScores:
    """:class:`PairedScores` of two aligned score lists (example i of A is example i of B)."""
    a, b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    diff, low, high = paired_bootstrap_mean_diff(a, b, n_resamples=n_resamples, seed=seed)
    return PairedScores(
        n=int(a.size),
        mean_a=float(a.mean()),
        mean_b=float(b.mean()),
        diff=diff,
        low=low,
        high=high,
        help=int(np.sum(b > a)),
        harm=int(np.sum(b < a)),
        ties=int(np.sum(b == a)),
    )


@dataclass(frozen=True)
class Agreement:
    """Two graders' verdicts on the same criteria: the 2x2 counts, raw agreement and kappa."""

    both: int
    only_a: int
    only_b: int
    neither: int
    raw: float
    kappa: float  # NaN when chance agreement is 1 (both graders gave one verdict throughout)

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither


def agreement(a: Sequence[bool], b: Sequence[bool]) -> Agreement:
    """Raw agreement and Cohen's kappa of verdicts ``a`` and ``b`` (formula in the module docstring)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"need two non-empty verdict lists of equal length (got {len(a)} and {len(b)})")
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    n = x.size
    both, neither = int(np.sum(x & y)), int(np.sum(~x & ~y))
    observed = (both + neither) / n
    p_a, p_b = float(x.mean()), float(y.mean())
    chance = p_a * p_b + (1 - p_a) * (1 - p_b)
    kappa = math.nan if math.isclose(chance, 1.0) else (observed - chance) / (1 - chance)
    return Agreement(both, int(np.sum(x & ~y)), int(np.sum(~x & y)), neither, observed, kappa)
