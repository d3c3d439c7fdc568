"""The build engine seam (corpora/engine.py) with the local engine: shards, flags, --skip-existing.

A sharded local build must answer exactly like the unsharded one through ``rag.indexing.retrieve``
(BM25, dense and hybrid), over a small real corpus (open-medicine, 6 documents) with the real
embedder; ``--shards 1`` keeps today's layout (no ``shards`` in the manifest, no shard folders).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from core.errors import ConfigError, MissingExtraError
from core.paths import Paths
from core.types import Filters
from corpora.build import BuildConfig
from corpora.engine import LocalEngine, make_engine
from rag import indexing

QUERIES = ("anticoagulation in atrial fibrillation", "asthma inhaled corticosteroid", "dose of metformin")


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    """Indexes ``whole`` (unsharded) and ``split`` (3 shards) of the same 6 documents."""
    pytest.importorskip("sentence_transformers")
    paths = Paths(data_dir=tmp_path_factory.mktemp("data"))
    for name, shards in (("whole", 1), ("split", 3)):
        indexing.build_from_cli(
            paths, sources=["open-medicine"], name=name, limit=6, shards=shards, progress=False
        )
    return paths


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_sharded_build_answers_like_the_unsharded_one(paths: Paths, mode: str) -> None:
    for query in QUERIES:
        whole = indexing.retrieve(paths, "whole", query, k=8, mode=mode, filters=Filters())
        split = indexing.retrieve(paths, "split", query, k=8, mode=mode, filters=Filters())
        assert whole, f"no {mode} hit for {query!r}: the comparison would be empty"
        assert [h.chunk.chunk_id for h in split] == [h.chunk.chunk_id for h in whole]
        np.testing.assert_allclose([h.score for h in split], [h.score for h in whole], rtol=1e-5)


def test_one_shard_is_the_unsharded_layout_and_n_shards_are_listed(paths: Paths) -> None:
    whole = indexing.index_info(paths, "whole", verify=True)
    split = indexing.index_info(paths, "split", verify=True)
    assert "shards" not in whole
    assert not any("shard-" in name for name in whole["files"])
    assert split["shards"]["count"] == 3
    for kind in ("bm25", "dense"):
        assert {n.split("/")[1] for n in split["files"] if n.startswith(f"{kind}/shard-")} == {
            "shard-0000",
            "shard-0001",
            "shard-0002",
        }
    assert split["corpus_fingerprint"] == whole["corpus_fingerprint"]
    assert split["files"]["chunks.jsonl"] == whole["files"]["chunks.jsonl"]
    assert whole["build"]["engine"] == {"name": "local"}


def test_skip_existing_compares_the_shard_count(tmp_path: Path) -> None:
    paths = Paths(data_dir=tmp_path)
    kwargs = {"sources": ["open-medicine"], "name": "bm", "limit": 2, "dense": None, "progress": False}
    first = indexing.build_from_cli(paths, shards=1, skip_existing=True, **kwargs)
    other = indexing.build_from_cli(paths, shards=2, skip_existing=True, **kwargs)
    same = indexing.build_from_cli(paths, shards=2, skip_existing=True, **kwargs)
    assert "skipped" not in first and "skipped" not in other
    assert "skipped" in same


def test_engine_flags_are_checked_before_any_work(tmp_path: Path) -> None:
    assert isinstance(make_engine("local"), LocalEngine)
    with pytest.raises(ConfigError, match="--address needs --engine ray"):
        make_engine("local", address="10.0.0.1:6379")
    with pytest.raises(ConfigError, match="at least 1"):
        make_engine("ray", workers=0)
    with pytest.raises(ConfigError, match="shards must be at least 1"):
        BuildConfig(shards=0)
    with pytest.raises(ConfigError, match="--address needs --engine ray"):
        indexing.build_from_cli(Paths(data_dir=tmp_path), sources=["open-medicine"], address="h:1")
    assert not (tmp_path / "indexes").exists()


def test_a_missing_ray_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an install without the extra looks like
    with pytest.raises(MissingExtraError, match=r"ray"):
        make_engine("ray")


def test_sharded_ivfpq_is_one_merged_index_with_the_unsharded_answers(tmp_path: Path) -> None:
    """ivfpq shards are added to one trained quantiser and merged (indexes/dense/ivf.py), in the build."""
    pytest.importorskip("faiss")
    from corpora.build import build_index
    from indexes.dense.index import DenseParams
    from indexes.store import load_index
    from tests.helpers import HashEmbedder, ListSource, make_doc, whitespace_spans

    docs = [
        make_doc(f"d:{i}", {"A": f"w{i % 37} x{i % 11} alpha", "B": f"q{i % 13} z{i % 7} beta"})
        for i in range(300)
    ]
    params = DenseParams(kind="ivfpq", nlist=8, pq_m=8, nprobe=8, rescore=50, train_size=600)
    query = HashEmbedder().embed(["w3 x3 alpha"])[0]
    found = {}
    for shards in (1, 3):
        report = build_index(
            [ListSource(docs)],
            BuildConfig(name="ivf", dense=params, shards=shards),
            tmp_path / str(shards),
            spans=whitespace_spans,
            tokenizer_name="ws",
            embedder=HashEmbedder(),
            cache_dir=tmp_path / "cache",
            progress=False,
        )
        assert not any("ivfpq-parts" in name for name in report.manifest["files"])
        index = load_index(report.folder)
        assert index.dense is not None and index.dense.size == 600
        found[shards] = index.dense.search(query, 10)
        index.close()
    assert found[1][0].tolist() == found[3][0].tolist() and len(found[1][0]) == 10
    np.testing.assert_allclose(found[3][1], found[1][1], rtol=1e-6)


def test_shards_need_the_bm25s_backend() -> None:
    with pytest.raises(ConfigError, match="bm25s"):
        BuildConfig(shards=2, lexical_backend="rank-bm25")
