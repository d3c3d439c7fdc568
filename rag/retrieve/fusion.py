"""Pure rank-fusion functions over ranked id lists or id->score maps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(runs: Sequence[Sequence[str]], k: float = 60.0) -> dict[str, float]:
    """RRF (Cormack et al. 2009): ``score(d) = sum over runs r of 1 / (k + rank_r(d))``.

    ``rank`` is 1-based; an id absent from a run contributes nothing for it. Ids are compared
    as given (chunk ids), so the same chunk from two retrievers is fused, not duplicated.
    """
    fused: dict[str, float] = {}
    for run in runs:
        for rank, doc_id in enumerate(dict.fromkeys(run), start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Items by descending score; ties broken by id so the order is deterministic."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
