"""The threads that search the shards of one sharded index at the same time.

A query runs one function per shard; the heavy parts (numpy's sums, sorts and memory-mapped reads,
FAISS's scans) release the GIL, so shards are searched in parallel in one process. Each index
object holds one pool, made at its first query and stopped by ``close()``; results come back in
shard order, so the merge sees exactly what a loop over the shards gives. A shard that raises
makes the whole query raise (the other shards' unfinished work is cancelled), never a partial
result.

FAISS parallelises with OpenMP on its own: a pool made with :func:`one_faiss_thread` runs each
worker's FAISS calls on one OpenMP thread (the setting is per thread in OpenMP, so the caller's
own FAISS calls, e.g. an index build, keep every core), and pool threads x 1 stays within the CPUs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from core.errors import ConfigError

T = TypeVar("T")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def pool_size(shards: int, threads: int | None) -> int:
    """Threads for ``shards`` shards: ``threads`` if given, else one per usable CPU, at most one
    per shard; 1 searches the shards one after another in the caller's thread."""
    if threads is not None and threads < 1:
        raise ConfigError(
            f"search threads must be at least 1 (1 searches shards one after another), not {threads}"
        )
    return max(1, min(shards, threads if threads is not None else usable_cpus()))


def one_faiss_thread() -> None:
    """Pool initializer: this worker's FAISS calls use one OpenMP thread."""
    import faiss

    faiss.omp_set_num_threads(1)


class ShardPool:
    """Runs ``fn(0) .. fn(n - 1)`` on up to ``size`` threads and returns the results in order."""

    def __init__(self, size: int, initializer: Callable[[], None] | None = None) -> None:
        self.size = size
        self._initializer = initializer
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        self._lock = threading.Lock()

    def map(self, fn: Callable[[int], T], n: int) -> list[T]:
        futures = self._submit(fn, n) if n > 1 else None
        if futures is None:
            return [fn(i) for i in range(n)]
        try:
            return [future.result() for future in futures]
        finally:  # after an error: shards not yet started are not searched
            for future in futures:
                future.cancel()

    def _submit(self, fn: Callable[[int], T], n: int) -> list[Future[T]] | None:
        """One future per shard on the executor (made on first use); None when sequential or
        closed. Under the lock, so a concurrent ``close`` waits for these instead of refusing them."""
        if self.size <= 1 or self._closed:
            return None
        with self._lock:
            if self._closed:
                return None
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.size, thread_name_prefix="medcite-shard", initializer=self._initializer
                )
            return [self._executor.submit(fn, i) for i in range(n)]

    @property
    def running(self) -> bool:
        """Whether the pool's threads exist (made at the first parallel query, gone after close)."""
        return self._executor is not None

    def close(self) -> None:
        """Stop the threads once the queries in flight are answered; later queries run sequentially."""
        with self._lock:
            executor, self._executor, self._closed = self._executor, None, True
        if executor is not None:
            executor.shutdown(wait=True)
