"""The quote reader: which line of a guideline states the answer to a clinician's question?

The relevance model (``rag/rerank/weights/relevance-minilm``) was trained on BioASQ to judge
whether a passage is about a question; the quote model (``rag/check/quotes.py``) needs to know
which *line* answers it, and a line about the same drug for another indication is about the
question too. The reader is the relevance model with low-rank adapters on its top two layers
and its head fine-tuned (the support model's architecture, ``rag.rerank.minilm.SupportModel``)
on the clinician benchmark's dev part: (question, line with its headings) pairs, a positive
when the line states the question's key fact and comes from a passage that answers it
(``training/quote_reader.py``, run by ``medcite train quotes``). Its logit and the line's rank
by it are the quote model's first two features.

A model folder holds ``adapter.safetensors`` (float16, under 0.5 MB) and ``manifest.json``
(the relevance overlay's and the adapter's sha256, rank and alpha, data hashes, the training
settings, the out-of-fold metrics on dev, the command that reproduces it). Loading checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import ConfigError, ModelError
from indexes.dense.onnx_models import OnnxModel, score_encoded
from rag.rerank.trained import adapted_relevance, read_model_manifest

if TYPE_CHECKING:
    from rag.rerank.trained import PairTokenizer

SHIPPED_QUOTE_READER = Path(__file__).parent / "weights" / "quote-reader"
FORMAT = "medcite-quote-reader-1"
REQUIRED = ("format", "relevance_overlay_sha256", "adapter_sha256", "rank", "alpha", "max_length")
COMMAND = "`medcite train quotes`"


class QuoteReader:
    """Scores (question, line) pairs: a :class:`rag.rerank.sentences.SentenceScorer`."""

    name = "quote-reader"

    def __init__(self, model_path: Path | str | None = None, *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ConfigError(f"the quote reader needs batch_size >= 1, got {batch_size}")
        self.folder = Path(model_path) if model_path is not None else SHIPPED_QUOTE_READER
        self.manifest = read_model_manifest(
            self.folder, FORMAT, REQUIRED, "quote reader", "the quote reader's folder", COMMAND.strip("`")
        )
        self.batch_size = batch_size

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "adapter_sha256": self.manifest["adapter_sha256"]}

    @cached_property
    def _tokenizer(self) -> PairTokenizer:
        from indexes.dense.embedder import packaged_minilm_dir
        from rag.rerank.trained import PairTokenizer

        return PairTokenizer(packaged_minilm_dir() / "tokenizer.json", int(self.manifest["max_length"]))

    @cached_property
    def _model(self) -> OnnxModel:
        return adapted_relevance(self.folder, self.manifest, "quote-reader", COMMAND)

    def prepare(self) -> Path:
        """Export the model for query time now (a no-op once done); the exported file."""
        return self._model.path

    def logits(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """The reader's logit that each of ``texts`` states the answer to ``question``."""
        if not texts:
            return np.zeros(0, dtype=np.float64)
        out = score_encoded(self._model, self._tokenizer.encode(question, texts), self.batch_size)
        if not np.isfinite(out).all():
            raise ModelError(f"the quote reader at {self.folder} produced non-finite scores; retrain it")
        return out
