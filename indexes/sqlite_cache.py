"""The one on-disk cache mechanism: a ``key -> value`` table in one sqlite file (stdlib, no pickle).

Every cache medcite keeps goes through :class:`SqliteCache`: the llm reranker's scores
(``rag/rerank/cache.py``), eval generations (``evals/engine/generation_cache.py``), judge calls
(``evals/engine/judge/cache.py``) and embedding vectors (``indexes/dense/embedding_cache.py``).
Each keeps its own table, columns and value encoding (a :class:`Table` and a :class:`Codec`), so
the files that existed before this module still open with the same keys and values.

- Keys are content hashes (:func:`json_key` / :func:`hash_key`, sha256) with a version; bumping a
  cache's version changes every key, so old entries become misses, never misreadings (version 1
  hashes the bare content, as the caches did before this module).
- Writes are batched: ``put`` commits ``batch_size`` entries in one transaction, ``put_many`` at
  once; ``flush()``, ``close()``, leaving a ``with`` block and a normal process exit commit what is
  pending. A killed process loses at most the pending entries.
- Sqlite in WAL mode: any number of readers read committed entries while one writer writes;
  writers wait up to ``timeout`` seconds for each other. One connection per cache object, shared
  by its threads under a lock.
- A corrupt file, or a table of this name with other columns, at opening or mid-use: moved aside
  to ``<name>.corrupt-<time>`` (with its ``-wal``; nothing is deleted), a warning names both files
  and the reason, and an empty cache takes its place. A row that cannot be decoded is a miss.
- Other sqlite errors (a lock held too long, a full disk): a best-effort cache (the default) logs
  a warning and treats the operation as a miss; a ``strict`` cache raises for its caller to report.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from core.errors import ConfigError

__all__ = ["FLOAT", "JSON", "Codec", "SqliteCache", "Table", "canonical_json", "hash_key", "json_key"]

log = logging.getLogger(__name__)

K = TypeVar("K", str, bytes)
V = TypeVar("V")

MAX_VARS = 500  # keys per SELECT ... IN (...), under sqlite's limit on bound parameters
_CORRUPT_NAMES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def canonical_json(value: object) -> str:
    """The one JSON spelling that keys hash: sorted keys, unicode kept, anything else as str()."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def hash_key(content: bytes, *, version: int) -> bytes:
    """sha256 of ``content`` under key version ``version`` (1: the bare content, see module doc)."""
    if version < 1:
        raise ValueError(f"cache key versions start at 1, got {version}")
    if version == 1:
        return hashlib.sha256(content).digest()
    return hashlib.sha256(f"medcite-cache-v{version}\0".encode() + content).digest()


def json_key(value: object, *, version: int) -> str:
    """Hex key of a JSON-able value: any change of the value, or of the version, gives another key."""
    return hash_key(canonical_json(value).encode("utf-8"), version=version).hex()


@dataclass(frozen=True)
class Table:
    """One cache's table: ``key`` plus one value column (names and types as its files have them)."""

    name: str
    key_type: str  # "TEXT" or "BLOB"
    value_column: str
    value_type: str  # "TEXT", "REAL" or "BLOB"
    without_rowid: bool = True

    @property
    def ddl(self) -> str:
        rowid = " WITHOUT ROWID" if self.without_rowid else ""
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} (key {self.key_type} PRIMARY KEY, "
            f"{self.value_column} {self.value_type} NOT NULL){rowid}"
        )

    @property
    def columns(self) -> list[str]:
        return ["key", self.value_column]


@dataclass(frozen=True)
class Codec(Generic[V]):
    """How values are stored: ``decode`` raises ValueError or TypeError on a damaged row."""

    encode: Callable[[V], str | bytes | float]
    decode: Callable[[Any], V]


def _decode_json(raw: Any) -> Any:
    if not isinstance(raw, str):
        raise TypeError(f"expected JSON text, found {type(raw).__name__}")
    return json.loads(raw)


