"""Is the question a medical question at all? P(medical) of the question alone, from its embedding.

The relevance model was trained on medical questions only, so it is sure of "Avascular necrosis
of the capital femoral epiphysis" for "What is the capital of France?" and of a hypoglycaemia
protocol for "hi". This judges the question before any passage: a logistic regression on the
index embedder's vector of the text searched with, fitted by ``medcite train clinical``
(``training/clinical.py``) on medical questions (clinicians', BioASQ's, MedQuAD's) against
chit-chat, general-knowledge and homonym questions ("the best stroke for a beginner swimmer").
Below ``[rerank] min_clinical`` no passage is kept (each stays listed with its relevance), so
the chain says nothing relevant. A medical question on a topic the sources lack passes: the
relevance and aboutness judgements decide those.

The folder ``weights/clinical`` holds ``weights.safetensors`` (the vector and the bias) and
``manifest.json`` (the embedder it was fitted with, data hashes, metrics, the command).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, ModelError, require
from indexes.files import sha256_file
from rag.protocols import Embedder

SHIPPED = Path(__file__).parent / "weights" / "clinical"
WEIGHTS_FILE = "weights.safetensors"
MANIFEST_FILE = "manifest.json"
FORMAT = "medcite-clinical-1"


@dataclass(frozen=True)
class ClinicalModel:
    """``sigmoid(w . embed(question) + b)``; ``embedder``: the fingerprint ``w`` was fitted on."""

    weights: np.ndarray
    bias: float
    embedder: dict[str, Any]

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """P(medical) of each row of ``vectors`` (the embedder's L2-normalised vectors)."""
        z = np.asarray(vectors, dtype=np.float64) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-z))

    def check_embedder(self, fingerprint: dict[str, Any]) -> None:
        """A ConfigError unless ``fingerprint`` is the embedder this model was fitted on."""
        keys = ("name", "weights_sha256")
        if any(fingerprint.get(k) != self.embedder.get(k) for k in keys):
            raise ConfigError(
                f"the medical-question model was fitted on the embedder {self.embedder.get('name')!r}, "
                f'this index uses {fingerprint.get("name")!r}; set [rerank] min_clinical = "unset" '
                "or refit it with: medcite train clinical"
            )

    def write(self, folder: Path, manifest: dict[str, Any]) -> None:
        """``folder`` with the weights and ``manifest`` (plus the format, embedder and sha256)."""
        save_file = require("safetensors.numpy", package="safetensors", extra="dense").save_file
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {
            "weights": self.weights.astype(np.float32),
            "bias": np.array([self.bias], dtype=np.float32),
        }
        save_file(tensors, str(folder / WEIGHTS_FILE))
        record = {
            "format": FORMAT,
            "embedder": self.embedder,
            "weights_sha256": sha256_file(folder / WEIGHTS_FILE),
            **manifest,
        }
        (folder / MANIFEST_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, folder: Path) -> ClinicalModel:
        """The model of ``folder``; a ModelError that says how to get one otherwise."""
        load_file = require("safetensors.numpy", package="safetensors", extra="dense").load_file
        manifest_path, weights_path = folder / MANIFEST_FILE, folder / WEIGHTS_FILE
        if not manifest_path.is_file() or not weights_path.is_file():
            raise ModelError(f"no medical-question model at {folder}; fit one with: medcite train clinical")
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT or manifest.get("weights_sha256") != sha256_file(weights_path):
            raise ModelError(
                f"{folder} is not a {FORMAT} model or its weights changed; refit: medcite train clinical"
            )
        tensors = load_file(str(weights_path))
        return cls(tensors["weights"].astype(np.float64), float(tensors["bias"][0]), manifest["embedder"])

    @classmethod
    @functools.cache
    def shipped(cls) -> ClinicalModel:
        return cls.read(SHIPPED)


class ClinicalScope:
    """Says whether a text searched with reads as a medical question."""

    def __init__(self, embedder: Embedder, model: ClinicalModel | None = None) -> None:
        self.embedder = embedder
        self.model = model or ClinicalModel.shipped()
        fingerprint = getattr(embedder, "fingerprint", None)
        if fingerprint is not None:
            self.model.check_embedder(fingerprint())

    def probability(self, text: str) -> float:
        return float(self.model.probabilities(self.embedder.embed([text]))[0])

    def why_not(self, text: str, threshold: float) -> str | None:
        """Why ``text`` is no medical question at ``threshold`` (a note for the answer), or None."""
        p = self.probability(text)
        if p >= threshold:
            return None
        why = f"P(medical) {p:.2f} < {threshold:g}"
        return f"the question does not read as a medical one ({why}): no passage kept"
