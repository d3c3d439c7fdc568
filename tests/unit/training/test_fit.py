"""Training on cached bottom layers: deterministic for a seed, and a stopped run resumes exactly."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from indexes.dense.embedder import packaged_minilm_dir  # noqa: E402
from rag.rerank.minilm import RelevanceModel  # noqa: E402
from rag.rerank.trained import PairTokenizer  # noqa: E402
from training.fit import FitConfig, cache_bottom, length_batches, load_finished, logits_of, train  # noqa: E402

PAIRS = [
    (
        "What are the qSOFA criteria?",
        "qSOFA: respiratory rate >= 22/min, altered mentation, systolic BP <= 100",
        1,
    ),
    ("What are the qSOFA criteria?", "Marfan syndrome is inherited in an autosomal dominant pattern.", 0),
    (
        "Which score guides anticoagulation in atrial fibrillation?",
        "CHA2DS2-VASc estimates stroke risk in AF.",
        1,
    ),
    (
        "Which score guides anticoagulation in atrial fibrillation?",
        "Metformin is first-line in type 2 diabetes.",
        0,
    ),
    (
        "How is Marfan syndrome inherited?",
        "Marfan syndrome is inherited in an autosomal dominant pattern.",
        1,
    ),
    ("How is Marfan syndrome inherited?", "qSOFA: respiratory rate >= 22/min, altered mentation.", 0),
]
CONFIG = FitConfig(seed=3, epochs=2, batch_size=2, trainable_from=5, max_length=64, checkpoint_every=1)


def _model_and_cache():
    from safetensors.torch import load_file

    torch.manual_seed(CONFIG.seed)
    base = packaged_minilm_dir()
    model = RelevanceModel(trainable_from=CONFIG.trainable_from)
    model.encoder.load_hf(load_file(str(base / "model.safetensors")))
    model.eval()
    tokenizer = PairTokenizer(base / "tokenizer.json", CONFIG.max_length)
    encoded = [tokenizer.encode(q, [p])[0] for q, p, _ in PAIRS]
    return model, cache_bottom(model, encoded, "cache")


def _trained(folder, max_steps=None, state_out=None):
    model, hidden = _model_and_cache()
    labels = [y for _, _, y in PAIRS]
    state = train(
        model,
        hidden,
        labels,
        CONFIG,
        folder,
        validate=lambda m: float(logits_of(m, hidden)[0]),
        max_steps=max_steps,
    )
    return model, hidden, state


def test_cached_top_equals_a_full_forward_pass() -> None:
    from indexes.dense.minilm import padded

    model, hidden = _model_and_cache()
    tokenizer = PairTokenizer(packaged_minilm_dir() / "tokenizer.json", CONFIG.max_length)
    full = model(*padded([tokenizer.encode(PAIRS[0][0], [PAIRS[0][1]])[0]]))
    cached = float(logits_of(model, hidden[:1])[0])
    assert float(full[0].detach()) == pytest.approx(cached, abs=1e-3)  # the cache is float16


def test_length_batches_cover_every_item_once() -> None:
    batches = length_batches([5, 1, 9, 3, 7, 2, 8], 3, random.Random(0))
    assert sorted(i for b in batches for i in b) == list(range(7))
    assert all(len(b) <= 3 for b in batches)


def test_training_is_deterministic_and_a_stopped_run_resumes_exactly(tmp_path) -> None:
    straight, hidden, state = _trained(tmp_path / "straight")
    assert state["finished"] and state["step"] == 6 and len(state["epochs"]) == 2
    again, _, _ = _trained(tmp_path / "again")
    _, _, partial = _trained(tmp_path / "resumed", max_steps=4)
    assert not partial["finished"] and partial["step"] == 4
    resumed, _, final = _trained(tmp_path / "resumed")
    assert final["finished"] and final["step"] == 6
    expected = logits_of(straight, hidden)
    assert logits_of(again, hidden) == pytest.approx(expected, abs=1e-6)
    assert logits_of(resumed, hidden) == pytest.approx(expected, abs=1e-5)
    untrained, _ = _model_and_cache()
    assert logits_of(untrained, hidden) != pytest.approx(expected, abs=1e-3)  # training changed something


def test_a_finished_run_loads_its_best_epoch_without_training_data(tmp_path) -> None:
    from dataclasses import replace

    straight, hidden, state = _trained(tmp_path / "run")
    fresh, _ = _model_and_cache()
    loaded = load_finished(fresh, CONFIG, tmp_path / "run")
    assert loaded is not None and loaded["finished"] and loaded["best_epoch"] == state["best_epoch"]
    assert logits_of(fresh, hidden) == pytest.approx(logits_of(straight, hidden), abs=1e-6)
    _trained(tmp_path / "partial", max_steps=4)  # stopped mid-run: train() must resume it
    assert load_finished(_model_and_cache()[0], CONFIG, tmp_path / "partial") is None
    assert load_finished(_model_and_cache()[0], replace(CONFIG, epochs=3), tmp_path / "run") is None
    assert load_finished(_model_and_cache()[0], CONFIG, tmp_path / "nothing") is None
