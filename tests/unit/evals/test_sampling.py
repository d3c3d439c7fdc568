"""sample(): seeded, stratified by dataset and gold letter, every stratum represented, clear errors."""

from __future__ import annotations

from collections import Counter

import pytest

from core.paths import Paths
from evals.datasets import load_mcq, sample
from evals.types import McqItem


def items() -> list[McqItem]:
    out = []
    for dataset, answers in (("medqa", "AAAAAABBBBCC"), ("bioasq", "AAAAAAAAB")):
        for i, answer in enumerate(answers):
            out.append(McqItem(dataset, f"{dataset}-{i:02d}", "q?", {"A": "a", "B": "b", "C": "c"}, answer))
    return out


def test_same_seed_same_sample_whatever_the_input_order() -> None:
    pool = items()
    first = sample(pool, 10, seed=3)
    assert [i.key for i in first] == [i.key for i in sample(pool, 10, seed=3)]
    assert {i.key for i in sample(list(reversed(pool)), 10, seed=3)} == {i.key for i in first}
    assert any({i.key for i in sample(pool, 10, seed=s)} != {i.key for i in first} for s in range(4, 9))
    assert [pool.index(i) for i in first] == sorted(pool.index(i) for i in first)  # input order kept


def test_every_stratum_gets_one_and_the_rest_goes_by_size() -> None:
    chosen = sample(items(), 10, seed=0)
    strata = Counter((i.dataset, i.answer) for i in chosen)
    # 5 strata get 1 each; the other 5 split by size - 1 = (5, 3, 1, 7, 0) of 16
    assert strata == {
        ("medqa", "A"): 3,
        ("medqa", "B"): 2,
        ("medqa", "C"): 1,
        ("bioasq", "A"): 3,
        ("bioasq", "B"): 1,
    }
    assert Counter(i.dataset for i in sample(items(), 7, seed=0, strata=("dataset",))) == {
        "medqa": 4,
        "bioasq": 3,
    }
    assert len(sample(items(), len(items()), seed=0)) == len(items())


def test_a_sample_smaller_than_the_strata_goes_by_size() -> None:
    # sizes 6, 4, 2, 8, 1 of 21: 4 * size / 21 -> floors 1, 0, 0, 1, 0; remainders favour medqa B, bioasq A
    strata = Counter((i.dataset, i.answer) for i in sample(items(), 4, seed=0))
    assert strata == {("medqa", "A"): 1, ("medqa", "B"): 1, ("bioasq", "A"): 2}
    assert len(sample(items(), 1, seed=5)) == 1


def test_adding_a_dataset_leaves_the_others_sample_unchanged() -> None:
    pool = items()
    medqa_alone = [i for i in pool if i.dataset == "medqa"]
    alone = {i.key for i in sample(medqa_alone, 6, seed=1)}
    together = {i.key for i in sample(pool, 15, seed=1) if i.dataset == "medqa"}
    # quotas: alone A 3, B 2, C 1; together A 4, B 3, C 2. Each stratum draws from its own stream,
    # so the larger quota takes a longer prefix of the same permutation.
    assert len(alone) == 6 and len(together) == 9
    assert alone < together


@pytest.mark.parametrize(("n", "message"), [(0, "at least 1"), (22, "at most 21")])
def test_too_small_or_too_large_samples_are_refused(n: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sample(items(), n, seed=0)
    with pytest.raises(ValueError, match="empty"):
        sample([], 1, seed=0)
    with pytest.raises(ValueError, match="non-negative"):
        sample(items(), 5, seed=-1)


def test_real_mirage_sample_of_200() -> None:
    chosen = sample(load_mcq("mirage", Paths.from_env()), 200, seed=0)
    sizes = Counter(i.dataset for i in chosen)
    assert sum(sizes.values()) == 200 and set(sizes) == {"mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq"}
    assert sizes["medmcqa"] > sizes["medqa"] > sizes["bioasq"]
    assert Counter(i.answer for i in chosen if i.dataset == "pubmedqa")["C"] >= 1  # "maybe" is represented
