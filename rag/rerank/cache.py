"""An on-disk cache of relevance scores: one sqlite table ``key -> score`` (stdlib, no pickle).

Why: an LLM relevance judgement costs seconds on CPU, and evaluations ask the same
(question, passage) pairs again and again. Keys are opaque strings built by the caller (the
LLM reranker hashes the model fingerprint and the exact prompt).

Sqlite in WAL mode lets any number of readers (API workers, eval processes) read while one
writes; writers wait up to ``timeout`` seconds for each other. The cache is an optimisation and
never the reason a request fails: a corrupted file is moved aside (``<name>.corrupt-<time>``)
and rebuilt with a logged warning; a locked or unreadable cache behaves as a miss.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rag.errors import ConfigError

log = logging.getLogger(__name__)

_SCHEMA = "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, score REAL NOT NULL) WITHOUT ROWID"
_COLUMNS = ["key", "score"]
_CORRUPT = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_MAX_VARS = 500  # stays under sqlite's limit on bound parameters per statement


class _ForeignSchema(sqlite3.DatabaseError):
    """The file is a sqlite database, but not one of ours."""


class ScoreCache:
    """A thread-safe, process-safe ``str -> float`` store in one sqlite file."""

    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self.recovered: list[Path] = []  # files moved aside because they were corrupt
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the score cache folder {self.path.parent}: {exc}") from exc
        self._conn: sqlite3.Connection | None = self._open()

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: autocommit, with explicit transactions around batch writes.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            columns = [row[1] for row in conn.execute("PRAGMA table_info(scores)")]
            if columns != _COLUMNS:
                raise _ForeignSchema(f"table 'scores' has columns {columns}, expected {_COLUMNS}")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.Error as exc:
            if not _is_corrupt(exc):
                raise ConfigError(
                    f"cannot open the score cache {self.path}: {exc}; check the path is writable "
                    "or point the cache elsewhere"
                ) from exc
            try:
                self._move_aside(exc)
                return self._connect()
            except (OSError, sqlite3.Error) as again:
                raise ConfigError(
                    f"the score cache {self.path} is corrupt and cannot be rebuilt ({again}); "
                    "delete it or point the cache elsewhere"
                ) from again

    def _move_aside(self, exc: BaseException) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():  # never overwrite an earlier broken copy someone may want to inspect
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        log.warning(
            "score cache %s is unreadable (%s); moved it to %s and starting afresh", self.path, exc, target
        )
        self.path.replace(target)
        for suffix in ("-wal", "-shm"):  # the journal belongs to the broken file
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        self.recovered.append(target)

    def _recover(self, exc: sqlite3.Error) -> None:
        """Called with the lock held after a failed operation: rebuild if corrupt, else carry on."""
        if not _is_corrupt(exc):
            log.warning(
                "score cache %s unavailable for this operation (%s); treating it as a miss", self.path, exc
            )
            return
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        try:
            self._move_aside(exc)
            self._conn = self._connect()
        except (OSError, sqlite3.Error) as again:
            log.warning("score cache %s disabled: cannot rebuild it (%s)", self.path, again)

    def get_many(self, keys: Sequence[str]) -> dict[str, float]:
        """The cached scores among ``keys`` (missing keys are absent from the result)."""
        found: dict[str, float] = {}
        with self._lock:
            if self._conn is None:
                return found
            try:
                for part in _chunks(list(dict.fromkeys(keys)), _MAX_VARS):
                    marks = ",".join("?" * len(part))
                    rows = self._conn.execute(f"SELECT key, score FROM scores WHERE key IN ({marks})", part)
                    found.update((str(k), float(s)) for k, s in rows)
            except sqlite3.Error as exc:
                self._recover(exc)
                return {}
        return found

    def put_many(self, items: Mapping[str, float]) -> None:
        """Store scores in one transaction; non-finite scores are not cached."""
        rows = [(k, float(v)) for k, v in items.items() if math.isfinite(v)]
        with self._lock:
            if self._conn is None or not rows:
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.executemany("INSERT OR REPLACE INTO scores (key, score) VALUES (?, ?)", rows)
                except sqlite3.Error:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._recover(exc)

    def __len__(self) -> int:
        with self._lock:
            if self._conn is None:
                return 0
            try:
                return int(self._conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0])
            except sqlite3.Error as exc:
                self._recover(exc)
                return 0

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _is_corrupt(exc: sqlite3.Error) -> bool:
    return isinstance(exc, _ForeignSchema) or getattr(exc, "sqlite_errorname", "") in _CORRUPT


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
