"""``medcite eval run --engine ray``: the items of a run fan out to Ray actors; the driver keeps the run.

Each :class:`EvalWorker` actor builds its generator once and opens a condition's pipeline at its
first item of that condition; it answers one item at a time with the local engine's functions
(``evals.engine.runner``, ``evals.engine.answers_run``), so a record is the same wherever it was
made. The driver alone:

- writes the run directory, appending each record as it arrives (a kill loses only the items in
  flight); done keys are skipped on resume exactly as in a local run;
- writes the generation cache: workers read the driver's sqlite file through a :class:`CacheReader`
  actor on the driver's node (WAL allows it) and return their new entries with each record, which
  the driver stores first; a rerun of a finished run makes no model call;
- retries: a dead actor's in-flight items go to the others at once (Ray's ``max_task_retries``
  stays 0) and a record is written once per key, so no item is lost or duplicated; an item's own
  failure is a record with the error, anything else stops the run (rerun to resume);
- restarts: Ray restarts a dead actor (``RayEngine.max_restarts`` times); once it answers a
  ``ping`` it gets items again. With no worker left, or none back after ``restart_wait_s``, the
  run stops with an error that says to rerun (finished records are kept).

With a server pool (``--server URL`` repeated; an OpenAI-compatible generator), each item goes to
the server with the fewest in flight, at most ``per_server`` each; the pool counts as one model
for the cache (:func:`pool_fingerprint`). Retrieval conditions stay in the driver.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

from core.errors import ConfigError, MedciteError
from core.paths import Paths
from evals.engine.conditions import ConditionStats
from evals.engine.config import EvalConfig, condition_profile
from evals.engine.generation_cache import GENERATIONS, CachingGenerator, DiskCachedGenerator
from evals.engine.rundir import RunDir
from evals.records import ItemRecord, write_records
from indexes.sqlite_cache import JSON, SqliteCache
from rag.protocols import Generator

DEFAULT_WORKER_CPUS = 0.8  # below 1: leaves Ray (and the driver) a little CPU on every node
POOL_WORKER_CPUS = 0.25  # a worker of a server pool mostly waits on HTTP
_now = time.monotonic  # the restart wait's clock (module-level: a test replaces this, not time's)


@dataclass(frozen=True)
class RayEngine:
    """How ``--engine ray`` runs: ``workers`` actors on the cluster at ``address`` (None: Ray's own
    rule, see ``core.ray_runtime``), optionally sending model calls to ``servers``.

    ``max_restarts``: how many times Ray restarts each worker actor that dies (its node lost, its
    process killed), so the pool keeps its size; 0: never (its items go to the others). The bound
    stops a worker that dies on every item (a model too big for its node) from restarting forever.
    ``restart_wait_s``: how long the run waits, with no worker alive, for a restarted one to answer
    (the cluster may have no node with room for it) before it stops (rerun to resume)."""

    workers: int = 2
    address: str | None = None
    servers: tuple[str, ...] = ()
    per_server: int = 1  # items in flight per server
    worker_cpus: float | None = None  # None: DEFAULT_WORKER_CPUS, or POOL_WORKER_CPUS with servers
    max_restarts: int = 3
    restart_wait_s: float = 600.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {self.workers}")
        if self.per_server < 1:
            raise ConfigError(f"--per-server must be at least 1, got {self.per_server}")
        if self.max_restarts < 0:
            raise ConfigError(f"--max-restarts must be 0 or more, got {self.max_restarts}")
        if not self.restart_wait_s > 0:
            raise ConfigError(f"restart_wait_s must be positive, got {self.restart_wait_s}")

    @property
    def cpus(self) -> float:
        if self.worker_cpus is not None:
            return self.worker_cpus
        return POOL_WORKER_CPUS if self.servers else DEFAULT_WORKER_CPUS


@dataclass(frozen=True)
class Task:
    """One item of one condition: ``kind`` is ``"mcq"``, ``"answers"`` or ``"rubric"``; ``answer`` is the
    module-level function that answers it on a worker, ``answer(model, pipeline, task, config,
    paths) -> ItemRecord`` (the runner's own, passed in so this module never imports the runner)."""

    kind: str
    cell: dict[str, Any]
    condition: str
    dataset: str
    item: Any
    answer: Callable[..., ItemRecord]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.condition, self.dataset, self.item.qid)

    def failed(self, record: ItemRecord) -> bool:
        """What the local engine counts as failed: no choice (MCQ), an error (free text)."""
        return record.pred is None if self.kind == "mcq" else record.error is not None


