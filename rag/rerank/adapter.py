"""One base for the models medcite trains as low-rank adapters over its relevance model.

The support model (``rag/gate/support_model.py``) and the line reader (``rag/reading/reader.py``)
are both the relevance cross-encoder (``rag/rerank/weights/relevance-minilm``) with adapters on
its top layers and their own head (``rag.rerank.minilm.SupportModel``), stored as a folder of
``adapter.safetensors`` (float16) and ``manifest.json`` (the relevance overlay and adapter
sha256, the architecture, the calibration, data hashes, metrics, the command that reproduces
it). :class:`AdapterModel` checks the hashes, exports the model to ONNX the first time these
weights are used (``indexes/dense/onnx_models.py``) and scores pairs with ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from core.errors import ConfigError, ModelError, require
from indexes.dense.onnx_models import OnnxModel, exported, score_encoded
from rag.rerank.trained import read_model_manifest

if TYPE_CHECKING:
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import PairTokenizer

ADAPTER_FILE = "adapter.safetensors"
MANIFEST_FILE = "manifest.json"


class AdapterModel:
    """A trained adapter folder, loaded and checked; subclasses say what it is."""

    what: ClassVar[str]  # "support model", in messages
    format: ClassVar[str]  # the manifest's format
    required: ClassVar[tuple[str, ...]]  # the manifest's keys loading needs
    setting: ClassVar[str]  # the profile key naming another folder
    command: ClassVar[str]  # the command that trains one
    export_name: ClassVar[str]  # the exported file's name

    def __init__(self, folder: Path, *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ConfigError(f"the {self.what} needs batch_size >= 1, got {batch_size}")
        self.folder = folder
        self.manifest = read_model_manifest(
            folder, self.format, self.required, self.what, self.setting, self.command
        )
        self.batch_size = batch_size

    @cached_property
    def _tokenizer(self) -> PairTokenizer:
        from indexes.dense.embedder import packaged_minilm_dir
        from rag.rerank.trained import SHIPPED_MODEL, PairTokenizer, read_manifest

        length = int(self.manifest.get("max_length") or read_manifest(SHIPPED_MODEL)["max_length"])
        return PairTokenizer(packaged_minilm_dir() / "tokenizer.json", length)

    @cached_property
    def _model(self) -> OnnxModel:
        """The model run by ONNX Runtime, exported from torch the first time these weights are
        used; the weights' hashes are checked either way."""
        from rag.rerank.trained import (
            SHIPPED_MODEL,
            check_file,
            check_relevance_files,
            read_manifest,
            weights_key,
        )

        relevance = read_manifest(SHIPPED_MODEL)
        if relevance["overlay_sha256"] != self.manifest["relevance_overlay_sha256"]:
            raise ModelError(
                f"the {self.what} at {self.folder} was trained over another relevance model than the "
                f"one shipped in {SHIPPED_MODEL}; retrain it with `{self.command}`"
            )
        check_relevance_files(SHIPPED_MODEL, relevance)
        check_file(
            self.folder / ADAPTER_FILE,
            self.manifest["adapter_sha256"],
            f"the {self.what}'s adapter",
            f"restore it from git or retrain with `{self.command}`",
        )
        hashes = (relevance["base_sha256"], relevance["overlay_sha256"], self.manifest["adapter_sha256"])
        return exported(self.export_name, weights_key(*hashes), self._torch_model)

    def prepare(self) -> Path:
        """Export the model for query time now (a no-op once done); the exported file."""
        return self._model.path

    def _torch_model(self) -> SupportModel:
        safetensors = require("safetensors.torch", package="safetensors", extra="dense")
        from rag.rerank.minilm import SupportModel
        from rag.rerank.trained import SHIPPED_MODEL, load_relevance, read_manifest

        relevance = read_manifest(SHIPPED_MODEL)
        model = SupportModel(
            int(relevance["trainable_from"]), int(self.manifest["rank"]), float(self.manifest["alpha"])
        )
        load_relevance(model, SHIPPED_MODEL, relevance)
        model.adapt()
        trained = safetensors.load_file(str(self.folder / ADAPTER_FILE))
        if set(trained) != set(model.trained_names()):
            raise ModelError(
                f"{self.folder / ADAPTER_FILE} holds other tensors than this architecture expects; retrain"
            )
        model.load_state_dict({k: v.float() for k, v in trained.items()}, strict=False)
        return model.eval()

    def pair_logits(self, firsts: Sequence[str], seconds: Sequence[str]) -> np.ndarray:
        """The model's raw logit for each ``(firsts[i], seconds[i])``."""
        if len(firsts) != len(seconds):
            raise ValueError(f"{len(firsts)} first texts for {len(seconds)} second ones")
        if not firsts:
            return np.zeros(0, dtype=np.float64)
        tokenizer = self._tokenizer
        encoded = [tokenizer.encode(a, [b])[0] for a, b in zip(firsts, seconds, strict=True)]
        out = score_encoded(self._model, encoded, self.batch_size)
        if not np.isfinite(out).all():
            raise ModelError(f"the {self.what} at {self.folder} produced non-finite scores; retrain it")
        return np.asarray(out, dtype=np.float64)

    @staticmethod
    def sigmoid(z: Any) -> np.ndarray:
        return np.asarray(0.5 * (1.0 + np.tanh(np.asarray(z, dtype=np.float64) / 2.0)))