def _decode_float(raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise TypeError(f"expected a number, found {type(raw).__name__}")
    return float(raw)


JSON: Codec[Any] = Codec(lambda v: json.dumps(v, ensure_ascii=False, allow_nan=False), _decode_json)
FLOAT: Codec[float] = Codec(float, _decode_float)


class _ForeignTable(sqlite3.DatabaseError):
    """The file is a sqlite database, but its table of our name is not ours."""


def _is_corrupt(exc: BaseException) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return isinstance(exc, _ForeignTable) or name.startswith(_CORRUPT_NAMES)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


_UNFLUSHED: set[SqliteCache[Any, Any]] = set()  # caches holding pending entries, flushed at exit
_UNFLUSHED_LOCK = threading.Lock()


@atexit.register
def _flush_at_exit() -> None:
    with _UNFLUSHED_LOCK:
        caches = list(_UNFLUSHED)
    for cache in caches:
        try:
            cache.flush()
        except Exception as exc:  # noqa: BLE001 - too late to raise: say what was not written
            log.warning("%s %s: pending entries not written at exit (%s)", cache.label, cache.path, exc)


class SqliteCache(Generic[K, V]):
    """A thread-safe, process-safe ``key -> value`` store in one sqlite file.

    ``label`` names the cache in messages ("score cache"). ``recovered`` lists the files moved
    aside because they were corrupt or foreign.
    """

    def __init__(
        self,
        path: Path,
        table: Table,
        codec: Codec[V],
        *,
        label: str,
        timeout: float = 5.0,
        batch_size: int = 64,
        strict: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.path = Path(path)
        self.table = table
        self.codec = codec
        self.label = label
        self.timeout = timeout
        self.batch_size = batch_size
        self.strict = strict
        self.recovered: list[Path] = []
        self._lock = threading.RLock()
        self._pending: dict[K, str | bytes | float] = {}
        self._identity: tuple[int, int] | None = None
        self._closed = False
        self._conn: sqlite3.Connection | None = self._open()

    # -- opening and recovery ---------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: autocommit, with explicit transactions around batch writes.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL stays consistent; a cache needs no more
            conn.execute(self.table.ddl)
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({self.table.name})")]
            if columns != self.table.columns:
                raise _ForeignTable(
                    f"it is not a {self.label}: table {self.table.name!r} has columns {columns}, "
                    f"expected {self.table.columns}"
                )
        except sqlite3.Error:
            conn.close()
            raise
        self._identity = _identity(self.path)
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if self.strict:
                raise
            raise ConfigError(f"cannot create the {self.label} folder {self.path.parent}: {exc}") from exc
        seen = _identity(self.path)
        try:
            return self._connect()
        except sqlite3.Error as exc:
            if not _is_corrupt(exc):
                if self.strict:
                    raise
                raise ConfigError(
                    f"cannot open the {self.label} {self.path}: {exc}; check the path is writable "
                    "or point the cache elsewhere"
                ) from exc
            try:
                self._replace_broken(exc, seen)
                return self._connect()
            except (OSError, sqlite3.Error) as again:
                raise ConfigError(
                    f"the {self.label} {self.path} is unreadable and cannot be rebuilt ({again}); "
                    "move it away or point the cache elsewhere"
                ) from again

    def _replace_broken(self, exc: BaseException, seen: tuple[int, int] | None) -> None:
        """Move the broken file aside, unless another process already replaced it since ``seen``."""
        if seen is not None and _identity(self.path) != seen:
            log.warning(
                "%s %s was replaced by another process after an error (%s); reopening it",
                self.label,
                self.path,
                exc,
            )
            return
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():  # never overwrite an earlier broken copy someone may want to inspect
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        self.path.replace(target)
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.exists():  # the journal belongs to the broken file: it goes with it
            wal.replace(target.with_name(target.name + "-wal"))
        self.path.with_name(self.path.name + "-shm").unlink(missing_ok=True)  # an index, rebuilt on open
        self.recovered.append(target)
        log.warning(
            "%s %s is unreadable (%s); moved it to %s and starting an empty cache",
            self.label,
            self.path,
            exc,
            target,
        )

    def _recover(self, exc: sqlite3.Error, doing: str) -> None:
        """After a failed operation (lock held): rebuild a corrupt file; otherwise raise or warn."""
        if not _is_corrupt(exc):
            if self.strict:
                raise exc
            log.warning(
                "%s %s unavailable while %s (%s); treating it as a miss", self.label, self.path, doing, exc
            )
            return
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        try:
            self._replace_broken(exc, self._identity)
            self._conn = self._connect()
        except (OSError, sqlite3.Error) as again:
            if self.strict:
                raise
            log.warning(
                "%s %s disabled for this process: cannot rebuild it (%s)", self.label, self.path, again
            )

    # -- reading ----------------------------------------------------------------------------

    def get(self, key: K) -> V | None:
        """The cached value, or ``None`` on a miss."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[K]) -> dict[K, V]:
        """The cached values among ``keys`` (missing and undecodable keys are absent)."""
        raw: dict[K, Any] = {}
        with self._lock:
            todo = []
            for key in dict.fromkeys(keys):
                if key in self._pending:
                    raw[key] = self._pending[key]
                else:
                    todo.append(key)
            if self._conn is not None and todo:
                try:
                    raw.update(self._select(self._conn, todo))
                except sqlite3.Error as exc:
                    self._recover(exc, "reading")
        return self._decode_rows(raw)

    def _select(self, conn: sqlite3.Connection, keys: list[K]) -> Iterable[tuple[K, Any]]:
        rows: list[tuple[K, Any]] = []
        column, name = self.table.value_column, self.table.name
        for start in range(0, len(keys), MAX_VARS):
            part = keys[start : start + MAX_VARS]
            marks = ",".join("?" * len(part))
            rows.extend(conn.execute(f"SELECT key, {column} FROM {name} WHERE key IN ({marks})", part))
        return rows

    def _decode_rows(self, raw: Mapping[K, Any]) -> dict[K, V]:
        found: dict[K, V] = {}
        bad = 0
        for key, value in raw.items():
            try:
                found[key] = self.codec.decode(value)
            except (ValueError, TypeError):
                bad += 1
        if bad:
            log.warning("%s %s: %d damaged entries treated as missing", self.label, self.path, bad)
        return found

    def __len__(self) -> int:
        with self._lock:
            self._flush_locked()
            if self._conn is None:
                return 0
            try:
                return int(self._conn.execute(f"SELECT COUNT(*) FROM {self.table.name}").fetchone()[0])
            except sqlite3.Error as exc:
                self._recover(exc, "counting")
                return 0

    # -- writing ----------------------------------------------------------------------------

    def put(self, key: K, value: V) -> None:
        """Store one value; committed with the next ``batch_size`` entries, or by ``flush()``."""
        encoded = self.codec.encode(value)
        with self._lock:
            self._refuse_if_closed()
            self._pending[key] = encoded
            with _UNFLUSHED_LOCK:
                _UNFLUSHED.add(self)
            if len(self._pending) >= self.batch_size:
                self._flush_locked()

    def put_many(self, items: Mapping[K, V]) -> None:
        """Store ``items`` (and anything pending) in one transaction, now."""
        encoded = {key: self.codec.encode(value) for key, value in items.items()}
        with self._lock:
            self._refuse_if_closed()
            self._pending.update(encoded)
            self._flush_locked()

    def _refuse_if_closed(self) -> None:
        # A value written after close() would be lost without a word; the caller has a bug.
        if self._closed:
            raise ValueError(f"the {self.label} {self.path} is closed; open it again to store values")

    def flush(self) -> None:
        """Commit every pending entry in one transaction."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        rows = list(self._pending.items())
        self._pending.clear()
        with _UNFLUSHED_LOCK:
            _UNFLUSHED.discard(self)
        for attempt in (1, 2):  # a second try only into a file rebuilt after corruption
            if self._conn is None or not rows:
                return
            try:
                self._write(self._conn, rows)
                return
            except sqlite3.Error as exc:
                self._recover(exc, "writing")  # raises when strict and not corrupt
                if not _is_corrupt(exc) or attempt == 2:
                    return

    def _write(self, conn: sqlite3.Connection, rows: list[tuple[K, str | bytes | float]]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                f"INSERT OR REPLACE INTO {self.table.name} (key, {self.table.value_column}) VALUES (?, ?)",
                rows,
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT (full disk) leaves the transaction open
                with contextlib.suppress(sqlite3.Error):  # the original error says more
                    conn.execute("ROLLBACK")
            raise

    # -- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """Commit what is pending and close the file (a closed cache reads as empty)."""
        with self._lock:
            self._closed = True
            try:
                self._flush_locked()
            finally:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

    def __enter__(self) -> SqliteCache[K, V]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
