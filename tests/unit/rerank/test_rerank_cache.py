"""The llm reranker's score cache over indexes/sqlite_cache.py: round trips, non-finite scores,
concurrent readers, and recovery from a broken file (the mechanism itself: test_sqlite_cache.py)."""

from __future__ import annotations

import logging
import math
import sqlite3
import threading

import pytest

from core.errors import ConfigError
from rag.rerank.cache import ScoreCache
from tests.helpers import smash_data_pages


@pytest.fixture
def path(tmp_path):
    return tmp_path / "cache" / "rerank.sqlite"


def test_round_trip_and_persistence(path):
    cache = ScoreCache(path)
    cache.put_many({"a": 0.25, "b": 1.0})
    assert cache.get_many(["a", "b", "missing"]) == {"a": 0.25, "b": 1.0}
    cache.put_many({"a": 0.75})  # replace
    cache.close()
    reopened = ScoreCache(path)
    assert reopened.get_many(["a", "b"]) == {"a": 0.75, "b": 1.0}
    assert len(reopened) == 2


def test_many_keys_and_non_finite_scores(path):
    cache = ScoreCache(path)
    cache.put_many({f"k{i}": i / 1000 for i in range(1200)})  # more keys than one statement binds
    cache.put_many({"nan": math.nan, "inf": math.inf})
    found = cache.get_many([f"k{i}" for i in range(1200)] + ["nan", "inf"])
    assert len(found) == 1200
    assert found["k1199"] == 1199 / 1000
    assert len(cache) == 1200


def test_wal_mode_lets_a_reader_read_while_a_writer_holds_a_transaction(path):
    ScoreCache(path).put_many({"a": 0.5})
    writer = sqlite3.connect(path, isolation_level=None)
    assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO scores VALUES ('b', 0.9)")
    reader = ScoreCache(path, timeout=0.01)  # were the read blocked, it would fail and miss "a" too
    assert reader.get_many(["a", "b"]) == {"a": 0.5}  # committed data only
    writer.execute("COMMIT")
    assert reader.get_many(["a", "b"]) == {"a": 0.5, "b": 0.9}


def test_a_locked_cache_skips_the_write_without_failing(path, caplog):
    cache = ScoreCache(path, timeout=0.05)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        cache.put_many({"a": 0.5})
    writer.execute("ROLLBACK")
    assert "treating it as a miss" in caplog.text
    assert cache.get_many(["a"]) == {}
    cache.put_many({"a": 0.5})  # works again once the lock is gone
    assert cache.get_many(["a"]) == {"a": 0.5}


def test_threads_share_one_cache(path):
    cache = ScoreCache(path)

    def work(t: int) -> None:
        for i in range(50):
            cache.put_many({f"{t}:{i}": i / 50})
            cache.get_many([f"{t}:{i}"])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 4 * 50


def test_garbage_file_is_moved_aside_and_rebuilt(path, caplog):
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 300)
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        cache = ScoreCache(path)
    assert len(cache.recovered) == 1
    assert cache.recovered[0].read_bytes().startswith(b"this is not a database")
    assert "moved it to" in caplog.text
    assert len(cache) == 0
    cache.put_many({"a": 0.5})
    assert cache.get_many(["a"]) == {"a": 0.5}


def test_a_foreign_sqlite_file_is_moved_aside(path):
    path.parent.mkdir(parents=True)
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE scores (id INTEGER, value BLOB, extra TEXT)")
    other.commit()
    other.close()
    cache = ScoreCache(path)
    assert len(cache.recovered) == 1
    cache.put_many({"a": 0.5})
    assert cache.get_many(["a"]) == {"a": 0.5}


def test_corruption_found_during_use_rebuilds_instead_of_crashing(path, caplog):
    first = ScoreCache(path)
    first.put_many({f"k{i}": i for i in range(2000)})
    first.close()  # checkpoints the WAL into the main file
    cache = ScoreCache(path)
    smash_data_pages(path)
    with caplog.at_level(logging.WARNING, logger="indexes.sqlite_cache"):
        assert cache.get_many(["k1", "k1500"]) == {}
    assert "malformed" in caplog.text
    assert len(cache.recovered) == 1
    cache.put_many({"a": 0.5})
    assert cache.get_many(["a"]) == {"a": 0.5}


def test_an_impossible_location_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="score cache"):
        ScoreCache(blocker / "rerank.sqlite")
