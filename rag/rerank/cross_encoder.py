"""A sentence-transformers cross-encoder: question and passage read together by one model.

No cross-encoder weights ship on the package registries this project can reach, so the model
is any local folder holding a Hugging Face ``*ForSequenceClassification`` checkpoint (for
example a copy of cross-encoder/ms-marco-MiniLM-L-6-v2 or BAAI/bge-reranker-base).

Scores: we always take the raw logits (``activation_fn=Identity``) and map them to [0, 1]
ourselves, so the scale does not depend on what the checkpoint's config says: one output
(``num_labels=1``, the usual relevance regressor) -> ``sigmoid(logit)``; two outputs
(irrelevant, relevant) -> ``softmax(logits)[1]``. Both are monotone in the model's own
preference, so the order equals the model's order and an evidence threshold is a probability.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, ModelError, require
from core.types import Hit
from rag.rerank.evidence import passage_text, sort_and_renumber


def offline_sentence_transformers(threads: int | None = None) -> Any:
    """Import sentence-transformers for offline use (no hub calls) with an optional torch thread count."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    st = require("sentence_transformers", package="sentence-transformers", extra="cross-encoder")
    if threads:
        import torch

        torch.set_num_threads(threads)
    return st


def _check_model_folder(path: Path) -> dict[str, Any]:
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelError(
            f"no cross-encoder model at {path} (config.json missing); point the reranker's model_path "
            "at a local folder with a Hugging Face sequence-classification checkpoint, or use the "
            "'llm' reranker"
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {config_file}: {exc}") from exc
    architectures = config.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        raise ModelError(
            f"{path} is not a cross-encoder: its architectures are {architectures}, expected a "
            "*ForSequenceClassification model (a sentence embedder cannot score passage pairs)"
        )
    return dict(config)


class CrossEncoderReranker:
    """Scores (question, passage) pairs in batches with a local cross-encoder, on CPU."""

    name = "cross-encoder"
    scores_are_probabilities = True

    def __init__(
        self,
        model_path: Path | str,
        *,
        batch_size: int = 16,
        max_length: int = 512,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1 or max_length < 8:
            raise ConfigError(
                f"cross-encoder needs batch_size >= 1 and max_length >= 8, got {batch_size}, {max_length}"
            )
        self.model_path = Path(model_path)
        self.config = _check_model_folder(self.model_path)
        # transformers leaves id2label out of config.json when it is its default of two labels.
        labels = int(self.config.get("num_labels") or len(self.config.get("id2label") or {}) or 2)
        if labels not in (1, 2):
            raise ModelError(
                f"{self.model_path} has {labels} output labels; a relevance cross-encoder has 1 "
                "(a score) or 2 (irrelevant, relevant), so this looks like another kind of classifier"
            )
        self.num_labels = labels
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads

    @cached_property
    def _model(self) -> Any:
        st = offline_sentence_transformers(self.threads)
        try:
            return st.CrossEncoder(  # type: ignore[attr-defined]
                str(self.model_path), device="cpu", max_length=self.max_length, local_files_only=True
            )
        except (OSError, ValueError, KeyError) as exc:
            raise ModelError(f"cannot load cross-encoder from {self.model_path}: {exc}") from exc

    def fingerprint(self) -> dict[str, Any]:
        """Identity for run manifests: the folder and the sizes that change scores."""
        weights = sorted(p.name for p in self.model_path.glob("*.safetensors")) or sorted(
            p.name for p in self.model_path.glob("*.bin")
        )
        return {
            "name": self.name,
            "path": str(self.model_path),
            "weights": weights,
            "max_length": self.max_length,
        }

    def scores(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance in [0, 1] of each passage to ``question`` (float64, input order)."""
        if not passages:
            return np.zeros(0, dtype=np.float64)
        torch = require("torch", package="torch", extra="dense")
        logits = self._model.predict(
            [(question, p) for p in passages],
            batch_size=self.batch_size,
            activation_fn=torch.nn.Identity(),  # type: ignore[attr-defined]
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        logits = np.asarray(logits, dtype=np.float64).reshape(len(passages), -1)
        if not np.isfinite(logits).all():
            raise ModelError(
                f"cross-encoder at {self.model_path} produced non-finite scores; the weights look broken"
            )
        if logits.shape[1] == 1:
            return np.asarray(0.5 * (1.0 + np.tanh(logits[:, 0] / 2.0)))  # sigmoid, without overflow
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        return np.asarray(shifted[:, 1] / shifted.sum(axis=1))

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        scores = self.scores(question, [passage_text(h.chunk) for h in hits])
        return sort_and_renumber(hits, scores.tolist(), self.name)
