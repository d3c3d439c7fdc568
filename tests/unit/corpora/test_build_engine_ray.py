"""The Ray build engine against the local one, on a local Ray instance, with the real embedder.

Same small real corpus (open-medicine, 6 documents), same shard count, each build with its own
empty embedding cache: the Ray build must write the same ``chunks.jsonl`` bytes, corpus
fingerprint and BM25 files as the local engine, and vectors equal within 1e-5 (the actors batch
the same texts but a float sum can differ in the last bit). A second Ray build over a cache that
already holds part of the corpus embeds only the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.paths import Paths
from corpora.build import BuildConfig, BuildReport, build_index
from corpora.catalog import open_source
from corpora.chunking import WordpieceSpans
from corpora.engine import BuildEngine, LocalEngine
from corpora.engine_ray import RayEngine
from indexes.dense.embedder import MiniLmEmbedder
from indexes.store import load_index
from tests.ray_support import local_ray

SHARDS = 2


@pytest.fixture(scope="module")
def ray() -> Any:
    with local_ray(num_cpus=2) as ray:
        yield ray


def build(folder: Path, engine: BuildEngine, *, limit: int = 6, cache: Path | None = None) -> BuildReport:
    embedder = MiniLmEmbedder()
    spans = WordpieceSpans(embedder.model_path / "tokenizer.json")
    source = open_source("open-medicine", Paths())
    return build_index(
        [source],
        BuildConfig(name="om", limit=limit, shards=SHARDS),
        folder / "indexes",
        spans=spans,
        tokenizer_name=spans.name,
        embedder=embedder,
        cache_dir=cache or folder / "cache",
        progress=False,
        engine=engine,
    )


def vectors_of(folder: Path) -> np.ndarray:
    index = load_index(folder)
    try:
        assert index.dense is not None
        return index.dense.reconstruct(0, index.dense.size)
    finally:
        index.close()


@pytest.fixture(scope="module")
def builds(
    ray: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[BuildReport, BuildReport, BuildReport]:
    """The local build; a local build of the first 3 documents (filling the Ray build's cache);
    the Ray build of all 6 (2 embedder actors), which must embed only the rest."""
    pytest.importorskip("sentence_transformers")
    local = build(tmp_path_factory.mktemp("local"), LocalEngine())
    folder = tmp_path_factory.mktemp("ray")
    part = build(folder / "part", LocalEngine(), limit=3, cache=folder / "cache")
    on_ray = build(folder, RayEngine(workers=2, batch_size=8), cache=folder / "cache")
    return local, part, on_ray


def test_ray_build_writes_the_local_build(builds: tuple[BuildReport, BuildReport, BuildReport]) -> None:
    local, _, on_ray = builds
    counts = local.manifest["counts"]
    assert counts["chunks"] > 2 * 8  # several embedding batches, both shards used
    assert {**on_ray.manifest["counts"], "embeddings_from_cache": 0} == counts
    assert on_ray.manifest["corpus_fingerprint"] == local.manifest["corpus_fingerprint"]
    assert on_ray.manifest["shards"] == local.manifest["shards"]
    assert (on_ray.folder / "chunks.jsonl").read_bytes() == (local.folder / "chunks.jsonl").read_bytes()
    bm25 = {name: f for name, f in local.manifest["files"].items() if name.startswith("bm25/")}
    assert len(bm25) > 4 and all(on_ray.manifest["files"][name] == f for name, f in bm25.items())
    assert on_ray.manifest["build"]["engine"]["name"] == "ray"
    np.testing.assert_allclose(vectors_of(on_ray.folder), vectors_of(local.folder), atol=1e-5, rtol=0)


def test_ray_build_embeds_only_cache_misses(builds: tuple[BuildReport, BuildReport, BuildReport]) -> None:
    _, part, on_ray = builds
    reused = on_ray.manifest["counts"]["embeddings_from_cache"]
    assert 0 < reused == part.manifest["counts"]["chunks"] < on_ray.manifest["counts"]["chunks"]
