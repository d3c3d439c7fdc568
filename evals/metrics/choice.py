"""Multiple-choice accuracy with a Wilson confidence interval and explicit no-answer counts.

A record whose ``pred`` is None is wrong and is counted in ``no_answer``, with the reasons
tallied from its ``error``: a parse failure is never turned into a default letter, which
would credit it whenever the gold happens to be that letter.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from evals.records import ItemRecord

UNKNOWN_REASON = "no reason given"


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile: 1.959964 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1) (got {confidence})")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(correct: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion p̂ = correct / n:

    (p̂ + z²/2n ± z·sqrt(p̂(1-p̂)/n + z²/4n²)) / (1 + z²/n).

    Unlike the normal (Wald) interval it stays inside [0, 1] and is not degenerate at 0 or n.
    """
    if n < 1 or not 0 <= correct <= n:
        raise ValueError(f"need 0 <= correct <= n and n >= 1 (got {correct}/{n})")
    z = z_value(confidence)
    p = correct / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    # at 0 and n the bounds are exactly 0 and 1; the formula leaves a rounding residue there
    low = 0.0 if correct == 0 else max(0.0, (centre - half) / denom)
    high = 1.0 if correct == n else min(1.0, (centre + half) / denom)
    return low, high


@dataclass(frozen=True)
class Accuracy:
    n: int
    correct: int
    ci_low: float
    ci_high: float
    no_answer: int  # records with pred None, all counted wrong
    reasons: Mapping[str, int] = field(default_factory=dict)  # error -> count, for the no-answer records

    @property
    def accuracy(self) -> float:
        return self.correct / self.n


def correct_array(records: Iterable[ItemRecord]) -> np.ndarray:
    """1.0 for a correct record, 0.0 otherwise (missing answers included), one per record."""
    values = []
    for record in records:
        if record.gold is None:
            raise ValueError(
                f"record {record.key} has no gold answer; it is not a scored multiple-choice item"
            )
        values.append(1.0 if record.pred == record.gold else 0.0)
    return np.asarray(values, dtype=np.float64)


def accuracy(records: Iterable[ItemRecord], confidence: float = 0.95) -> Accuracy:
    """Accuracy of multiple-choice records with its Wilson interval and the no-answer tally."""
    records = list(records)
    if not records:
        raise ValueError("no records to score")
    correct = int(correct_array(records).sum())
    missing = [r for r in records if r.pred is None]
    reasons = Counter((r.error or UNKNOWN_REASON) for r in missing)
    low, high = wilson_interval(correct, len(records), confidence)
    return Accuracy(
        n=len(records),
        correct=correct,
        ci_low=low,
        ci_high=high,
        no_answer=len(missing),
        reasons=dict(reasons.most_common()),
    )
