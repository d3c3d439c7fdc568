"""The plain-torch MiniLM embedder computes what sentence-transformers computes from the same
weights, so indexes built with either are queried with either (their fingerprints are equal)."""

from __future__ import annotations

import numpy as np
import pytest

from indexes.dense.embedder import MiniLmEmbedder, packaged_minilm_dir

pytestmark = pytest.mark.e2e

TEXTS = [
    "How much aspirin should be chewed right away for suspected ACS chest pain?",
    "Aspirin 162-325 mg chewed; oxygen only if SpO2 < 90%.",
    "IV",
    "",
    "Community Acquired Pneumonia (CAP) " * 120,  # past 256 wordpieces: cut as sentence-transformers cuts
    "Ünïcödé dose: 5 µg/kg/min — titrate",
]


@pytest.fixture(scope="module")
def reference() -> object:
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(packaged_minilm_dir()), device="cpu")


def test_vectors_agree_with_sentence_transformers(reference) -> None:
    ours = MiniLmEmbedder(batch_size=4).embed(TEXTS)
    theirs = reference.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_fingerprint_is_what_an_index_built_with_sentence_transformers_recorded(reference) -> None:
    fingerprint = MiniLmEmbedder().fingerprint()
    assert fingerprint["dim"] == reference.get_embedding_dimension()
    assert fingerprint["max_tokens"] == reference.max_seq_length


def test_batches_do_not_change_a_vector() -> None:
    alone = MiniLmEmbedder().embed([TEXTS[0]])
    among = MiniLmEmbedder(batch_size=3).embed(TEXTS)
    np.testing.assert_allclose(alone[0], among[0], atol=1e-6)
