"""A disk cache in front of any Generator, keyed by (model hash, prompt hash, parameters).

Evaluation runs ask the same model the same prompts again and again (a re-run, a resumed run,
a grid whose cells share a closed-book arm). Greedy decoding and next-token scoring are
deterministic for a given model file, so a hit is the answer the model would give. Values are
JSON in sqlite (``indexes/sqlite_cache.py``; nothing is pickled). The model's identity is its
fingerprint (file sha256), so a different model never reads another's entries. The file format
(table ``generations``, ``key TEXT``, ``value TEXT``) and the keys are the ones this cache
always had, so the answers in existing files are read back.

:class:`DiskCachedGenerator` is the lookup, ask and store that this cache and the judge cache
(``evals/engine/judge/cache.py``) share; each keeps its own table and key formula, so the files each
has written keep answering.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from core.types import Generation, Message
from indexes.sqlite_cache import JSON, SqliteCache, Table, json_key
from rag.protocols import Generator

KEY_VERSION = 1  # bump when what an entry means changes: every key changes with it
GENERATIONS = Table(
    "generations", key_type="TEXT", value_column="value", value_type="TEXT", without_rowid=False
)


def plain_messages(messages: Sequence[Message]) -> list[list[str]]:
    """Messages as the cache keys hold them: ``[[role, content], ...]``."""
    return [[m.role, m.content] for m in messages]


def _key(
    fingerprint: dict[str, Any], method: str, messages: Sequence[Message], params: dict[str, Any]
) -> str:
    payload = {
        "model": fingerprint,
        "method": method,
        "messages": plain_messages(messages),
        "params": params,
    }
    return json_key(payload, version=KEY_VERSION)


class DiskCachedGenerator:
    """A Generator that answers from ``cache`` and asks ``inner`` on a miss.

    Subclasses say what a call's key is (``generate_key``: ``None`` for a call never cached,
    ``logprobs_key``) and whether a stored generation keeps its ``seconds``. ``hits`` counts the
    calls answered from disk, ``misses`` those that reached ``inner`` and were stored.
    """

    keep_seconds = False  # a hit always reports 0 seconds; stored only where files always had it

    def __init__(self, inner: Generator, cache: SqliteCache[str, Any]) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self._fingerprint = inner.fingerprint()
        self.hits = 0
        self.misses = 0

    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint

    def close(self) -> None:
        self.cache.close()

    def generate_key(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, stop: Sequence[str]
    ) -> str | None:
        raise NotImplementedError

    def logprobs_key(self, messages: Sequence[Message], candidates: Sequence[str]) -> str:
        raise NotImplementedError

    def _get(self, key: str) -> Any:
        value = self.cache.get(key)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Generation:
        key = self.generate_key(messages, max_tokens, temperature, stop)
        cached = None if key is None else self._get(key)
        if cached is not None:
            return Generation(**{**cached, "seconds": 0.0})
        generation = self.inner.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
        if key is not None:
            value: dict[str, Any] = {
                "text": generation.text,
                "prompt_tokens": generation.prompt_tokens,
                "completion_tokens": generation.completion_tokens,
                "finish_reason": generation.finish_reason,
            }
            if self.keep_seconds:
                value["seconds"] = generation.seconds
            self.cache.put(key, value)
        return generation

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Iterator[str]:
        """Evaluation reads a completion whole, never live: one cached piece per completion."""
        yield self.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop).text

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        key = self.logprobs_key(messages, candidates)
        cached = self._get(key)
        if cached is not None:
            return {c: (-math.inf if v is None else float(v)) for c, v in cached.items()}
        logprobs = self.inner.next_token_logprobs(messages, candidates)
        # JSON has no -inf: a candidate the model cannot produce is stored as null.
        self.cache.put(key, {c: (v if math.isfinite(v) else None) for c, v in logprobs.items()})
        return logprobs


class CachingGenerator(DiskCachedGenerator):
    """The eval generations cache; ``hits`` and ``misses`` count lookups (a finished re-run has no misses)."""

    keep_seconds = True

    def __init__(self, inner: Generator, path: Path) -> None:
        # One commit per entry: each costs seconds of model time, a commit a millisecond, and a
        # killed run keeps every answer it got.
        super().__init__(inner, SqliteCache(path, GENERATIONS, JSON, label="generation cache", batch_size=1))

    def generate_key(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, stop: Sequence[str]
    ) -> str | None:
        if temperature > 0:  # sampled text is not a function of the prompt: never cache it
            return None
        return _key(self._fingerprint, "generate", messages, {"max_tokens": max_tokens, "stop": list(stop)})

    def logprobs_key(self, messages: Sequence[Message], candidates: Sequence[str]) -> str:
        return _key(self._fingerprint, "next_token_logprobs", messages, {"candidates": list(candidates)})
