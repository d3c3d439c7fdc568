"""Every call to an evaluation judge, cached on disk: a second evaluation of the same items asks nothing.

Why: a judge call on the local 1.5B model costs seconds to tens of seconds on CPU, and answer-quality
evaluations are rerun after every change elsewhere. The cache is also the checkpoint of a run: a run
killed half way gets its finished judgements back from disk and only asks the rest.

Keys are ``sha256`` of canonical JSON holding the judge's fingerprint (model identity and
parameters), the call kind, the exact messages and the call's parameters; values are JSON (never
pickle) in one sqlite table (``indexes/sqlite_cache.py``: WAL mode, so several evaluation
processes can share the file; a corrupt or foreign file is moved aside with a warning and the
cache starts afresh). The table and keys are the ones this cache always had, so existing files
keep their verdicts. Judge failures (timeouts, unreachable servers) are never cached, so a rerun
asks again; an unparsable reply is cached like any other, because the same prompt gets the same
reply from a greedy judge. The lookup, ask and store are
``evals/engine/generation_cache.py:DiskCachedGenerator``, shared with the generations cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Message
from evals.engine.generation_cache import DiskCachedGenerator, plain_messages
from indexes.sqlite_cache import JSON, SqliteCache, Table, json_key
from rag.protocols import Generator

__all__ = ["CachedJudge", "JudgeCache", "call_key", "default_judge_cache_path"]

KEY_VERSION = 1  # bump when what an entry means changes: every key changes with it
CALLS = Table("calls", key_type="TEXT", value_column="value", value_type="TEXT")


def default_judge_cache_path(paths: Paths) -> Path:
    """``$MEDCITE_DATA_DIR/cache/judge.sqlite``: beside the other caches, outside any index."""
    return paths.cache_dir / "judge.sqlite"


def call_key(fingerprint: dict[str, Any], kind: str, payload: dict[str, Any]) -> str:
    """A stable key for one call: any change of model, prompt or parameter gives another key."""
    return json_key({"judge": fingerprint, "kind": kind, **payload}, version=KEY_VERSION)


class JudgeCache(SqliteCache[str, Any]):
    """A thread-safe ``key -> JSON value`` store in one sqlite file (``get`` is ``None`` on a miss).

    A cache that cannot be read or written mid-run logs a warning and behaves as a miss: an
    evaluation is never lost because its cache hiccupped. Each verdict is committed at once (a
    judge call costs seconds, a commit a millisecond), so a killed run keeps every verdict.
    """

    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        super().__init__(path, CALLS, JSON, label="judge cache", timeout=timeout, batch_size=1)


class CachedJudge(DiskCachedGenerator):
    """A :class:`rag.protocols.Generator` that answers from the cache and asks ``judge`` on a miss.

    ``calls`` counts the calls that reached the judge, ``hits`` those answered from disk. Unlike
    the generations cache, sampled calls are cached too (the temperature is part of the key).
    """

    def __init__(self, judge: Generator, cache: JudgeCache) -> None:
        super().__init__(judge, cache)

    @property
    def judge(self) -> Generator:
        return self.inner

    @property
    def calls(self) -> int:
        return self.misses

    def generate_key(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, stop: Sequence[str]
    ) -> str | None:
        payload = {
            "messages": plain_messages(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop": list(stop),
        }
        return call_key(self._fingerprint, "generate", payload)

    def logprobs_key(self, messages: Sequence[Message], candidates: Sequence[str]) -> str:
        payload = {"messages": plain_messages(messages), "candidates": list(candidates)}
        return call_key(self._fingerprint, "logprobs", payload)
