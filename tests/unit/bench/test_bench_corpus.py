"""The benchmark corpora: seeded samples and the synthetic expansion are deterministic and documented."""

import numpy as np
import pytest

from bench.retrieval.corpus import (
    chunk_count,
    perturb_tokens,
    perturb_vectors,
    sample_rows,
    synthetic_bases,
    synthetic_chunk,
)
from core.types import Chunk

# three chunks of 3, 2 and 4 tokens, ids into a vocabulary of 10
TOKEN_IDS = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8], dtype=np.int32)
TOKEN_OFFSETS = np.array([0, 3, 5, 9], dtype=np.int64)


def test_sizes_parse_from_k_and_m():
    assert chunk_count("10k") == 10_000
    assert chunk_count("100k") == 100_000
    assert chunk_count("1M") == 1_000_000
    for bad in ("1m", "k", "1.5M", "100"):
        with pytest.raises(ValueError, match="whole number followed by k or M"):
            chunk_count(bad)


def test_sample_rows_are_seeded_sorted_and_distinct():
    a, b = sample_rows(1000, 100), sample_rows(1000, 100)
    assert a.tolist() == b.tolist()
    assert len(set(a.tolist())) == 100 and a.tolist() == sorted(a.tolist())
    assert sample_rows(1000, 100, seed=1).tolist() != a.tolist()
    assert sample_rows(50, 100).tolist() == list(range(50))  # the whole pool when it is smaller


def test_copies_keep_their_origin_length_and_replace_about_p_of_tokens():
    bases = np.array([2, 0, 1, 2])
    ids, offsets = perturb_tokens(TOKEN_IDS, TOKEN_OFFSETS, bases, np.random.default_rng(0), p=0.0)
    assert offsets.tolist() == [0, 4, 7, 9, 13]
    assert ids.tolist() == [5, 6, 7, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]  # chunk 2, chunk 0, chunk 1, chunk 2
    many = synthetic_bases(3, 20_000)
    ids, _ = perturb_tokens(TOKEN_IDS, TOKEN_OFFSETS, many, np.random.default_rng(0), p=0.2)
    kept, _ = perturb_tokens(TOKEN_IDS, TOKEN_OFFSETS, many, np.random.default_rng(0), p=0.0)
    # a replacement is a unigram draw, so 1 in 9 replacements happens to draw the same token
    changed = float(np.mean(ids != kept))
    assert changed == pytest.approx(0.2 * 8 / 9, abs=0.01)
    assert set(ids.tolist()) <= set(TOKEN_IDS.tolist())


def test_perturbation_is_deterministic_for_a_seed():
    bases = synthetic_bases(3, 50)
    assert bases.tolist() == synthetic_bases(3, 50).tolist()
    one = perturb_tokens(TOKEN_IDS, TOKEN_OFFSETS, bases, np.random.default_rng([0, 2, 0]), p=0.2)
    two = perturb_tokens(TOKEN_IDS, TOKEN_OFFSETS, bases, np.random.default_rng([0, 2, 0]), p=0.2)
    assert one[0].tolist() == two[0].tolist()


def test_perturbed_vectors_are_unit_length_and_near_their_origin():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bases = np.repeat(np.arange(5), 200)
    out = perturb_vectors(vectors, bases, np.random.default_rng(0), sigma=0.025)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    cosine = np.sum(out * vectors[bases], axis=1)
    assert float(np.mean(cosine)) == pytest.approx(1 / np.sqrt(1 + 384 * 0.025**2), abs=0.01)
    again = perturb_vectors(vectors, bases, np.random.default_rng(0), sigma=0.025)
    assert np.array_equal(out, again)


def test_a_synthetic_chunk_names_its_origin_and_holds_its_tokens():
    base = Chunk(
        "d#3", "d", "Marfan syndrome", ("Summary",), "orphanet", "https://x", "CC-BY-4.0", 0, 9, "text"
    )
    chunk = synthetic_chunk(7, base, ["fbn1", "aorta"])
    assert chunk.chunk_id == "synthetic-7#0" and chunk.source == "synthetic"
    assert chunk.text == "fbn1 aorta" and chunk.end == len("fbn1 aorta")
    assert "d#3" in chunk.title and chunk.license == "CC-BY-4.0"
