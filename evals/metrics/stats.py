"""Paired statistics for two runs over the same items (closed-book vs RAG, ablation A vs B).

Pure functions over 0/1 correctness arrays aligned by item. Items are paired by
``(dataset, qid)`` with :func:`pair`, which reports items present in only one run rather than
dropping them silently and refuses runs that disagree on an item's gold answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from evals.metrics.choice import correct_array
from evals.records import ItemRecord


@dataclass(frozen=True)
class Paired:
    """Records of A and B aligned by key (sorted), plus the keys each run has alone."""

    a: tuple[ItemRecord, ...]
    b: tuple[ItemRecord, ...]
    only_a: tuple[tuple[str, str], ...]
    only_b: tuple[tuple[str, str], ...]

    @property
    def n(self) -> int:
        return len(self.a)


def _by_key(records: Iterable[ItemRecord], side: str) -> dict[tuple[str, str], ItemRecord]:
    out: dict[tuple[str, str], ItemRecord] = {}
    for record in records:
        if record.key in out:
            raise ValueError(
                f"run {side} has item {record.key} twice; deduplicate its records.jsonl (e.g. a resumed run)"
            )
        out[record.key] = record
    return out


def pair(records_a: Iterable[ItemRecord], records_b: Iterable[ItemRecord]) -> Paired:
    """Align two runs by ``(dataset, qid)``; unmatched keys are returned, not lost."""
    a, b = _by_key(records_a, "A"), _by_key(records_b, "B")
    shared = sorted(a.keys() & b.keys())
    for key in shared:
        if a[key].gold != b[key].gold:
            raise ValueError(
                f"runs disagree on the gold answer of {key} ({a[key].gold!r} vs {b[key].gold!r}); "
                "they were made on different versions of the benchmark"
            )
    return Paired(
        a=tuple(a[k] for k in shared),
        b=tuple(b[k] for k in shared),
        only_a=tuple(sorted(a.keys() - b.keys())),
        only_b=tuple(sorted(b.keys() - a.keys())),
    )


def mcnemar_exact(only_a_right: int, only_b_right: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs against 1/2.

    With d = b + c discordant pairs and m = min(b, c): p = min(1, 2 · Σ_{i=0..m} C(d, i) / 2^d).
    Computed with exact integers (math.comb), so it is right for thousands of pairs too.
    No discordant pair means no evidence of a difference: p = 1.
    """
    if only_a_right < 0 or only_b_right < 0:
        raise ValueError("discordant counts must be non-negative")
    d = only_a_right + only_b_right
    if d == 0:
        return 1.0
    m = min(only_a_right, only_b_right)
    tail = Fraction(sum(math.comb(d, i) for i in range(m + 1)), 2**d)
    return float(min(Fraction(1), 2 * tail))


def _check_paired(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"need two non-empty 1-D arrays of equal length (got {a.shape} and {b.shape})")


def _paired_differences(
    values_a: np.ndarray, values_b: np.ndarray, n_resamples: int, confidence: float
) -> np.ndarray:
    """b_i - a_i, after checking the pair and the bootstrap's parameters (both bootstraps)."""
    a, b = np.asarray(values_a, dtype=np.float64), np.asarray(values_b, dtype=np.float64)
    _check_paired(a, b)
    if n_resamples < 1 or not 0.0 < confidence < 1.0:
        raise ValueError("need n_resamples >= 1 and 0 < confidence < 1")
    return b - a


def _percentile_interval(
    diff: np.ndarray, means: np.ndarray, confidence: float
) -> tuple[float, float, float]:
    """The observed mean difference and the percentile interval of the resampled means."""
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(diff.mean()), float(low), float(high)


def paired_bootstrap_diff(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """acc(B) - acc(A) and its percentile bootstrap interval, resampling items (pairs kept together).

    The per-item difference d_i = b_i - a_i takes only the values -1, 0 and 1, and the mean of a
    resample depends only on how many of each it drew, so each resample is one multinomial draw
    over those three counts: the same distribution as resampling indices, in O(n_resamples).
    """
    diff = _paired_differences(correct_a, correct_b, n_resamples, confidence)
    n = diff.size
    counts = np.array([np.sum(diff < 0), np.sum(diff == 0), np.sum(diff > 0)], dtype=np.float64)
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=n_resamples)
    return _percentile_interval(diff, (draws[:, 2] - draws[:, 0]) / n, confidence)


def paired_bootstrap_mean_diff(
    values_a: np.ndarray,
    values_b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """mean(B) - mean(A) of a per-query metric (nDCG, recall) and its percentile bootstrap interval.

    Resamples queries with replacement, the two conditions' values kept together:
    d_i = b_i - a_i, and each resample's statistic is the mean of n draws of d.
    """
    diff = _paired_differences(values_a, values_b, n_resamples, confidence)
    rng = np.random.default_rng(seed)
    means = np.array([diff[rng.integers(0, diff.size, diff.size)].mean() for _ in range(n_resamples)])
    return _percentile_interval(diff, means, confidence)


@dataclass(frozen=True)
class PairedCounts:
    """The 2x2 table of a paired comparison: both right, A only (harm), B only (help), both wrong."""

    both: int
    only_a: int
    only_b: int
    neither: int

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def harm_rate(self) -> float:
        """Share of all paired items that A got right and B got wrong (closed-book right, RAG wrong)."""
        return self.only_a / self.n

    @property
    def help_rate(self) -> float:
        """Share of all paired items that B got right and A got wrong."""
        return self.only_b / self.n

    @property
    def harm_given_a_right(self) -> float:
        """Of the items A got right, the share B got wrong (NaN when A got none right)."""
        right = self.both + self.only_a
        return self.only_a / right if right else math.nan


def paired_counts(correct_a: np.ndarray, correct_b: np.ndarray) -> PairedCounts:
    a, b = np.asarray(correct_a) > 0, np.asarray(correct_b) > 0
    _check_paired(a, b)
    return PairedCounts(
        both=int(np.sum(a & b)),
        only_a=int(np.sum(a & ~b)),
        only_b=int(np.sum(~a & b)),
        neither=int(np.sum(~a & ~b)),
    )


def correctness(paired: Paired) -> tuple[np.ndarray, np.ndarray]:
    """0/1 arrays of A and B over the paired items (a missing answer is wrong)."""
    return correct_array(paired.a), correct_array(paired.b)
