"""The llm reranker's score cache: ``key -> p(yes)`` in one sqlite table (``indexes/sqlite_cache.py``).

Why: an LLM relevance judgement costs seconds on CPU, and evaluations ask the same
(question, passage) pairs again and again. Keys are built by the LLM reranker (the model
fingerprint and the exact prompt, see :func:`score_key`). The file format (table ``scores``,
``key TEXT``, ``score REAL``) is the one this cache always had, so existing files keep their
scores. The cache is an optimisation and never the reason a request fails: a corrupt file is
moved aside and rebuilt with a logged warning; a locked or unreadable cache behaves as a miss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from indexes.sqlite_cache import FLOAT, SqliteCache, Table, json_key

KEY_VERSION = 1  # bump when what a score means changes: every key changes with it
SCORES = Table("scores", key_type="TEXT", value_column="score", value_type="REAL")


def score_key(fingerprint: dict[str, Any], prompt: list[Any]) -> str:
    """``<model hash[:16]>:<prompt hash>``: another model or prompt never reads these scores."""
    return f"{json_key(fingerprint, version=KEY_VERSION)[:16]}:{json_key(prompt, version=KEY_VERSION)}"


class ScoreCache(SqliteCache[str, float]):
    """A thread-safe, process-safe ``str -> float`` store in one sqlite file."""

    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        super().__init__(path, SCORES, FLOAT, label="score cache", timeout=timeout)

    def put_many(self, items: Mapping[str, float]) -> None:
        """Store scores in one transaction; non-finite scores are not cached."""
        super().put_many({k: float(v) for k, v in items.items() if math.isfinite(v)})
