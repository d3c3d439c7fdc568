"""The cross-encoder reranker, run for real on a tiny random BERT built in the test.

The weights are random, so the scores mean nothing; what is tested is the plumbing: loading
through sentence-transformers, pairing, batching, the sigmoid mapping, and the order.
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest

from core.errors import MissingExtraError, ModelError
from rag.rerank.cross_encoder import CrossEncoderReranker
from rag.rerank.evidence import passage_text
from tests.helpers import hits_from

pytest.importorskip("sentence_transformers")
transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

QUESTION = "How is iron deficiency anaemia treated?"
TEXTS = {
    "iron#0": "Oral ferrous sulfate is first line for iron deficiency anaemia.",
    "gout#0": "Colchicine or an NSAID treats an acute gout flare.",
    "asthma#0": "Inhaled corticosteroids control persistent asthma.",
    "iron#1": "Intravenous iron is used when oral iron is not tolerated or absorbed.",
    "copd#0": "Long-acting bronchodilators reduce COPD exacerbations." + " Smoking cessation helps." * 200,
}


def build_tiny_cross_encoder(folder, num_labels: int = 1):
    from indexes.dense.embedder import packaged_minilm_dir

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=num_labels,
    )
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(folder)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(packaged_minilm_dir() / name, folder / name)
    return model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-ce")
    model = build_tiny_cross_encoder(folder)
    return folder, model.eval()


def reference_scores(folder, model, passages, max_length=512):
    """Sigmoid of the logits computed with plain transformers, one pair at a time."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    out = []
    with torch.no_grad():
        for passage in passages:
            enc = tokenizer(QUESTION, passage, truncation=True, max_length=max_length, return_tensors="pt")
            out.append(torch.sigmoid(model(**enc).logits[0, 0]).item())
    return np.array(out)


def test_scores_match_a_plain_transformers_forward_pass(tiny):
    folder, model = tiny
    hits = hits_from(TEXTS)
    passages = [passage_text(h.chunk) for h in hits]
    scores = CrossEncoderReranker(folder, batch_size=2, max_length=128).scores(QUESTION, passages)
    assert scores.shape == (5,)
    assert ((scores > 0) & (scores < 1)).all()
    np.testing.assert_allclose(scores, reference_scores(folder, model, passages, 128), atol=1e-5)


def test_order_follows_scores_and_batch_size_does_not_change_them(tiny):
    folder, _ = tiny
    hits = hits_from(TEXTS)
    ranked = CrossEncoderReranker(folder, batch_size=16, max_length=128).rerank(QUESTION, hits)
    again = CrossEncoderReranker(folder, batch_size=1, max_length=128).rerank(QUESTION, hits)
    assert sorted(h.chunk.chunk_id for h in ranked) == sorted(TEXTS)
    assert [h.rank for h in ranked] == [1, 2, 3, 4, 5]
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    assert {h.retriever for h in ranked} == {"bm25+cross-encoder"}
    assert [h.chunk.chunk_id for h in again] == [h.chunk.chunk_id for h in ranked]
    np.testing.assert_allclose([h.score for h in again], [h.score for h in ranked], atol=1e-5)


def test_two_label_models_score_the_relevant_class(tmp_path):
    model = build_tiny_cross_encoder(tmp_path, num_labels=2).eval()
    reranker = CrossEncoderReranker(tmp_path, max_length=64)
    assert reranker.num_labels == 2
    scores = reranker.scores(QUESTION, ["iron tablets", "gout"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path)
    with torch.no_grad():
        logits = model(
            **tokenizer([QUESTION] * 2, ["iron tablets", "gout"], padding=True, return_tensors="pt")
        ).logits
    np.testing.assert_allclose(scores, torch.softmax(logits, dim=1)[:, 1].numpy(), atol=1e-5)


def test_missing_folder_embedder_folder_and_other_classifiers_are_model_errors(tmp_path):
    from indexes.dense.embedder import packaged_minilm_dir

    with pytest.raises(ModelError, match=r"config\.json missing"):
        CrossEncoderReranker(tmp_path / "nowhere")
    with pytest.raises(ModelError, match="not a cross-encoder"):
        CrossEncoderReranker(packaged_minilm_dir())
    (tmp_path / "config.json").write_text(
        json.dumps(
            {"architectures": ["BertForSequenceClassification"], "id2label": {"0": "e", "1": "n", "2": "c"}}
        )
    )
    with pytest.raises(ModelError, match="3 output labels"):
        CrossEncoderReranker(tmp_path)


def test_empty_input_does_not_load_the_model(tiny, monkeypatch):
    folder, _ = tiny
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    assert CrossEncoderReranker(folder).rerank(QUESTION, []) == []


def test_missing_sentence_transformers_names_the_cross_encoder_extra(tiny, monkeypatch):
    folder, _ = tiny
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"medcite\[cross-encoder\]"):
        CrossEncoderReranker(folder).rerank(QUESTION, hits_from(TEXTS))
