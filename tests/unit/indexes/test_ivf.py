"""IVF-PQ dense kind: build/save/load, shards merged == one piece, re-scoring, filters, corruption."""

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest

from core.errors import ConfigError, IndexCorruptError
from indexes.dense import ivf
from indexes.dense.index import DenseIndex, DenseParams

DIM = 32
PARAMS = DenseParams(kind="ivfpq", nlist=16, pq_m=8, pq_nbits=6, nprobe=8, rescore=100, train_size=2000)


@pytest.fixture(scope="module", autouse=True)
def one_faiss_thread():
    """Small builds are slower with threads spinning on a shared machine; restored afterwards."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def _clustered(n=3000, seed=0):
    """Unit vectors around 40 centres: near neighbours exist, as with real embeddings."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


VECTORS = _clustered()
QUERIES = _clustered(40, seed=1)


def _exact_top(query, k=10, rows=None):
    rows = np.arange(len(VECTORS)) if rows is None else rows
    scores = VECTORS[rows] @ query
    return rows[np.argsort(-scores, kind="stable")[:k]]


def _recall(index, k=10):
    return np.mean([len(set(index.search(q, k)[0]) & set(_exact_top(q, k))) / k for q in QUERIES])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    index = DenseIndex.build(VECTORS, PARAMS)
    folder = tmp_path_factory.mktemp("ivf") / "dense"
    index.save(folder)
    return index, folder


def test_build_save_load_round_trip(built):
    index, folder = built
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["index.faiss", "lists.ivfdata", "ivf.json", "medcite_dense.json", "vectors.f16.npy"]
    )
    loaded = DenseIndex.load(folder)
    assert (loaded.size, loaded.dim, loaded.params) == (len(VECTORS), DIM, PARAMS)
    for q in QUERIES[:10]:
        a, b = index.search(q, 10), loaded.search(q, 10)
        assert a[0].tolist() == b[0].tolist() and np.allclose(a[1], b[1])
    np.testing.assert_allclose(loaded.reconstruct(5, 3), VECTORS[5:8], atol=1e-3)  # float16 file


def test_float32_rescoring_file(tmp_path):
    params = replace(PARAMS, rescore_dtype="float32")
    DenseIndex.build(VECTORS, params).save(tmp_path / "dense")
    assert (tmp_path / "dense" / "vectors.f32.npy").is_file()
    np.testing.assert_array_equal(DenseIndex.load(tmp_path / "dense").reconstruct(0, 4), VECTORS[:4])


def _sharded(tmp_path, bounds, name):
    trained = tmp_path / "trained.faiss"
    if not trained.exists():
        ivf.train_ivfpq(ivf.training_sample(VECTORS, PARAMS), PARAMS, trained)
    np.save(tmp_path / "vectors.npy", VECTORS, allow_pickle=False)
    shards = []
    for s, (start, end) in enumerate(itertools.pairwise(bounds)):
        shards.append(tmp_path / f"{name}-{s}.faiss")
        ivf.add_ivfpq_shard(trained, VECTORS[start:end], start, shards[-1])
    ivf.merge_ivfpq(trained, shards[::-1], tmp_path / name, tmp_path / "vectors.npy")  # any order
    return DenseIndex.load(tmp_path / name)


@pytest.mark.parametrize("rescore", [0, 100])
def test_shards_merged_return_what_one_piece_returns(tmp_path, rescore):
    one = _sharded(tmp_path, [0, len(VECTORS)], "one")
    merged = _sharded(tmp_path, [0, 700, 1900, 2000, len(VECTORS)], "merged")
    assert merged.size == one.size == len(VECTORS)
    for index in (one, merged):
        index.params = replace(PARAMS, rescore=rescore)
    for q in QUERIES:
        a, b = one.search(q, 10), merged.search(q, 10)
        assert a[0].tolist() == b[0].tolist()
        np.testing.assert_array_equal(a[1], b[1])


def test_shards_that_miss_or_repeat_rows_are_refused(tmp_path):
    trained = tmp_path / "trained.faiss"
    ivf.train_ivfpq(VECTORS[:2000], PARAMS, trained)
    ivf.add_ivfpq_shard(trained, VECTORS[:100], 0, tmp_path / "a.faiss")
    ivf.add_ivfpq_shard(trained, VECTORS[150:200], 150, tmp_path / "b.faiss")
    ivf.add_ivfpq_shard(trained, VECTORS[50:150], 50, tmp_path / "c.faiss")
    with pytest.raises(ConfigError, match="uncovered or overlap"):
        ivf.merge_ivfpq(trained, [tmp_path / "a.faiss", tmp_path / "b.faiss"], tmp_path / "gap", None)
    with pytest.raises(ConfigError, match="uncovered or overlap"):
        ivf.merge_ivfpq(trained, [tmp_path / "a.faiss", tmp_path / "c.faiss"], tmp_path / "overlap", None)
    assert not (tmp_path / "gap").exists() and not (tmp_path / "overlap").exists()


def test_rescoring_raises_recall(built):
    index = DenseIndex.load(built[1])
    index.params = replace(PARAMS, rescore=0)
    plain = _recall(index)
    index.params = PARAMS
    rescored = _recall(index)
    assert rescored >= plain + 0.2 and rescored >= 0.85, (plain, rescored)


