"""The sharded copy of a benchmark corpus is built from its rows made again: they must be the built ones."""

from __future__ import annotations

import json

import numpy as np

from bench.retrieval import corpus, materialize
from core.types import Chunk


def tiny_pool(folder, n: int = 30) -> corpus.Pool:
    """``n`` real-looking chunks with token ids into a vocabulary of 50 and unit vectors of 8."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 9, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    token_ids = rng.integers(0, 50, size=int(offsets[-1])).astype(np.int32)
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    lines = [
        (
            json.dumps(Chunk(f"c{i}#0", f"c{i}", f"t{i}", (), "test", "", "cc0", 0, 1, "x").to_json()) + "\n"
        ).encode()
        for i in range(n)
    ]
    (folder / "chunks.jsonl").write_bytes(b"".join(lines))
    line_offsets = np.concatenate([[0], np.cumsum([len(line) for line in lines])]).astype(np.int64)
    return corpus.Pool(folder, line_offsets, token_ids, offsets, [f"w{i}" for i in range(50)], vectors, {})


def test_tokens_and_vectors_made_again_are_the_ones_the_folder_was_built_from(tmp_path, monkeypatch):
    monkeypatch.setattr(materialize, "BLOCK", 300)  # several seeded blocks in a small corpus
    pool = tiny_pool(tmp_path)
    (tmp_path / "out").mkdir()
    built_tokens, built_vectors = materialize._chunks_and_tokens("1k", pool, tmp_path / "out")
    tokens, vectors = materialize.tokens_and_vectors("1k", pool)
    assert len(tokens) == 1000 and tokens == built_tokens
    np.testing.assert_array_equal(vectors, built_vectors)
    assert tokens[pool.size :] != [tokens[0]] * (1000 - pool.size)  # synthetic rows, not one copy
