"""Cache files written before ``indexes/sqlite_cache.py`` existed still load, with the same keys and values.

Each test writes a file with plain sqlite3 exactly as the old module did (its schema, its key
formula, its value encoding; see ``git show 8ce269b:<module>``), then reads it through the new
code, which must answer from the file without asking the model or the embedder. A file the new
code writes must in turn be readable the old way (a branch switch back keeps working).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.types import Generation, Message
from evals.engine.generation_cache import CachingGenerator
from evals.engine.judge.cache import CachedJudge, JudgeCache
from indexes.dense.embedding_cache import embed_cached
from rag.generate.yes_no import NO, YES
from rag.rerank.cache import ScoreCache
from rag.rerank.llm import LlmRelevanceReranker, relevance_messages
from tests.helpers import HashEmbedder, hits_from

FINGERPRINT = {"name": "old-model", "sha256": "c" * 64, "path": "/models/qwen.gguf"}
MESSAGES = [Message("system", "Réponds brièvement."), Message("user", "What treats gout? — naïve question")]


class MustNotBeAsked:
    """A generator whose every answer must come from the cache."""

    name = "must-not-be-asked"

    def __init__(self) -> None:
        self.calls = 0

    def fingerprint(self) -> dict[str, Any]:
        return FINGERPRINT

    def generate(self, messages: Sequence[Message], **kw: Any) -> Generation:
        self.calls += 1
        return Generation(text="fresh answer", prompt_tokens=1, completion_tokens=1, seconds=1.0)

    def stream(self, messages: Sequence[Message], **kw: Any) -> Any:
        yield self.generate(messages, **kw).text

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        self.calls += 1
        return dict.fromkeys(candidates, -1.0)


def old_sha256_json(value: object, **kw: Any) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False, **kw).encode("utf-8")
    ).hexdigest()


# -- rag/rerank/cache.py + rag/rerank/llm.py ------------------------------------------------------


def test_old_score_cache_file_answers_the_llm_reranker(tmp_path):
    path = tmp_path / "rerank.sqlite"
    passages = {"gout#0": "Colchicine treats acute gout.", "af#0": "Anticoagulation for atrial fibrillation."}
    hits = hits_from(passages)
    model = old_sha256_json(FINGERPRINT, default=str)[:16]  # the old LlmRelevanceReranker's keys
    old_scores = {"gout#0": 0.875, "af#0": 0.125}
    conn = sqlite3.connect(path, isolation_level=None)  # the old ScoreCache._connect / put_many
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, score REAL NOT NULL) WITHOUT ROWID"
    )
    for hit in hits:
        msgs = relevance_messages("What treats gout?", hit.chunk, 1500)
        key = f"{model}:{old_sha256_json([(m.role, m.content) for m in msgs] + [YES, NO], default=str)}"
        conn.execute(
            "INSERT OR REPLACE INTO scores (key, score) VALUES (?, ?)", (key, old_scores[hit.chunk.chunk_id])
        )
    conn.close()

    generator = MustNotBeAsked()
    reranker = LlmRelevanceReranker(generator, cache=ScoreCache(path))  # type: ignore[arg-type]
    ranked, stats = reranker.rerank_with_stats("What treats gout?", hits)
    assert generator.calls == 0 and stats.cache_hits == 2
    assert {h.chunk.chunk_id: h.score for h in ranked} == old_scores


def test_new_score_cache_file_reads_the_old_way(tmp_path):
    path = tmp_path / "rerank.sqlite"
    cache = ScoreCache(path)
    cache.put_many({"m:k": 0.5})
    cache.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT key, score FROM scores WHERE key IN (?)", ["m:k"]).fetchall() == [
        ("m:k", 0.5)
    ]
    conn.close()


# -- evals/engine/generation_cache.py --------------------------------------------------------------------


def old_generation_key(method: str, messages: Sequence[Message], params: dict[str, Any]) -> str:
    payload = {
        "model": FINGERPRINT,
        "method": method,
        "messages": [[m.role, m.content] for m in messages],
        "params": params,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def write_old_generations(path: Path) -> None:
    """As the old CachingGenerator did: default journal mode, rowid table, json.dumps values."""
    db = sqlite3.connect(path, check_same_thread=False)
    db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.commit()
    answer = {
        "text": "Colchicine — first line [1].",
        "prompt_tokens": 40,
        "completion_tokens": 7,
        "seconds": 12.5,
        "finish_reason": "stop",
    }
    key = old_generation_key("generate", MESSAGES, {"max_tokens": 64, "stop": ["\n\n"]})
    db.execute("INSERT OR REPLACE INTO generations (key, value) VALUES (?, ?)", (key, json.dumps(answer)))
    key = old_generation_key("next_token_logprobs", MESSAGES, {"candidates": ["A", "B", "C"]})
    logprobs = {"A": -0.25, "B": None, "C": -3.0}  # None: the old encoding of -inf
    db.execute("INSERT OR REPLACE INTO generations (key, value) VALUES (?, ?)", (key, json.dumps(logprobs)))
    db.commit()
    db.close()


def test_old_generation_cache_file_answers_without_the_model(tmp_path):
    path = tmp_path / "generations.sqlite"
    write_old_generations(path)
    inner = MustNotBeAsked()
    cached = CachingGenerator(inner, path)  # type: ignore[arg-type]
    generation = cached.generate(MESSAGES, max_tokens=64, stop=["\n\n"])
    assert generation == Generation("Colchicine — first line [1].", 40, 7, 0.0, "stop")
    assert cached.next_token_logprobs(MESSAGES, ["A", "B", "C"]) == {"A": -0.25, "B": -math.inf, "C": -3.0}
    assert (inner.calls, cached.hits, cached.misses) == (0, 2, 0)

    fresh = cached.generate(MESSAGES, max_tokens=65, stop=["\n\n"])  # another parameter: a miss
    assert fresh.text == "fresh answer" and inner.calls == 1 and cached.misses == 1
    cached.close()
    db = sqlite3.connect(path)  # the new entry, read the old way
    key = old_generation_key("generate", MESSAGES, {"max_tokens": 65, "stop": ["\n\n"]})
    (value,) = db.execute("SELECT value FROM generations WHERE key = ?", (key,)).fetchone()
    db.close()
    assert json.loads(value)["text"] == "fresh answer"


def test_a_corrupt_generation_cache_is_moved_aside_and_the_run_goes_on(tmp_path, caplog):
    path = tmp_path / "generations.sqlite"
    path.write_bytes(b"\x00not sqlite" * 500)
    inner = MustNotBeAsked()
    with caplog.at_level(logging.WARNING):
        cached = CachingGenerator(inner, path)  # type: ignore[arg-type]
    assert f"generation cache {path} is unreadable" in caplog.text and ".corrupt-" in caplog.text
    assert cached.generate(MESSAGES, max_tokens=8).text == "fresh answer"
    cached.close()
    (aside,) = tmp_path.glob("generations.sqlite.corrupt-*")
    assert aside.read_bytes().startswith(b"\x00not sqlite")


# -- evals/engine/judge/cache.py -------------------------------------------------------------------------


def test_old_judge_cache_file_answers_without_the_judge(tmp_path):
    path = tmp_path / "judge.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)  # the old JudgeCache.__init__ / put
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
    payload = {
        "messages": [[m.role, m.content] for m in MESSAGES],
        "max_tokens": 32,
        "temperature": 0.0,
        "stop": [],
    }
    key = old_sha256_json({"judge": FINGERPRINT, "kind": "generate", **payload})
    verdict = {"text": "Verdict: oui", "prompt_tokens": 9, "completion_tokens": 3, "finish_reason": "stop"}
    text = json.dumps(verdict, ensure_ascii=False, allow_nan=False)
    conn.execute("INSERT OR REPLACE INTO calls (key, value) VALUES (?, ?)", (key, text))
    plain = [[m.role, m.content] for m in MESSAGES]
    key = old_sha256_json(
        {"judge": FINGERPRINT, "kind": "logprobs", "messages": plain, "candidates": ["yes", "no"]}
    )
    conn.execute(
        "INSERT OR REPLACE INTO calls (key, value) VALUES (?, ?)", (key, '{"yes": -0.5, "no": null}')
    )
    conn.close()

    judge = MustNotBeAsked()
    cached = CachedJudge(judge, JudgeCache(path))  # type: ignore[arg-type]
    assert cached.generate(MESSAGES, max_tokens=32) == Generation("Verdict: oui", 9, 3, 0.0, "stop")
    assert cached.next_token_logprobs(MESSAGES, ["yes", "no"]) == {"yes": -0.5, "no": -math.inf}
    assert (judge.calls, cached.hits, cached.calls) == (0, 2, 0)
    assert len(cached.cache) == 2
    cached.cache.close()


# -- indexes/dense/embedding_cache.py -------------------------------------------------------------------


class MustNotEmbed(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError(f"asked to embed {len(texts)} texts that the old cache holds")


def test_old_embedding_cache_file_gives_back_its_vectors(tmp_path):
    texts = ["Marfan syndrome is a connective tissue disorder.", "Goutte : colchicine", "x" * 3000]
    old = HashEmbedder().embed(texts) * 3  # not what the embedder would compute: must come from the file
    path = tmp_path / HashEmbedder.weights_sha256[:16] / "vectors.sqlite"
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path)  # the old VectorStore.__init__ / put_many
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
    db.commit()
    rows = (
        (hashlib.sha256(t.encode("utf-8")).digest(), np.ascontiguousarray(v, dtype=np.float32).tobytes())
        for t, v in zip(texts, old, strict=True)
    )
    db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)
    db.commit()
    db.close()

    vectors, reused = embed_cached(MustNotEmbed(), texts, tmp_path, progress=False)
    assert reused == 3
    np.testing.assert_array_equal(vectors, old.astype(np.float32))


def test_new_embedding_cache_rows_read_the_old_way(tmp_path):
    embed_cached(HashEmbedder(), ["a text"], tmp_path, progress=False)
    (path,) = tmp_path.rglob("vectors.sqlite")
    db = sqlite3.connect(path)
    blob = db.execute(
        "SELECT vector FROM vectors WHERE key IN (?)", [hashlib.sha256(b"a text").digest()]
    ).fetchone()[0]
    db.close()
    np.testing.assert_array_equal(np.frombuffer(blob, dtype=np.float32), HashEmbedder().embed(["a text"])[0])


@pytest.mark.parametrize("table", ["scores", "generations", "calls", "vectors"])
def test_a_table_with_other_columns_is_moved_aside_not_misread(tmp_path, caplog, table):
    """Should an older layout ever turn up, it is kept under another name and the cache rebuilt."""
    folder = tmp_path / HashEmbedder.weights_sha256[:16]
    folder.mkdir()
    name = {
        "scores": "rerank.sqlite",
        "generations": "g.sqlite",
        "calls": "j.sqlite",
        "vectors": "vectors.sqlite",
    }
    path = folder / name[table]
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE {table} (key TEXT PRIMARY KEY, payload BLOB, created REAL)")
    db.execute(f"INSERT INTO {table} VALUES ('k', x'01', 0)")
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING):
        if table == "scores":
            ScoreCache(path).close()
        elif table == "generations":
            CachingGenerator(MustNotBeAsked(), path).close()  # type: ignore[arg-type]
        elif table == "calls":
            JudgeCache(path).close()
        else:
            embed_cached(HashEmbedder(), ["t"], tmp_path, progress=False)
    assert f"{path} is unreadable" in caplog.text and "['key', 'payload', 'created']" in caplog.text
    (aside,) = folder.glob(f"{path.name}.corrupt-*")
    db = sqlite3.connect(aside)
    assert db.execute(f"SELECT key FROM {table}").fetchall() == [("k",)]
    db.close()