def test_without_vectors_file_search_uses_codes_and_reconstruct_refuses(tmp_path):
    trained = tmp_path / "trained.faiss"
    ivf.train_ivfpq(VECTORS[:2000], PARAMS, trained)
    ivf.add_ivfpq_shard(trained, VECTORS, 0, tmp_path / "s.faiss")
    ivf.merge_ivfpq(trained, [tmp_path / "s.faiss"], tmp_path / "dense", None)
    index = DenseIndex.load(tmp_path / "dense")
    rows, scores = index.search(QUERIES[0], 10)
    assert len(rows) == 10 and np.all(np.diff(scores) <= 0)
    with pytest.raises(ConfigError, match="without its vectors file"):
        index.reconstruct(0, 1)


def test_narrow_filter_is_exact_among_allowed_rows(built):
    index = DenseIndex.load(built[1])
    allowed = np.zeros(len(VECTORS), dtype=bool)
    picked = np.random.default_rng(2).choice(len(VECTORS), 25, replace=False)
    allowed[picked] = True
    rows, _ = index.search(QUERIES[0], 10, allowed)
    assert rows.tolist() == _exact_top(QUERIES[0], 10, np.sort(picked)).tolist()
    assert index.search(QUERIES[0], 10, np.zeros(len(VECTORS), dtype=bool))[0].size == 0


def test_wide_filter_goes_through_the_ivf_selector(built, monkeypatch):
    monkeypatch.setattr(ivf, "EXACT_FILTER_ROWS", 0)
    index = DenseIndex.load(built[1])
    allowed = np.arange(len(VECTORS)) % 2 == 1
    for q in QUERIES[:10]:
        rows, _ = index.search(q, 10, allowed)
        assert len(rows) == 10 and allowed[rows].all()
    unfiltered = [index.search(q, 10)[0] for q in QUERIES[:10]]
    assert any((r % 2 == 0).any() for r in unfiltered)  # the filter did change something


def test_renamed_folder_still_loads(built, tmp_path):
    import shutil

    shutil.copytree(built[1], tmp_path / "copy")
    (tmp_path / "copy").rename(tmp_path / "moved")
    moved = DenseIndex.load(tmp_path / "moved")
    for q in QUERIES[:5]:
        assert moved.search(q, 10)[0].tolist() == built[0].search(q, 10)[0].tolist()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "lists.ivfdata").unlink(), "lists or ivf.json missing"),
        (lambda f: _truncate(f / "lists.ivfdata"), "bytes,"),
        (lambda f: (f / "ivf.json").unlink(), "lists or ivf.json missing"),
        (lambda f: (f / "vectors.f16.npy").unlink(), "re-scoring vectors unreadable"),
        (lambda f: _truncate(f / "vectors.f16.npy"), "re-scoring vectors unreadable"),
        (lambda f: (f / "index.faiss").write_bytes(b"not faiss"), "cannot read the FAISS index"),
    ],
)
def test_damaged_folder_gives_index_corrupt_error(built, tmp_path, damage, message):
    import shutil

    folder = tmp_path / "dense"
    shutil.copytree(built[1], folder)
    damage(folder)
    with pytest.raises(IndexCorruptError, match=message):
        DenseIndex.load(folder)


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_loaded_index_cannot_be_saved_over(built, tmp_path):
    with pytest.raises(ConfigError, match="copy its folder"):
        DenseIndex.load(built[1]).save(tmp_path / "again")


def test_metadata_records_rows_and_sizes(built):
    meta = json.loads((built[1] / "ivf.json").read_text())
    assert meta["rows"] == len(VECTORS)
    assert meta["lists_bytes"] == (built[1] / "lists.ivfdata").stat().st_size


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nprobe": 32}, "exceeds nlist"),
        ({"rescore": -1}, "rescore must be"),
        ({"rescore_dtype": "int8"}, "float16 or float32"),
        ({"pq_nbits": 0}, "outside 1..16"),
        ({"nlist": 0}, "at least 1"),
    ],
)
def test_invalid_params_are_refused(change, message):
    with pytest.raises(ConfigError, match=message):
        replace(PARAMS, **change)


def test_shapes_faiss_cannot_train_are_refused_before_training():
    with pytest.raises(ConfigError, match="must divide"):
        DenseIndex.build(VECTORS, replace(PARAMS, pq_m=5))
    with pytest.raises(ConfigError, match="training vectors"):
        DenseIndex.build(VECTORS[:10], PARAMS)


def test_vectors_file_must_hold_every_row(tmp_path):
    trained = tmp_path / "trained.faiss"
    ivf.train_ivfpq(VECTORS[:2000], PARAMS, trained)
    ivf.add_ivfpq_shard(trained, VECTORS, 0, tmp_path / "s.faiss")
    np.save(tmp_path / "short.npy", VECTORS[:-1], allow_pickle=False)
    with pytest.raises(ConfigError, match="write all rows in order"):
        ivf.merge_ivfpq(trained, [tmp_path / "s.faiss"], tmp_path / "dense", tmp_path / "short.npy")
    assert not (tmp_path / "dense").exists() and not list(tmp_path.glob(".dense.partial-*"))