@dataclass
class Result:
    """A worker's answer: the record, the cache entries its model calls made, the lookups, and the
    answering actor's incarnation (a new one each time Ray restarts it)."""

    record: ItemRecord
    entries: dict[str, Any] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    incarnation: str = ""


def pool_fingerprint(base_url_free: dict[str, Any]) -> dict[str, Any]:
    """The identity of a server pool: the model, not the URLs (every server must serve that model),
    so a pool of any size, in any order, reads the same cache entries."""
    return {**{k: v for k, v in base_url_free.items() if k != "base_url"}, "base_url": "server-pool"}


class _PoolModel:
    """The driver's stand-in for a server pool's model: an identity for the cache and manifest."""

    def __init__(self, fingerprint: dict[str, Any]) -> None:
        self.name = str(fingerprint.get("name", "server-pool"))
        self._fingerprint = fingerprint

    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise MedciteError("the server pool's model is called by the Ray workers, never by the driver")

    generate = stream = next_token_logprobs = _refuse


def driver_generator(config: EvalConfig, paths: Paths, engine: RayEngine) -> Generator:
    """What the driver's generation cache is keyed by: the profile's model (constructing it does
    not load it), or the pool's identity."""
    from rag.assemble import make_generator
    from rag.profile import load_profile

    settings = load_profile(config.profile).generator
    if not engine.servers:
        return make_generator(settings, paths)
    if settings.backend != "openai":
        raise ConfigError(
            f"--server needs a profile whose generator is the OpenAI-compatible backend (backend = "
            f'"openai"); profile {config.profile!r} uses {settings.backend!r}'
        )
    first = make_generator(settings.model_copy(update={"base_url": engine.servers[0]}), paths)
    return _PoolModel(pool_fingerprint(first.fingerprint()))


# -- the worker side ---------------------------------------------------------------------------


class CacheReader:
    """Ray actor on the driver's node: answers lookups from the driver's generation cache file."""

    def __init__(self, path: str) -> None:
        self.cache = SqliteCache(Path(path), GENERATIONS, JSON, label="generation cache (reader)")

    def get(self, key: str) -> Any:
        return self.cache.get(key)


class _ShippingCache:
    """A worker's view of the cache: the driver's entries (read through the reader actor) plus its
    own new ones, which :meth:`take` hands over with each record."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.own: dict[str, Any] = {}
        self.new: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        if key in self.own:
            return self.own[key]
        import ray

        return ray.get(self.reader.get.remote(key))

    def put(self, key: str, value: Any) -> None:
        self.own[key] = self.new[key] = value

    def take(self) -> dict[str, Any]:
        new, self.new = self.new, {}
        return new

    def close(self) -> None:
        """Nothing to close: the driver owns the file."""


class _ShippingGenerator(CachingGenerator):
    """The eval cache's keys and lookups on a worker, keyed by the driver's model identity."""

    def __init__(self, inner: Generator, cache: _ShippingCache, fingerprint: dict[str, Any]) -> None:
        # The same keys as the driver's CachingGenerator; the store is the shipping cache.
        DiskCachedGenerator.__init__(self, inner, cast(Any, cache))
        self._fingerprint = fingerprint


class EvalWorker:
    """Ray actor: one model, the pipeline of the condition at hand, one item at a time."""

    def __init__(
        self,
        config: EvalConfig,
        paths: Paths,
        generator: Generator | None,
        fingerprint: dict[str, Any],
        reader: Any,
        pooled: bool,
    ) -> None:
        from rag.assemble import make_generator
        from rag.profile import load_profile

        self.config, self.paths = config, paths
        self.base = load_profile(config.profile)
        if pooled:  # each item names its server (see answer); until then, only the pool's identity
            inner: Generator = _PoolModel(fingerprint)
        else:
            inner = generator if generator is not None else make_generator(self.base.generator, paths)
        self.cache = _ShippingCache(reader)
        self.model = _ShippingGenerator(inner, self.cache, fingerprint)
        self.servers: dict[str, Generator] = {}
        self.opened: tuple[str, Any] | None = None
        self.incarnation = uuid.uuid4().hex  # this constructor's run: a restart makes a new one

    def ping(self) -> tuple[str, bool, str]:
        """This incarnation, whether Ray restarted the actor, and its node (the driver's probe)."""
        import ray

        context = ray.get_runtime_context()
        return self.incarnation, context.was_current_actor_reconstructed, context.get_node_id()

    def answer(self, task: Task, server: str | None) -> Result:
        if server is not None:
            self.model.inner = self._server(server)
        resource = self._open(task.cell)
        hits, misses = self.model.hits, self.model.misses
        record = task.answer(self.model, resource, task, self.config, self.paths)
        taken = self.cache.take()
        return Result(record, taken, self.model.hits - hits, self.model.misses - misses, self.incarnation)

    def _server(self, url: str) -> Generator:
        if url not in self.servers:
            from rag.assemble import make_generator

            settings = self.base.generator.model_copy(update={"base_url": url})
            self.servers[url] = make_generator(settings, self.paths)
        return self.servers[url]

    def _open(self, cell: dict[str, Any]) -> Any:
        """The condition's pipeline (None closed-book), opened once while its items keep coming."""
        from rag.assemble import assemble
        from rag.profile import load_profile

        if self.opened is not None and self.opened[0] == cell["name"]:
            return self.opened[1]
        self._close()
        resource = None
        if not cell["closed_book"]:  # a grid cell over the run's profile, or a profile as shipped
            profile = (
                load_profile(cell["profile"]) if "profile" in cell else condition_profile(self.base, cell)
            )
            resource = assemble(profile, self.paths, generator=self.model)
        self.opened = (cell["name"], resource)
        return resource

    def _close(self) -> None:
        if self.opened is not None and self.opened[1] is not None:
            self.opened[1].close()
        self.opened = None


# -- the driver side ---------------------------------------------------------------------------


class _Sent(NamedTuple):
    """An item in flight: the actor and its incarnation count when the item was sent."""

    actor: int
    generation: int
    task: Task
    server: str | None


class RayPool:
    """The actors of one run (made once, used by every condition) and the dispatch loop.

    An actor is ``alive`` (given items) or, after an item failed with it (its node or process
    lost), ``restarting``: it gets only a probe (``ping``) until it answers (restarted: alive again)
    or Ray says it is dead for good (its restarts used up: ``gone``)."""

    def __init__(
        self,
        ray: Any,
        engine: RayEngine,
        config: EvalConfig,
        paths: Paths,
        model: CachingGenerator,
        generator: Generator | None,
    ) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ray, self.engine, self.model = ray, engine, model
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        reader_cls = ray.remote(CacheReader).options(num_cpus=0, max_concurrency=8, scheduling_strategy=here)
        self.reader = reader_cls.remote(str(model.cache.path))
        # max_task_retries=0: the driver alone sends a dead actor's items again (see run)
        worker_cls = ray.remote(EvalWorker).options(
            num_cpus=engine.cpus, max_restarts=engine.max_restarts, max_task_retries=0
        )
        fingerprint = model.fingerprint()
        self.actors = [
            worker_cls.remote(config, paths, generator, fingerprint, self.reader, bool(engine.servers))
            for _ in range(engine.workers)
        ]
        self.alive = list(range(engine.workers))
        self.generation = [0] * engine.workers  # deaths seen per actor: older items' errors are stale
        self.probes: dict[Any, int] = {}  # ping in flight -> the restarting actor
        self.seen: dict[int, str] = {}  # each actor's incarnation, as last seen
        self.died: list[int] = []  # actors, each time one died, in order (tests, the run summary)
        self.restarted: list[int] = []  # actors, each time one came back restarted
        self.gone: list[int] = []  # actors dead for good (restarts used up)
        self.stalled: float | None = None  # since when no actor is alive (some restarting)
        self.note: Callable[[str], None] = lambda message: None  # progress lines (fan_out's bar)

    @property
    def lost(self) -> list[int]:
        """Actors not alive now: dead for good, or still restarting."""
        return [a for a in range(len(self.actors)) if a not in self.alive]

    def close(self) -> None:
        for actor in [*self.actors, self.reader]:
            with contextlib.suppress(Exception):  # an actor already gone has nothing to end
                self.ray.kill(actor)

    def run(self, tasks: Sequence[Task], on_result: Callable[[Task, Result], None]) -> None:
        """Answer ``tasks``; call ``on_result`` in the driver as each arrives (any order)."""
        queue = deque(tasks)
        depth = 1 if self.engine.servers else 2  # items queued per actor: the next one waits there
        inflight: dict[Any, _Sent] = {}
        per_actor: Counter[int] = Counter()
        per_server: Counter[str] = Counter()
        while queue or inflight:
            self._submit(queue, inflight, per_actor, per_server, depth)
            for ref in self._ready(list(inflight)):
                if ref in self.probes:
                    self._probed(ref)
                    continue
                sent = inflight.pop(ref)
                per_actor[sent.actor] -= 1
                if sent.server is not None:
                    per_server[sent.server] -= 1
                result = self._result(ref, sent)
                if result is None:
                    queue.appendleft(sent.task)  # answered again by a live actor; nothing was written
                else:
                    on_result(sent.task, result)
            if queue and not self.alive and not self.probes:
                raise MedciteError(self._exhausted())

    def _ready(self, inflight: list[Any]) -> list[Any]:
        """Wait for an item or a probe; with no actor alive, at most until ``restart_wait_s`` has
        passed since the last one died."""
        timeout = None
        if not self.alive and self.probes:
            self.stalled = _now() if self.stalled is None else self.stalled
            timeout = max(0.0, self.stalled + self.engine.restart_wait_s - _now())
        ready, _ = self.ray.wait([*inflight, *self.probes], num_returns=1, timeout=timeout)
        if not ready:
            raise MedciteError(
                f"no Ray worker of this run came back within {self.engine.restart_wait_s:.0f} s "
                f"({len(self.probes)} waiting to restart: does the cluster have a node with "
                f"{self.engine.cpus} CPU free?); the finished items are in the run directory: run "
                "the same command again to resume"
            )
        return ready

    def _result(self, ref: Any, sent: _Sent) -> Result | None:
        """The item's result, or None when its actor died (the item is to be sent again)."""
        from ray.exceptions import RayActorError, RayTaskError

        try:
            result: Result = self.ray.get(ref)
        except RayTaskError as exc:  # a bug or a crash in the item's code, not a node lost
            raise exc.as_instanceof_cause() from None
        except RayActorError as exc:
            _refuse_init_failure(exc)
            if sent.actor in self.alive and sent.generation == self.generation[sent.actor]:
                self._died(sent.actor)
            return None
        self.seen[sent.actor] = result.incarnation
        return result

    def _died(self, actor: int) -> None:
        """``actor`` failed an item: give it no more until a probe says it is back."""
        self.alive.remove(actor)
        self.generation[actor] += 1
        self.died.append(actor)
        self.probes[self.actors[actor].ping.remote()] = actor
        bound = self.engine.max_restarts
        if bound:
            self.note(
                f"Ray worker {actor} died; its items go to the others while Ray restarts it "
                f"(restarted {self.restarted.count(actor)} of at most {bound} times so far)"
            )
        else:
            self.note(f"Ray worker {actor} died; its items go to the others (--max-restarts 0)")

    def _probed(self, ref: Any) -> None:
        """A probe's answer: the actor is back (restarted or not), still coming, or gone."""
        from ray.exceptions import ActorUnavailableError, RayActorError

        actor = self.probes.pop(ref)
        try:
            incarnation, reconstructed, node = self.ray.get(ref)
        except ActorUnavailableError:  # its old node not yet known to be lost: ask again
            self.probes[self.actors[actor].ping.remote()] = actor
            return
        except RayActorError as exc:
            _refuse_init_failure(exc)
            self.gone.append(actor)
            self.note(f"Ray worker {actor} cannot restart (its {self.engine.max_restarts} restarts used up)")
            return
        restarted = incarnation != self.seen[actor] if actor in self.seen else reconstructed
        if restarted:
            self.restarted.append(actor)
            self.note(f"Ray worker {actor} restarted on node {node[:8]} ({len(self.restarted)} restarts)")
        else:
            self.note(f"Ray worker {actor} answers again (it was unreachable, not restarted)")
        self.seen[actor] = incarnation
        self.alive.append(actor)
        self.stalled = None

    def _exhausted(self) -> str:
        return (
            f"every Ray worker of this run died and none can restart ({len(self.died)} deaths, "
            f"{len(self.restarted)} restarts, at most {self.engine.max_restarts} per worker: "
            "--max-restarts); the finished items are in the run directory: run the same command "
            "again to resume"
        )

    def _submit(
        self,
        queue: deque[Task],
        inflight: dict[Any, _Sent],
        per_actor: Counter[int],
        per_server: Counter[str],
        depth: int,
    ) -> None:
        for level in range(depth):  # breadth first: every actor gets an item before any gets two
            for actor in self.alive:
                if not queue or per_actor[actor] > level:
                    continue
                server = self._free_server(per_server)
                if self.engine.servers and server is None:
                    return
                task = queue.popleft()
                ref = self.actors[actor].answer.remote(task, server)
                inflight[ref] = _Sent(actor, self.generation[actor], task, server)
                per_actor[actor] += 1
                if server is not None:
                    per_server[server] += 1

    def _free_server(self, per_server: Counter[str]) -> str | None:
        free = [s for s in self.engine.servers if per_server[s] < self.engine.per_server]
        return min(free, key=lambda s: per_server[s]) if free else None


def _refuse_init_failure(exc: Any) -> None:
    """An actor whose constructor failed fails the same way on every node: a setting, not a loss."""
    if exc.actor_init_failed:
        raise MedciteError(f"a Ray eval worker could not start: {exc}") from None


def fan_out(
    pool: RayPool, tasks: Sequence[Task], run: RunDir, stats: dict[str, ConditionStats], progress: bool
) -> None:
    """Answer ``tasks`` on the pool; store each result's cache entries, then append its record, as it
    arrives; add counts and seconds (wall time until a condition's last item) to ``stats``. With
    ``progress``, a worker's death and restart are lines above the bar."""
    from tqdm import tqdm

    start = time.perf_counter()
    before = {name: s.seconds for name, s in stats.items()}
    written: set[tuple[str, str, str]] = set()
    with tqdm(total=len(tasks), desc="ray", unit="q", disable=not progress, dynamic_ncols=True) as bar:

        def on_result(task: Task, result: Result) -> None:
            if task.key in written:  # a result comes once per submission; a guard, not a path taken
                return
            if result.entries:
                pool.model.cache.put_many(result.entries)
            write_records(run.records_path, [result.record])
            written.add(task.key)
            s = stats[task.condition]
            s.answered += 1
            s.failed += task.failed(result.record)
            s.cache_hits += result.hits
            s.cache_misses += result.misses
            s.seconds = round(before[task.condition] + time.perf_counter() - start, 1)
            bar.update(1)

        if progress:
            pool.note = bar.write
        pool.run(tasks, on_result)


@contextmanager
def ray_pool(
    engine: RayEngine, config: EvalConfig, paths: Paths, model: CachingGenerator, generator: Generator | None
) -> Iterator[RayPool]:
    """Connect to Ray (``core.ray_runtime.connect``), start the actors, stop them afterwards."""
    from core.ray_runtime import connect

    with connect(engine.address) as ray:
        pool = RayPool(ray, engine, config, paths, model, generator)
        with closing(pool):
            yield pool


@dataclass(frozen=True)
class EvalRun:
    """What every part of one eval run reads: its config, where data lives, its run folder, the
    model behind the run's cache, the summary it fills, whether to show progress, and the Ray
    pool answering its items (None: this process)."""

    config: EvalConfig
    paths: Paths
    run: RunDir
    generator: CachingGenerator
    summary: Any
    progress: bool
    pool: RayPool | None = None
