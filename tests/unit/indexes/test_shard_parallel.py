"""Shards searched by a thread pool: the same top-k as one after another, errors raised, threads stopped.

The corpora are random with a small vocabulary and many duplicate vectors, so ties at the k-th
place are common: the merge must break them by row whichever thread finishes first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import ConfigError
from indexes import shard_pool
from indexes.bm25 import Bm25Params, Bm25sIndex
from indexes.dense.index import DenseIndex, DenseParams
from indexes.shard_pool import ShardPool, pool_size
from indexes.shard_search import ShardedBm25, ShardedDense
from indexes.shards import shard_ranges, write_dense_globals, write_dense_shard, write_shards

N_SHARDS = 8
N_QUERIES = 300
WORDS = [f"w{i}" for i in range(60)]
HANG_S = 60  # a query that has not returned by then is a hang, not slowness


def random_docs(rng: np.random.Generator, n: int) -> list[list[str]]:
    weights = 1.0 / np.arange(1, len(WORDS) + 1)  # Zipf-like: a few common words, a long tail
    weights /= weights.sum()
    return [list(rng.choice(WORDS, size=rng.integers(0, 12), p=weights)) for _ in range(n)]


def bm25_pair(folder: Path, docs: list[list[str]], threads: int) -> tuple[ShardedBm25, ShardedBm25]:
    """The same shards loaded twice: searched by ``threads`` threads, and one after another."""
    ranges = shard_ranges(len(docs), N_SHARDS)
    write_shards(folder, docs, None, ranges, Bm25Params(), None)
    load = lambda t: ShardedBm25.load(folder / "bm25", Bm25Params(), ranges, search_threads=t)  # noqa: E731
    return load(threads), load(1)


def dense_pair(folder: Path, vectors: np.ndarray, threads: int) -> tuple[ShardedDense, ShardedDense]:
    ranges = shard_ranges(len(vectors), N_SHARDS)
    for s, (a, b) in enumerate(ranges):
        write_dense_shard(folder / f"shard-{s:04d}", vectors[a:b], DenseParams(kind="flat"))
    write_dense_globals(folder, DenseParams(kind="flat"), ranges)
    return ShardedDense.load(folder, ranges, search_threads=threads), ShardedDense.load(
        folder, ranges, search_threads=1
    )


def unit_vectors(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    base = rng.standard_normal((n // 3, dim)).astype(np.float32)
    vectors = base[rng.integers(0, len(base), size=n)]  # every vector about three times: tied scores
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()`` in another thread: its result or its exception, or a failure if it hangs."""
    with ThreadPoolExecutor(1) as runner:
        return runner.submit(fn).result(timeout=seconds)


def test_parallel_bm25_gives_the_sequential_and_the_unsharded_top_k(tmp_path):
    rng = np.random.default_rng(7)
    docs = random_docs(rng, 2000)
    parallel, sequential = bm25_pair(tmp_path, docs, threads=4)
    reference = Bm25sIndex.build(docs, Bm25Params())
    for _ in range(N_QUERIES):
        query = list(rng.choice([*WORDS, "unseen"], size=rng.integers(1, 5)))
        k = int(rng.integers(1, 40))
        allowed = rng.random(len(docs)) < 0.7 if rng.random() < 0.3 else None
        rows, scores = parallel.search(query, k, allowed)
        want_rows, want_scores = sequential.search(query, k, allowed)
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_array_equal(scores, want_scores)  # the same float32 bits
        ref_rows, ref_scores = reference.search(query, k, allowed)
        np.testing.assert_array_equal(rows, ref_rows)
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-5)
    assert parallel.pool.running and not sequential.pool.running
    parallel.close()


def test_parallel_flat_shards_give_the_sequential_and_the_unsharded_top_k(tmp_path):
    rng = np.random.default_rng(11)
    vectors = unit_vectors(rng, 3000)
    parallel, sequential = dense_pair(tmp_path, vectors, threads=4)
    single = DenseIndex.build(vectors, DenseParams(kind="flat"))
    for _ in range(N_QUERIES):
        query = vectors[rng.integers(0, len(vectors))] if rng.random() < 0.5 else rng.standard_normal(16)
        k = int(rng.integers(1, 30))
        allowed = rng.random(len(vectors)) < 0.5 if rng.random() < 0.3 else None
        rows, scores = parallel.search(query, k, allowed)
        want_rows, want_scores = sequential.search(query, k, allowed)
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_array_equal(scores, want_scores)
        # one FAISS index orders exactly tied vectors by its own rule (here higher rows first), the
        # merge by row: the same scores, tied rows may differ (untied: test_shards_property.py)
        np.testing.assert_allclose(scores, single.search(query, k, allowed)[1], rtol=1e-5)
    parallel.close()


def test_shards_run_at_the_same_time(tmp_path, monkeypatch):
    """Two shards wait for each other: one after another, the barrier would break."""
    parallel, _ = bm25_pair(tmp_path, random_docs(np.random.default_rng(1), 100), threads=2)
    barrier = threading.Barrier(2, timeout=HANG_S / 2)
    for shard in parallel.shards[:2]:
        real = shard.scores
        monkeypatch.setattr(shard, "scores", lambda ids, real=real: (barrier.wait(), real(ids))[1])
    within(HANG_S, lambda: parallel.search(["w0"], 5))
    parallel.close()


