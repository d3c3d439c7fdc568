"""Pure rank-fusion functions over ranked id lists or id->score maps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(runs: Sequence[Sequence[str]], k: float = 60.0) -> dict[str, float]:
    """RRF (Cormack et al. 2009): ``score(d) = sum over runs r of 1 / (k + rank_r(d))``.

    ``rank`` is 1-based; an id absent from a run contributes nothing for it. Ids are compared
    as given (chunk ids), so the same chunk from two retrievers is fused, not duplicated.
    """
    if not (math.isfinite(k) and k >= 0):
        raise ValueError(f"RRF k must be a finite number >= 0 (60 is usual), got {k}")
    fused: dict[str, float] = {}
    for run in runs:
        for rank, doc_id in enumerate(dict.fromkeys(run), start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Items by descending score; ties broken by id so the order is deterministic."""
    nan = [d for d, s in scores.items() if math.isnan(s)]
    if nan:  # NaN compares false both ways, so the order would depend on the input's order
        raise ValueError(f"score of {nan[0]!r} is NaN; the retriever or fusion that produced it is broken")
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Rescale one run's scores to [0, 1]: ``(s - min) / (max - min)``; a constant run maps to 1."""
    if not scores:
        return {}
    bad = [d for d, s in scores.items() if not math.isfinite(s)]
    if bad:  # NaN or inf would turn every score of the run into NaN or 0
        raise ValueError(f"score of {bad[0]!r} is {scores[bad[0]]}; min-max fusion needs finite scores")
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    if math.isinf(high - low):  # scores near the float limits: halve so the difference cannot overflow
        return {d: (s / 2 - low / 2) / (high / 2 - low / 2) for d, s in scores.items()}
    return {d: (s - low) / (high - low) for d, s in scores.items()}


def weighted_score_fusion(runs: Sequence[Mapping[str, float]], weights: Sequence[float]) -> dict[str, float]:
    """``score(d) = sum over runs r of w_r * minmax_r(s_r(d))``; an id absent from a run adds 0.

    Min-max per run puts BM25 scores (unbounded) and cosine similarities on one scale;
    with weights (0.5, 0.5) a chunk first in both runs scores 1.0.
    """
    if len(runs) != len(weights):
        raise ValueError(f"{len(runs)} runs but {len(weights)} weights")
    if not all(math.isfinite(w) for w in weights):
        raise ValueError(f"fusion weights must be finite numbers, got {list(weights)}")
    fused: dict[str, float] = {}
    for run, weight in zip(runs, weights, strict=True):
        for doc_id, score in min_max(run).items():
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * score
    return fused
