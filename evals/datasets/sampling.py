"""A seeded, stratified sample of benchmark items, for runs that cannot afford the full set.

Every stratum (by default each dataset x gold letter) gets at least one item and the rest of the
sample is spread in proportion to stratum size (largest remainder), so per-dataset accuracy stays
estimable and a sample does not drift towards one answer letter. A sample smaller than the
number of strata (a smoke test of 2 items) is split by size alone. Each stratum draws from its own
random stream seeded by (seed, stratum), so adding a dataset leaves the other datasets' samples
unchanged, and input order does not matter.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")
DEFAULT_STRATA = ("dataset", "answer")


def _stratum(item: object, strata: Sequence[str]) -> tuple[Hashable, ...]:
    # "where present": an item without the attribute (or with None) forms its own stratum value
    return tuple(getattr(item, name, None) for name in strata)


def _largest_remainder(
    weights: dict[tuple[Hashable, ...], int], total: int
) -> dict[tuple[Hashable, ...], int]:
    """Split ``total`` in proportion to ``weights`` (integers, exact), ties by stratum."""
    spare = sum(weights.values())
    if spare == 0:
        return dict.fromkeys(weights, 0)
    quota = {k: total * w // spare for k, w in weights.items()}
    left = total - sum(quota.values())
    for k in sorted(weights, key=lambda k: (-(total * weights[k] % spare), repr(k)))[:left]:
        quota[k] += 1
    return quota


def _allocate(sizes: dict[tuple[Hashable, ...], int], n: int) -> dict[tuple[Hashable, ...], int]:
    """One per stratum, then the rest in proportion to size - 1 (so no quota exceeds its stratum);
    a sample smaller than the number of strata is split by size alone and small strata get none."""
    if n < len(sizes):
        return _largest_remainder(sizes, n)
    extra = _largest_remainder({k: size - 1 for k, size in sizes.items()}, n - len(sizes))
    return {k: 1 + extra[k] for k in sizes}


def sample(items: Sequence[T], n: int, seed: int, strata: Sequence[str] = DEFAULT_STRATA) -> list[T]:
    """``n`` of ``items``, stratified by the attributes named in ``strata``, deterministic in ``seed``.

    Items are identified by ``(dataset, qid)`` when they have them (McqItem, ItemRecord), which
    fixes the order within a stratum before shuffling. Returns the chosen items in input order.
    Raises ValueError for an empty pool, n < 1 (an empty sample), n larger than the pool, or a
    negative seed.
    """
    if not items:
        raise ValueError("nothing to sample from: the item list is empty")
    if n < 1:
        raise ValueError(f"sample size must be at least 1 (got {n})")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer (got {seed})")
    if n > len(items):
        raise ValueError(f"cannot sample {n} items from {len(items)}; ask for at most {len(items)}")
    groups: dict[tuple[Hashable, ...], list[int]] = {}
    for index, item in enumerate(items):
        groups.setdefault(_stratum(item, strata), []).append(index)
    quota = _allocate({k: len(v) for k, v in groups.items()}, n)
    chosen: list[int] = []
    for key, members in groups.items():
        members = sorted(
            members, key=lambda i: repr((getattr(items[i], "dataset", ""), getattr(items[i], "qid", i)))
        )
        rng = np.random.default_rng([seed, zlib.crc32(repr(key).encode())])
        chosen.extend(members[j] for j in rng.permutation(len(members))[: quota[key]])
    return [items[i] for i in sorted(chosen)]