@pytest.mark.parametrize("failing", [0, 5, N_SHARDS - 1])
def test_an_error_in_one_bm25_shard_is_raised_and_the_pool_keeps_working(tmp_path, monkeypatch, failing):
    parallel, sequential = bm25_pair(tmp_path, random_docs(np.random.default_rng(2), 400), threads=3)

    def broken(ids: list[int]) -> np.ndarray:
        raise OSError("shard file unreadable")

    with monkeypatch.context() as patch:
        patch.setattr(parallel.shards[failing], "scores", broken)
        with pytest.raises(OSError, match="shard file unreadable"):
            within(HANG_S, lambda: parallel.search(["w0", "w1"], 10))
    rows, scores = within(HANG_S, lambda: parallel.search(["w0", "w1"], 10))
    want_rows, want_scores = sequential.search(["w0", "w1"], 10)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(scores, want_scores)
    parallel.close()


def test_an_error_in_one_dense_shard_is_raised(tmp_path, monkeypatch):
    vectors = unit_vectors(np.random.default_rng(3), 300)
    parallel, _ = dense_pair(tmp_path, vectors, threads=4)

    def broken(*args: object) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("faiss: bad shard")

    monkeypatch.setattr(parallel.shards[3], "search", broken)
    with pytest.raises(RuntimeError, match="faiss: bad shard"):
        within(HANG_S, lambda: parallel.search(vectors[0], 10))
    parallel.close()


def test_pool_threads_run_faiss_on_one_openmp_thread_and_leave_the_callers_setting(tmp_path, monkeypatch):
    import faiss

    vectors = unit_vectors(np.random.default_rng(4), 200)
    parallel, _ = dense_pair(tmp_path, vectors, threads=2)
    seen: list[tuple[str, int]] = []
    for shard in parallel.shards:
        real = shard.search

        def spy(*args: Any, real: Any = real) -> Any:
            seen.append((threading.current_thread().name, faiss.omp_get_max_threads()))
            return real(*args)

        monkeypatch.setattr(shard, "search", spy)
    before = faiss.omp_get_max_threads()
    parallel.search(vectors[0], 5)
    assert len(seen) == N_SHARDS
    assert all(name.startswith("medcite-shard") and threads == 1 for name, threads in seen)
    assert faiss.omp_get_max_threads() == before
    parallel.close()


def test_close_stops_the_threads_and_the_index_still_answers(tmp_path):
    parallel, sequential = bm25_pair(tmp_path, random_docs(np.random.default_rng(5), 300), threads=4)
    parallel.search(["w1"], 10)
    assert parallel.pool.running
    parallel.close()
    parallel.close()  # twice is harmless
    assert not parallel.pool.running
    np.testing.assert_array_equal(parallel.search(["w1"], 10)[0], sequential.search(["w1"], 10)[0])
    assert not parallel.pool.running  # not made again


def test_pool_size_is_one_thread_per_usable_cpu_at_most_one_per_shard(monkeypatch):
    monkeypatch.setattr(shard_pool, "usable_cpus", lambda: 2)
    assert [pool_size(n, None) for n in (1, 2, 8)] == [1, 2, 2]
    assert [pool_size(8, t) for t in (1, 3, 16)] == [1, 3, 8]
    with pytest.raises(ConfigError, match="at least 1"):
        pool_size(8, 0)


def test_a_one_thread_pool_runs_in_the_callers_thread():
    pool = ShardPool(1)
    assert pool.map(lambda i: (i, threading.current_thread().name), 3) == [
        (i, threading.current_thread().name) for i in range(3)
    ]
    assert not pool.running


def test_by_default_bm25_shards_run_in_turn_and_dense_shards_on_the_cpus(tmp_path: Path) -> None:
    """BM25 shard scoring is shorter than a thread hand-off (measured at 1M); dense is not."""
    from indexes.shard_pool import usable_cpus

    docs = random_docs(np.random.default_rng(3), 40)
    ranges = shard_ranges(len(docs), N_SHARDS)
    write_shards(tmp_path / "lex", docs, None, ranges, Bm25Params(), None)
    assert ShardedBm25.load(tmp_path / "lex" / "bm25", Bm25Params(), ranges).pool.size == 1
    assert ShardedBm25.load(tmp_path / "lex" / "bm25", Bm25Params(), ranges, search_threads=2).pool.size == 2
    vectors = unit_vectors(np.random.default_rng(4), 40)
    for s, (a, b) in enumerate(ranges):
        write_dense_shard(tmp_path / "dense" / f"shard-{s:04d}", vectors[a:b], DenseParams(kind="flat"))
    write_dense_globals(tmp_path / "dense", DenseParams(kind="flat"), ranges)
    dense = ShardedDense.load(tmp_path / "dense", ranges)
    assert dense.pool.size == min(N_SHARDS, usable_cpus())
