"""The int8 embedder: close to the float vectors, kept apart from them in the embedding cache, and
an index built with it is queried with it (its manifest says which; a rebuild is asked for when
the precision changes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import ConfigError
from core.paths import Paths
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.embedding_cache import store_for
from indexes.manifest import read_manifest
from rag import indexing

pytestmark = pytest.mark.e2e

TEXTS = [
    "Warfarin: target INR 2.0-3.0 for atrial fibrillation.",
    "Amoxicillin 500 mg three times daily for 5 days for community-acquired pneumonia.",
    "Repeat hs-cTn at 1 to 3 hours after the first sample.",
]


@pytest.fixture()
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path))  # the exported models go here too
    return Paths(data_dir=tmp_path)


def test_int8_vectors_are_unit_length_and_near_the_float_ones(paths: Paths) -> None:
    floats = MiniLmEmbedder().embed(TEXTS)
    ints = MiniLmEmbedder(precision="int8").embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(ints, axis=1), 1.0, atol=1e-5)
    cosine = (floats * ints).sum(axis=1)
    assert cosine.min() > 0.95 and not np.allclose(floats, ints, atol=1e-4)  # close, not the same
    same_text_rank = np.argmax(ints @ floats.T, axis=1)
    assert same_text_rank.tolist() == [0, 1, 2]


def test_each_precision_and_length_has_its_own_cache_and_fingerprint(paths: Paths) -> None:
    float32, int8, short = MiniLmEmbedder(), MiniLmEmbedder(precision="int8"), MiniLmEmbedder(max_tokens=128)
    folders = {store_for(e, paths.cache_dir)._cache.path.parent.name for e in (float32, int8, short)}
    assert len(folders) == 3 and float32.weights_sha256[:16] in folders  # float keeps its old folder
    assert "precision" not in float32.fingerprint()  # indexes built before int8 stay valid
    assert int8.fingerprint()["precision"] == "int8" and short.fingerprint()["max_tokens"] == 128
    assert MiniLmEmbedder.matching(int8.fingerprint()).fingerprint() == int8.fingerprint()
    with pytest.raises(ConfigError, match="float32, int8"):
        MiniLmEmbedder(precision="fp8")


def test_an_int8_index_is_queried_with_int8_and_rebuilt_when_the_precision_changes(paths: Paths) -> None:
    kwargs: dict[str, Any] = {
        "sources": ["open-medicine"],
        "name": "g",
        "limit": 3,
        "progress": False,
        "skip_existing": True,
    }
    built = indexing.build_from_cli(paths, embedder_precision="int8", **kwargs)
    assert read_manifest(paths.indexes_dir / "g")["embedder"]["precision"] == "int8"
    index, embedder = indexing.open_index(paths, "g", with_embedder=True)
    index.close()
    assert embedder.precision == "int8"
    again = indexing.build_from_cli(paths, embedder_precision="int8", **kwargs)
    other = indexing.build_from_cli(paths, embedder_precision="float32", **kwargs)
    assert "skipped" not in built and "skipped" in again and "skipped" not in other
    assert "precision" not in read_manifest(paths.indexes_dir / "g")["embedder"]
