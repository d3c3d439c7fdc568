"""The MiniLM models run by ONNX Runtime compute what their torch modules compute, and a process
that finds them exported scores without importing torch."""

from __future__ import annotations

import json

import numpy as np
import pytest

from indexes.dense.onnx_models import onnx_dir, score_encoded
from rag.gate.support_model import TrainedSupport
from rag.rerank.trained import TrainedReranker
from tests.helpers import run_python

pytestmark = pytest.mark.e2e

QUESTION = "How much aspirin should be chewed right away for suspected ACS chest pain?"
PASSAGES = [
    "Aspirin 162-325 mg chewed, unless contraindicated; oxygen only if SpO2 < 90%.",
    "Repeat hs-cTn at 1 to 3 hours after the first sample.",
    "IV",
    "Community Acquired Pneumonia (CAP): amoxicillin 500 mg TDS for 5 days. " * 40,  # cut to fit
]


@pytest.fixture()
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path))
    return tmp_path


def _torch_scores(model, encoded):
    torch = pytest.importorskip("torch")
    from indexes.dense.minilm import padded

    with torch.inference_mode():
        return np.concatenate([model(*padded([pair])).double().numpy() for pair in encoded])


def test_relevance_logits_agree_with_torch(data_dir) -> None:
    reranker = TrainedReranker()
    onnx = reranker.logits(QUESTION, PASSAGES)
    torch = _torch_scores(reranker._torch_model(), reranker._tokenizer.encode(QUESTION, PASSAGES))
    np.testing.assert_allclose(onnx, torch, atol=1e-4)
    assert onnx[0] > onnx[2]  # the answering passage above a bare abbreviation
    assert [p.parent for p in onnx_dir().glob("relevance-*.onnx")] == [data_dir / "cache" / "onnx"]


def test_support_logits_agree_with_torch(data_dir) -> None:
    verifier = TrainedSupport()
    claims = ["Chew 162-325 mg of aspirin.", "Chew 81 mg of aspirin."]
    onnx = verifier.logits(claims, PASSAGES[:1] * 2)
    encoded = [verifier._tokenizer.encode(c, PASSAGES[:1])[0] for c in claims]
    np.testing.assert_allclose(onnx, _torch_scores(verifier._torch_model(), encoded), atol=1e-4)


def test_a_process_with_exported_models_never_imports_torch(data_dir) -> None:
    TrainedReranker().logits(QUESTION, PASSAGES[:1])  # exports it into data_dir
    script = (
        "import json, sys; from indexes.dense.embedder import MiniLmEmbedder; "
        "from rag.rerank.trained import TrainedReranker; "
        "MiniLmEmbedder().embed(['x']); TrainedReranker().logits('q', ['p']); "
        "print(json.dumps('torch' in sys.modules))"
    )
    first = run_python(["-c", script], data_dir, check=True, timeout=None)
    again = run_python(["-c", script], data_dir, check=True, timeout=None)
    assert json.loads(first.stdout) is True  # the embedder was not exported yet: torch exports it
    assert json.loads(again.stdout) is False


def test_a_broken_export_says_what_to_do(data_dir) -> None:
    from core.errors import ModelError

    reranker = TrainedReranker()
    reranker.logits(QUESTION, PASSAGES[:1])
    (path,) = onnx_dir().glob("relevance-*.onnx")
    path.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="delete it"):
        TrainedReranker().logits(QUESTION, PASSAGES[:1])
    path.unlink()
    assert TrainedReranker().logits(QUESTION, PASSAGES[:1]).shape == (1,)


def test_scores_come_back_in_input_order_whatever_the_batching() -> None:
    encoded = [([101] + [2000 + i] * n + [102], [0] * (n + 2)) for i, n in enumerate([9, 1, 5, 3])]

    def length(ids, types, mask):
        return mask.sum(axis=1).astype(np.float32)

    assert score_encoded(length, encoded, batch_size=3).tolist() == [11.0, 3.0, 7.0, 5.0]


def test_the_embedder_gives_the_same_vectors_on_either_runtime(data_dir) -> None:
    from indexes.dense.embedder import MiniLmEmbedder

    texts = [QUESTION, *PASSAGES]
    onnx = MiniLmEmbedder(batch_size=2).embed(texts)
    torch = MiniLmEmbedder(batch_size=2, runtime="torch").embed(texts)
    np.testing.assert_allclose(onnx, torch, atol=1e-5)


def test_an_unknown_runtime_is_refused_with_the_choices() -> None:
    from core.errors import ConfigError
    from indexes.dense.embedder import MiniLmEmbedder

    with pytest.raises(ConfigError, match="onnx, torch"):
        MiniLmEmbedder(runtime="tensorflow")
