"""A disk cache in front of any Generator, keyed by (model hash, prompt hash, parameters).

Evaluation runs ask the same model the same prompts again and again (a re-run, a resumed run,
a grid whose cells share a closed-book arm). Greedy decoding and next-token scoring are
deterministic for a given model file, so a hit is the answer the model would give. Values are
JSON in sqlite; nothing is pickled. The model's identity is its fingerprint (file sha256), so a
different model never reads another's entries.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rag.protocols import Generator
from rag.types import Generation, Message


def _key(
    fingerprint: dict[str, Any], method: str, messages: Sequence[Message], params: dict[str, Any]
) -> str:
    payload = {
        "model": fingerprint,
        "method": method,
        "messages": [[m.role, m.content] for m in messages],
        "params": params,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class CachingGenerator:
    """Wraps a Generator; ``hits`` and ``misses`` count lookups (a finished re-run has no misses)."""

    def __init__(self, inner: Generator, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()
        self._lock = threading.Lock()
        self._fingerprint = inner.fingerprint()
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        self._db.close()

    def _get(self, key: str) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM generations WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def _put(self, key: str, value: Any) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO generations (key, value) VALUES (?, ?)", (key, json.dumps(value))
            )
            self._db.commit()

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
