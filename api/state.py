"""What the server holds while it runs: one assembled pipeline per served profile.

Built once by the app's lifespan (never at import). Profiles that name the same generator
share one instance, so two profiles do not load the 1 GB local model twice; retrievers for the
modes a ``/v1/retrieve`` call may ask for are made on first use and kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from api.gate import GenerationGate
from api.ratelimit import RateLimiter
from api.settings import ApiSettings
from core.errors import ConfigError, MedciteError
from indexes.manifest import read_manifest, verify_files
from rag.assemble import Assembled, assemble, describe, make_generator
from rag.indexing import make_retriever
from rag.profile import Profile, load_profile
from rag.protocols import Generator, Retriever

Assembler = Callable[[Profile], Assembled]


@dataclass
class Served:
    """One profile as served: its pipeline, plus retrievers per mode for /v1/retrieve."""

    assembled: Assembled
    retrievers: dict[str, Retriever] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.assembled.profile.name

    def retriever(self, mode: str | None) -> Retriever:
        profile_mode = self.assembled.profile.retrieval.mode
        mode = mode or profile_mode
        if mode == profile_mode:
            return self.assembled.pipeline.retriever
        with self.lock:
            if mode not in self.retrievers:
                r = self.assembled.profile.retrieval
                self.retrievers[mode] = make_retriever(
                    self.assembled.index,
                    self.assembled.embedder,
                    mode,
                    fusion=r.fusion,
                    rrf_k=r.rrf_k,
                    weights=r.weights,
                    candidates=r.candidates,
                )
            return self.retrievers[mode]


@dataclass
class ServerState:
    settings: ApiSettings
    served: dict[str, Served]
    gate: GenerationGate
    rate_limiter: RateLimiter | None = None
    started: float = field(default_factory=time.time)

    def get(self, model: str | None) -> Served:
        """The served profile named ``model``; the first profile when ``model`` is empty."""
        if not model:
            return next(iter(self.served.values()))
        try:
            return self.served[model]
        except KeyError:
            raise UnknownModelError(
                f"model {model!r} is not served here; GET /v1/models lists {sorted(self.served)}"
            ) from None

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether every served index is still complete on disk, with a manifest summary each.

        Answers come from memory (indexes are detached at load), so damage on disk does not
        change them; it is reported (503) because a restart could not load the index. A rebuild
        of the index while serving is not damage: the old build is still served, consistently,
        and ``serving`` / ``on_disk`` say which build is which until a restart picks up the new one.
        """
        report: dict[str, Any] = {}
        ready = True
        for name, served in self.served.items():
            index = served.assembled.index
            entry = describe(served.assembled)
            entry["serving"] = index.loaded_from.name if index.loaded_from else str(index.folder)
            try:
                on_disk = read_manifest(index.folder)
                verify_files(index.folder, on_disk, checksums=False)
            except MedciteError as exc:
                ready = False
                entry["status"] = f"index problem: {exc}; still answering from the copy loaded in memory"
            else:
                entry["on_disk"] = index.folder.resolve().name
                if on_disk == index.manifest:
                    entry["status"] = "ready"
                else:
                    entry["status"] = (
                        f"ready: serving the build of index {index.folder.name!r} loaded at start "
                        f"({entry['serving']}); a newer build ({entry['on_disk']}) is on disk, "
                        "restart the server to serve it"
                    )
            report[name] = entry
        return ready, report

    def close(self) -> None:
        for served in self.served.values():
            served.assembled.close()


class UnknownModelError(ConfigError):
    """The request names a profile this server does not serve."""


def profile_for(settings: ApiSettings, name: str) -> Profile:
    """A packaged profile with the server's index and generator overrides applied."""
    profile = load_profile(name)
    changes: dict[str, Any] = {}
    if settings.index:
        changes["index"] = settings.index
    given = {
        "backend": settings.generator_backend,
        "base_url": settings.generator_url,
        "model": settings.generator_model,
        "timeout_s": settings.generator_timeout_s,
    }
    generator = {key: value for key, value in given.items() if value}  # only what the settings set
    if generator:
        changes["generator"] = profile.generator.model_copy(update=generator)
    return profile.model_copy(update=changes)


def load_state(settings: ApiSettings, assembler: Assembler | None = None) -> ServerState:
    """Assemble every served profile (slow: loads indexes, the embedder and the generator)."""
    paths = settings.paths()
    generators: dict[str, Generator] = {}

    def default_assembler(profile: Profile) -> Assembled:
        key = profile.generator.model_dump_json()
        if key not in generators:
            generators[key] = make_generator(profile.generator, paths)
            loader = getattr(generators[key], "load", None)
            if loader is not None:  # load the local model now, not on the first request
                loader()
        return assemble(profile, paths, generator=generators[key])

    build = assembler or default_assembler
    served: dict[str, Served] = {}
    try:
        for name in settings.profiles:
            assembled = build(profile_for(settings, name))
            assembled.pipeline = assembled.pipeline.with_options(degrade_on_generator_error=False)
            # Serve from memory: files truncated, deleted or swapped later must not crash (SIGBUS
            # on a truncated mapping) or change answers; /ready reports such damage.
            assembled.index.detach()
            served[assembled.profile.name] = Served(assembled)
    except BaseException:
        for s in served.values():
            s.assembled.close()
        raise
    limits = settings
    gate = GenerationGate(
        limits.generation_concurrency, limits.queue_limit, limits.queue_timeout_s, limits.retry_after_s
    )
    limiter = None
    if settings.rate_limit_per_minute:
        limiter = RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst)
    return ServerState(settings=settings, served=served, gate=gate, rate_limiter=limiter)
