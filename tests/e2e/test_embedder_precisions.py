"""The bfloat16 and int8 embedders: close to the float vectors (bfloat16 within 1e-4 of a cosine
of 1), kept apart from them in the embedding cache, and an index built with one is queried as its
manifest says (int8 with int8; bfloat16 with the float ONNX model); a rebuild is asked for when the
precision changes."""

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


def test_bfloat16_vectors_are_the_float_ones_to_a_cosine_of_0_9999(paths: Paths) -> None:
    floats = MiniLmEmbedder(runtime="torch").embed(TEXTS)
    halves = MiniLmEmbedder(runtime="torch", precision="bfloat16").embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(halves, axis=1), 1.0, atol=1e-5)
    cosine = (floats * halves).sum(axis=1)
    assert cosine.min() > 0.9999 and not np.array_equal(floats, halves)  # bfloat16 products ran
    # a bfloat16 index's questions: the float ONNX model (a query never imports torch)
    query = MiniLmEmbedder(precision="bfloat16")
    np.testing.assert_allclose(query.embed(TEXTS), floats, atol=1e-5)


def test_each_precision_and_length_has_its_own_cache_and_fingerprint(paths: Paths) -> None:
    float32, int8, short = MiniLmEmbedder(), MiniLmEmbedder(precision="int8"), MiniLmEmbedder(max_tokens=128)
    bfloat16 = MiniLmEmbedder(precision="bfloat16")
    embedders = (float32, int8, short, bfloat16)
    folders = {store_for(e, paths.cache_dir)._cache.path.parent.name for e in embedders}
    assert len(folders) == 4 and float32.weights_sha256[:16] in folders  # float keeps its old folder
    assert "precision" not in float32.fingerprint()  # indexes built before int8 stay valid
    assert int8.fingerprint()["precision"] == "int8" and short.fingerprint()["max_tokens"] == 128
    for embedder in (int8, bfloat16):
        assert MiniLmEmbedder.matching(embedder.fingerprint()).fingerprint() == embedder.fingerprint()
    with pytest.raises(ConfigError, match="float32, bfloat16, int8"):
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
