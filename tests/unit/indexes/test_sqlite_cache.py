"""The one sqlite cache mechanism: keys, round trips, batching, concurrent readers, broken files."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.errors import ConfigError
from indexes.sqlite_cache import FLOAT, JSON, Codec, SqliteCache, Table, canonical_json, hash_key, json_key
from tests.helpers import smash_data_pages

ROOT = Path(__file__).resolve().parents[3]
ENTRIES = Table("entries", key_type="TEXT", value_column="value", value_type="TEXT")
NUMBERS = Table("numbers", key_type="TEXT", value_column="n", value_type="REAL")
BLOBS = Table("blobs", key_type="BLOB", value_column="data", value_type="BLOB", without_rowid=False)
RAW: Codec[bytes] = Codec(bytes, lambda raw: bytes(raw) if isinstance(raw, bytes) else _bad(raw))


def _bad(raw: object) -> bytes:
    raise TypeError(f"not bytes: {raw!r}")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "test.sqlite"


def rows(path: Path, table: str = "entries") -> dict[object, object]:
    """What another process sees: committed rows only, read with plain sqlite3."""
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute(f"SELECT * FROM {table}").fetchall())
    finally:
        conn.close()


def open_json(path: Path, **kw: object) -> SqliteCache[str, object]:
    return SqliteCache(path, ENTRIES, JSON, label="test cache", **kw)  # type: ignore[arg-type]


# -- keys ----------------------------------------------------------------------------------------


def test_version_1_keys_are_the_bare_sha256_every_cache_used_before():
    value = {"model": {"sha256": "ab"}, "messages": [["user", "Fièvre ?"]], "params": {"max_tokens": 4}}
    old_spelling = json.dumps(value, sort_keys=True, ensure_ascii=False)
    assert canonical_json(value) == old_spelling
    assert json_key(value, version=1) == hashlib.sha256(old_spelling.encode("utf-8")).hexdigest()
    assert hash_key(b"some text", version=1) == hashlib.sha256(b"some text").digest()


def test_the_version_is_part_of_the_key():
    value = {"a": 1}
    keys = {json_key(value, version=v) for v in (1, 2, 3)}
    assert len(keys) == 3
    assert hash_key(b"x", version=2) != hash_key(b"x", version=1)
    assert json_key({"a": 2}, version=2) != json_key(value, version=2)  # the content still counts
    with pytest.raises(ValueError, match="start at 1"):
        hash_key(b"x", version=0)


# -- round trips ---------------------------------------------------------------------------------


def test_round_trip_of_each_value_kind_survives_reopening(path):
    with open_json(path) as cache:
        cache.put_many({"a": {"text": "é", "n": [1, None]}, "b": [1, 2]})
        cache.put_many({"a": {"text": "replaced"}})
    with open_json(path) as cache:
        assert cache.get_many(["a", "b", "missing"]) == {"a": {"text": "replaced"}, "b": [1, 2]}
        assert cache.get("missing") is None
        assert len(cache) == 2
    numbers = SqliteCache(path, NUMBERS, FLOAT, label="numbers")
    numbers.put_many({"x": 0.25})
    assert numbers.get("x") == 0.25
    numbers.close()
    blobs: SqliteCache[bytes, bytes] = SqliteCache(path, BLOBS, RAW, label="blobs")
    blobs.put_many({b"\x00\xff": b"\x01\x02"})
    assert blobs.get_many([b"\x00\xff", b"nope"]) == {b"\x00\xff": b"\x01\x02"}
    blobs.close()
    assert rows(path, "blobs") == {b"\x00\xff": b"\x01\x02"}


def test_more_keys_than_one_statement_binds(path):
    with open_json(path) as cache:
        cache.put_many({f"k{i}": i for i in range(1234)})
        found = cache.get_many([f"k{i}" for i in range(1234)] + ["k0"])
    assert len(found) == 1234 and found["k1233"] == 1233


def test_a_damaged_row_is_a_miss_with_a_warning(path, caplog):
    with open_json(path) as cache:
        cache.put_many({"good": 1, "bad": 2})
    conn = sqlite3.connect(path)
    conn.execute("UPDATE entries SET value = '{not json' WHERE key = 'bad'")
    conn.commit()
    conn.close()
    with open_json(path) as cache, caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        assert cache.get_many(["good", "bad"]) == {"good": 1}
    assert "1 damaged entries" in caplog.text


def test_values_json_cannot_hold_are_refused_when_put(path):
    with open_json(path) as cache, pytest.raises(ValueError):
        cache.put("nan", float("nan"))


# -- batching ------------------------------------------------------------------------------------


def test_put_commits_a_batch_at_a_time_and_reads_its_own_pending_entries(path):
    cache = open_json(path, batch_size=3)
    cache.put("a", 1)
    cache.put("b", 2)
    assert rows(path) == {}  # nothing committed yet ...
    assert cache.get_many(["a", "b"]) == {"a": 1, "b": 2}  # ... but this cache sees them
    cache.put("c", 3)
    assert rows(path) == {"a": "1", "b": "2", "c": "3"}  # the third entry committed all three
    cache.put("d", 4)
    cache.flush()
    assert rows(path)["d"] == "4"
    cache.put("e", 5)
    cache.put_many({"f": 6})  # put_many commits at once, with what was pending
    assert set(rows(path)) == {"a", "b", "c", "d", "e", "f"}
    cache.close()


def test_leaving_the_with_block_commits_pending_entries(path):
    with open_json(path, batch_size=100) as cache:
        cache.put("a", 1)
        assert rows(path) == {}
    assert rows(path) == {"a": "1"}


def test_a_normal_exit_commits_what_nobody_flushed(path):
    script = (
        "import sys; from pathlib import Path; "
        "from indexes.sqlite_cache import JSON, SqliteCache, Table; "
        "t = Table('entries', key_type='TEXT', value_column='value', value_type='TEXT'); "
        "c = SqliteCache(Path(sys.argv[1]), t, JSON, label='test cache', batch_size=100); "
        "c.put('a', {'x': 1}); c.put('b', 2)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, cwd=ROOT, env=env, timeout=120)
    assert rows(path) == {"a": '{"x": 1}', "b": "2"}


def test_batch_size_must_be_positive(path):
    with pytest.raises(ValueError, match="batch_size"):
        open_json(path, batch_size=0)


# -- concurrency ---------------------------------------------------------------------------------


def test_two_readers_read_committed_entries_while_a_writer_holds_its_transaction(path):
    with open_json(path) as cache:
        cache.put_many({"a": 1})
    writer = sqlite3.connect(path, isolation_level=None)
    assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("""INSERT INTO entries VALUES ('b', '2')""")
    # A short busy timeout: were a reader blocked by the writer, its read would fail and read
    # as a miss of "a" too.
    first, second = open_json(path, timeout=0.05), open_json(path, timeout=0.05)
    assert first.get_many(["a", "b"]) == {"a": 1} == second.get_many(["a", "b"])
    writer.execute("COMMIT")
    assert first.get_many(["a", "b"]) == {"a": 1, "b": 2} == second.get_many(["a", "b"])
    writer.close()
    first.close()
    second.close()


def test_readers_in_threads_see_whole_values_while_one_writer_writes(path, caplog):
    writer = open_json(path, batch_size=7)
    readers = [open_json(path), open_json(path)]  # separate connections, as separate processes have
    errors: list[str] = []
    done = threading.Event()

    def read(cache: SqliteCache[str, object]) -> None:
        while not done.is_set():
            for key, value in cache.get_many([f"k{i}" for i in range(300)]).items():
                if value != {"i": int(key[1:]), "text": "x" * int(key[1:])}:
                    errors.append(f"{key}: {value}")

    threads = [threading.Thread(target=read, args=(r,)) for r in readers]
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        for thread in threads:
            thread.start()
        for i in range(300):
            writer.put(f"k{i}", {"i": i, "text": "x" * i})
        writer.close()
        done.set()
        for thread in threads:
            thread.join()
    assert errors == []
    # no read was turned into a miss by a lock (the cache's own records: a Ray thread left by an
    # earlier test may log its dashboard's connection errors into caplog meanwhile)
    assert [r.getMessage() for r in caplog.records if r.name == "indexes.sqlite_cache"] == []
    assert [len(r.get_many([f"k{i}" for i in range(300)])) for r in readers] == [300, 300]
    for reader in readers:
        reader.close()


def test_threads_share_one_cache_object(path):
    cache = open_json(path, batch_size=5)

    def work(t: int) -> None:
        for i in range(40):
            cache.put(f"{t}:{i}", i)
            assert cache.get(f"{t}:{i}") == i

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 160
    cache.close()


# -- broken files and failing operations -----------------------------------------------------------


def test_a_garbage_file_is_moved_aside_and_rebuilt(path, caplog):
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 300)
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        cache = open_json(path)
    (aside,) = cache.recovered
    assert aside.name.startswith("test.sqlite.corrupt-")
    assert aside.read_bytes().startswith(b"this is not a database")  # nothing lost
    assert f"test cache {path} is unreadable" in caplog.text and f"moved it to {aside}" in caplog.text
    assert len(cache) == 0
    cache.put_many({"a": 1})
    assert cache.get("a") == 1
    cache.close()


def test_a_second_broken_copy_never_overwrites_the_first(path):
    path.parent.mkdir(parents=True)
    path.write_bytes(b"first garbage" * 400)
    first = open_json(path)
    first.close()
    path.write_bytes(b"second garbage" * 400)
    second = open_json(path)
    second.close()
    assert first.recovered[0] != second.recovered[0]
    assert first.recovered[0].read_bytes().startswith(b"first garbage")
    assert second.recovered[0].read_bytes().startswith(b"second garbage")


def test_a_foreign_table_is_moved_aside_even_by_a_strict_cache(path, caplog):
    path.parent.mkdir(parents=True)
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE entries (id INTEGER, payload BLOB, extra TEXT)")
    other.commit()
    other.close()
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        cache = open_json(path, strict=True)
    assert "not a test cache" in caplog.text and "['id', 'payload', 'extra']" in caplog.text
    assert len(cache.recovered) == 1
    cache.put_many({"a": 1})
    assert cache.get("a") == 1
    cache.close()


@pytest.mark.parametrize("strict", [False, True])
def test_corruption_found_mid_use_rebuilds_instead_of_crashing(path, caplog, strict):
    first = open_json(path)
    first.put_many({f"k{i}": "x" * 50 for i in range(2000)})
    first.close()  # checkpoints the WAL into the main file
    cache = open_json(path, strict=strict)
    size = path.stat().st_size
    smash_data_pages(path)
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        assert cache.get_many(["k1", "k1500"]) == {}
    assert "malformed" in caplog.text and "moved it to" in caplog.text
    assert len(cache.recovered) == 1 and cache.recovered[0].stat().st_size == size
    cache.put_many({"a": 1})
    assert cache.get("a") == 1
    cache.close()


def test_a_locked_file_is_a_miss_for_a_best_effort_cache_and_an_error_for_a_strict_one(path, caplog):
    relaxed, strict = open_json(path, timeout=0.01), open_json(path, timeout=0.01, strict=True)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        relaxed.put_many({"a": 1})
    assert "treating it as a miss" in caplog.text
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        strict.put_many({"a": 1})
    writer.execute("ROLLBACK")
    writer.close()
    assert relaxed.get("a") is None and strict.get("a") is None  # the failed batches were dropped
    assert relaxed.recovered == [] and strict.recovered == []  # a lock is not corruption
    relaxed.put_many({"a": 1})  # works again once the lock is gone
    assert strict.get("a") == 1
    relaxed.close()
    strict.close()


def test_an_impossible_location_is_a_config_error_or_the_os_error_when_strict(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="test cache folder"):
        open_json(blocker / "test.sqlite")
    with pytest.raises(OSError):
        open_json(blocker / "test.sqlite", strict=True)
    assert blocker.read_text() == "x"


def test_a_closed_cache_reads_as_empty_and_keeps_its_file(path):
    cache = open_json(path)
    cache.put_many({"a": 1})
    cache.close()
    assert cache.get("a") is None and len(cache) == 0
    assert rows(path) == {"a": "1"}


def test_writing_to_a_closed_cache_is_an_error_not_a_silent_loss(path):
    cache = open_json(path)
    cache.close()
    with pytest.raises(ValueError, match="is closed"):
        cache.put("a", 1)
    with pytest.raises(ValueError, match="is closed"):
        cache.put_many({"b": 2})
    assert rows(path) == {}
