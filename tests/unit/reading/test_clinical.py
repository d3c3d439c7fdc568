"""The medical-question model: its folder round-trips, is verified, names its embedder."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import ConfigError, ModelError
from rag.reading.clinical import WEIGHTS_FILE, ClinicalModel, ClinicalScope
from tests.helpers import HashEmbedder


def model(embedder: HashEmbedder) -> ClinicalModel:
    """Medical unless the question shares words with "capital france"."""
    return ClinicalModel(
        -20.0 * embedder.embed(["capital france"])[0].astype(np.float64), 5.0, embedder.fingerprint()
    )


def test_a_written_model_reads_back_with_the_same_probabilities(tmp_path):
    embedder = HashEmbedder()
    written = model(embedder)
    written.write(tmp_path / "m", {"threshold": 0.5})
    read = ClinicalModel.read(tmp_path / "m")
    vectors = embedder.embed(["What is the capital of France?", "CHA2DS2-VASc score in AF?"])
    assert read.probabilities(vectors) == pytest.approx(written.probabilities(vectors), abs=1e-6)
    scope = ClinicalScope(embedder, read)
    assert (
        scope.probability("What is the capital of France?") < 0.5 < scope.probability("CHA2DS2-VASc in AF?")
    )
    assert "P(medical)" in (scope.why_not("What is the capital of France?", 0.5) or "")
    assert scope.why_not("CHA2DS2-VASc in AF?", 0.5) is None


def test_a_missing_or_changed_model_says_how_to_fit_one(tmp_path):
    with pytest.raises(ModelError, match="medcite train clinical"):
        ClinicalModel.read(tmp_path / "none")
    embedder = HashEmbedder()
    model(embedder).write(tmp_path / "m", {})
    (tmp_path / "m" / WEIGHTS_FILE).write_bytes(b"changed")
    with pytest.raises(ModelError, match="weights changed"):
        ClinicalModel.read(tmp_path / "m")


def test_another_embedder_is_refused_with_what_to_set():
    other = ClinicalModel(np.zeros(64), 0.0, {"name": "another-embedder", "weights_sha256": "1" * 64})
    with pytest.raises(ConfigError, match="min_clinical"):
        ClinicalScope(HashEmbedder(), other)


def test_the_shipped_model_fits_the_default_embedder():
    from indexes.dense.embedder import MiniLmEmbedder

    shipped = ClinicalModel.shipped()
    assert shipped.weights.shape == (384,)
    assert shipped.embedder["weights_sha256"] == MiniLmEmbedder().weights_sha256
