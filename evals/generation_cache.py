"""A disk cache in front of any Generator, keyed by (model hash, prompt hash, parameters).

Evaluation runs ask the same model the same prompts again and again (a re-run, a resumed run,
a grid whose cells share a closed-book arm). Greedy decoding and next-token scoring are
deterministic for a given model file, so a hit is the answer the model would give. Values are
JSON in sqlite (``indexes/sqlite_cache.py``; nothing is pickled). The model's identity is its
fingerprint (file sha256), so a different model never reads another's entries. The file format
(table ``generations``, ``key TEXT``, ``value TEXT``) and the keys are the ones this cache
always had, so the answers in existing files are read back.
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


def _key(
    fingerprint: dict[str, Any], method: str, messages: Sequence[Message], params: dict[str, Any]
) -> str:
    payload = {
        "model": fingerprint,
        "method": method,
        "messages": [[m.role, m.content] for m in messages],
        "params": params,
    }
    return json_key(payload, version=KEY_VERSION)


class CachingGenerator:
    """Wraps a Generator; ``hits`` and ``misses`` count lookups (a finished re-run has no misses)."""

    def __init__(self, inner: Generator, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        # One commit per entry: each costs seconds of model time, a commit a millisecond, and a
        # killed run keeps every answer it got.
        self._cache: SqliteCache[str, Any] = SqliteCache(
            path, GENERATIONS, JSON, label="generation cache", batch_size=1
        )
        self._fingerprint = inner.fingerprint()
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        self._cache.close()

    def _get(self, key: str) -> Any:
        value = self._cache.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def _put(self, key: str, value: Any) -> None:
        self._cache.put(key, value)

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Generation:
        if temperature > 0:  # sampled text is not a function of the prompt: never cache it
            return self.inner.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
        params = {"max_tokens": max_tokens, "stop": list(stop)}
        key = _key(self._fingerprint, "generate", messages, params)
        cached = self._get(key)
        if cached is not None:
            return Generation(**{**cached, "seconds": 0.0})
        generation = self.inner.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
        self._put(key, {
            "text": generation.text, "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens, "seconds": generation.seconds,
            "finish_reason": generation.finish_reason,
        })  # fmt: skip
        return generation

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Iterator[str]:
        """Evaluation does not need token-by-token output: one cached piece per completion."""
        yield self.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop).text

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        key = _key(self._fingerprint, "next_token_logprobs", messages, {"candidates": list(candidates)})
        cached = self._get(key)
        if cached is not None:
            return {c: (-math.inf if v is None else float(v)) for c, v in cached.items()}
        logprobs = self.inner.next_token_logprobs(messages, candidates)
        self._put(key, {c: (v if math.isfinite(v) else None) for c, v in logprobs.items()})
        return logprobs

    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint
