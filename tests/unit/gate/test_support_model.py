"""The trained support model: windows, loading with hash checks, and how the verifier uses it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from core.errors import ModelError
from core.types import Chunk
from rag.gate.support_model import SHIPPED_SUPPORT_MODEL, TrainedSupport, calibrated, windows
from rag.gate.verify import CHECK_PENALTY, HEURISTIC_THRESHOLD, SupportVerifier
from tests.helpers import HashEmbedder

MARFAN = (
    "Marfan syndrome is a disorder of connective tissue. It is inherited in an autosomal dominant "
    "pattern. Mutations in the FBN1 gene, which encodes fibrillin-1, cause it."
)


def chunk(text: str, title: str = "Marfan syndrome") -> Chunk:
    return Chunk("m:1#0", "m:1", title, ("Genetics",), "test", "", "CC0", 0, len(text), text)


# -- windows (pure) ------------------------------------------------------------------------------


def test_windows_fill_the_budget_and_share_one_sentence_with_the_next() -> None:
    body = "A a. B b. C c. D d."
    spans = [(0, 4), (5, 9), (10, 14), (15, 19)]
    assert windows("T", body, [3, 3, 3, 3], spans, 6) == ["T\nA a. B b.", "T\nB b. C c.", "T\nC c. D d."]
    assert windows("", body, [3, 3, 3, 3], spans, 100) == ["A a. B b. C c. D d."]


def test_a_sentence_over_the_budget_gets_a_window_of_its_own() -> None:
    body = "Long one. Short."
    spans = [(0, 9), (10, 16)]
    assert windows("", body, [50, 2], spans, 10) == ["Long one.", "Short."]


def test_an_empty_body_is_read_as_its_heading_only() -> None:
    assert windows("Title", "", [], [], 10) == ["Title"]
    assert windows("", "  ", [], [], 10) == []


def test_calibration_is_a_logistic_of_the_logit_and_the_lexical_coverage() -> None:
    calibration = {"features": ["best_window_logit", "lexical_coverage"], "weights": [2.0, 1.0], "bias": -1.0}
    p = calibrated(np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5]), calibration)
    assert p == pytest.approx(
        [1 / (1 + np.exp(-(0 + 1 - 1))), 1 / (1 + np.exp(-(2 + 0 - 1))), 1 / (1 + np.exp(-(1 + 0.5 - 1)))]
    )


# -- the verifier with a model (a stub: the model is not the subject here) --------------------------


class StubModel:
    threshold = 0.3

    def __init__(self, p: float) -> None:
        self.p = p
        self.seen: list[tuple[str, str, str]] = []

    def probabilities(self, pairs):
        self.seen.extend(pairs)
        return np.full(len(pairs), self.p)


def test_the_model_probability_is_the_support_and_a_wrong_number_still_caps_it() -> None:
    model = StubModel(0.9)
    verifier = SupportVerifier(HashEmbedder(), model=model)  # type: ignore[arg-type]
    passage = chunk("Apixaban standard dose is 5 mg twice daily.", title="DOACs")
    right, wrong = verifier.score_pairs(
        [("Apixaban is **5 mg** twice daily.", passage), ("Apixaban is 10 mg twice daily.", passage)]
    )
    assert right.support == pytest.approx(0.9) and right.model == pytest.approx(0.9)
    assert wrong.support == pytest.approx(0.9 * CHECK_PENALTY)
    assert 0.0 <= right.heuristic <= 1.0  # the heuristic is still reported beside it
    claim, seen = model.seen[0]
    assert claim == "Apixaban is 5 mg twice daily." and seen == passage  # markup gone, passage whole


def test_the_threshold_is_the_models_own_unless_the_profile_sets_one() -> None:
    assert SupportVerifier(HashEmbedder(), model=StubModel(0.5)).threshold == 0.3  # type: ignore[arg-type]
    assert SupportVerifier(HashEmbedder(), threshold=0.7, model=StubModel(0.5)).threshold == 0.7  # type: ignore[arg-type]
    assert SupportVerifier(HashEmbedder()).threshold == HEURISTIC_THRESHOLD == 0.5


# -- the shipped model -----------------------------------------------------------------------------

pytest.importorskip("torch")


def test_shipped_support_model_is_small_safetensors_with_a_manifest() -> None:
    assert sorted(p.name for p in SHIPPED_SUPPORT_MODEL.iterdir()) == ["adapter.safetensors", "manifest.json"]
    assert sum(p.stat().st_size for p in SHIPPED_SUPPORT_MODEL.iterdir()) <= 2 * 1024 * 1024
    manifest = json.loads((SHIPPED_SUPPORT_MODEL / "manifest.json").read_text())
    assert manifest["command"].startswith("medcite models train-support")
    assert 0.0 < manifest["threshold"] < 1.0 and manifest["data"] and manifest["metrics"]["dev_roc_auc"] > 0.8
    # a claim failing the number or name check is capped at CHECK_PENALTY (times P <= 1): with a
    # threshold at or under the cap, a wrong dose the model liked would be presented
    assert manifest["threshold"] > CHECK_PENALTY


def test_the_shipped_model_tells_a_supported_claim_from_its_negation_and_another_topic() -> None:
    model = TrainedSupport()
    p = model.probabilities(
        [
            ("Marfan syndrome is inherited in an autosomal dominant pattern.", chunk(MARFAN)),
            ("Marfan syndrome is not inherited in an autosomal dominant pattern.", chunk(MARFAN)),
            ("Metformin is the first-line drug for type 2 diabetes.", chunk(MARFAN)),
        ]
    )
    assert p[0] > model.threshold > max(p[1], p[2])
    assert p[0] > 0.5 > max(p[1], p[2])


def shipped_copy(tmp_path, **manifest_changes):
    """The shipped model copied into ``tmp_path``, its manifest with ``manifest_changes``."""
    folder = tmp_path / "support"
    shutil.copytree(SHIPPED_SUPPORT_MODEL, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, **manifest_changes}))
    return folder


def test_a_changed_adapter_is_refused(tmp_path) -> None:
    folder = shipped_copy(tmp_path)
    data = bytearray((folder / "adapter.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (folder / "adapter.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="does not match"):
        TrainedSupport(folder).probabilities([("claim", chunk("passage"))])


def test_a_support_model_over_another_relevance_model_is_refused(tmp_path) -> None:
    folder = shipped_copy(tmp_path, relevance_overlay_sha256="0" * 64)
    with pytest.raises(ModelError, match="another relevance model"):
        TrainedSupport(folder).probabilities([("claim", chunk("passage"))])


def test_a_manifest_calibrated_on_other_features_is_refused(tmp_path) -> None:
    old = {"features": ["best_window_logit"], "weight": 1.0, "bias": 0.0}
    folder = shipped_copy(tmp_path, calibration=old)
    with pytest.raises(ModelError, match="calibrates on"):
        TrainedSupport(folder)


def test_a_missing_model_says_how_to_get_one(tmp_path) -> None:
    with pytest.raises(ModelError, match="train-support"):
        TrainedSupport(tmp_path)
