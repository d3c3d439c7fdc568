import numpy as np
import pytest

from core.errors import ConfigError
from indexes.dense.index import DenseIndex, DenseParams


def _vectors(n=500, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_flat_search_is_exact_and_round_trips(tmp_path):
    vectors = _vectors()
    index = DenseIndex.build(vectors, DenseParams(kind="flat"))
    rows, scores = index.search(vectors[7], 5)
    expected = np.argsort(-(vectors @ vectors[7]), kind="stable")[:5]
    assert rows.tolist() == expected.tolist() and scores[0] == pytest.approx(1.0, abs=1e-5)
    index.save(tmp_path)
    again = DenseIndex.load(tmp_path)
    assert again.search(vectors[7], 5)[0].tolist() == rows.tolist()


def test_hnsw_finds_nearly_all_exact_neighbours():
    vectors = _vectors(2000, 32, seed=1)
    flat = DenseIndex.build(vectors, DenseParams(kind="flat"))
    hnsw = DenseIndex.build(vectors, DenseParams(kind="hnsw"))
    overlap = [len(set(flat.search(q, 10)[0]) & set(hnsw.search(q, 10)[0])) / 10 for q in vectors[:50]]
    assert np.mean(overlap) >= 0.95


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_mask_restricts_search_to_allowed_rows(kind):
    vectors = _vectors(300)
    index = DenseIndex.build(vectors, DenseParams(kind=kind))
    allowed = np.zeros(300, dtype=bool)
    allowed[[3, 50, 299]] = True
    rows, _ = index.search(vectors[0], 10, allowed)
    assert set(rows.tolist()) == {3, 50, 299}
    assert index.search(vectors[0], 10, np.zeros(300, dtype=bool))[0].size == 0


def test_unknown_kind_is_refused():
    with pytest.raises(ConfigError, match="flat or hnsw"):
        DenseParams(kind="ivf-magic")
