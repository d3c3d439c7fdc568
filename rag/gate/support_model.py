"""The support model medcite trains itself: does this passage state what this sentence claims?

The heuristic verifier (``rag.gate.verify``) reads topic and wording but not meaning: it accepts
most claims with a negation added or removed or a direction flipped (figures:
docs/results/module_history.md). This model reads the pair together: the relevance
cross-encoder (``rag/rerank/weights/relevance-minilm``) with low-rank adapters on its top two
layers and its own head (``rag.rerank.minilm.SupportModel``), trained on BioASQ 7B-10B claims
against their gold snippets, with perturbed claims and other questions' passages as negatives
(``training/support.py``; ``medcite models train-support``).

The model reads a passage's Markdown as plain prose (``rag.reading.plain_text``). A passage longer
than its input is read in windows of whole sentences (:func:`windows`, about ``window_tokens``
wordpieces each, neighbours sharing one sentence, each prefixed by the passage's heading); a
pair's logit is the best window's. ``P(supported) = sigmoid(a * logit + c * lexical + b)``, where
``lexical`` is the share of the claim's content words in the passage
(``rag.gate.support_signals.lexical_coverage``) and ``a, c, b`` are fitted on the dev questions
of ``evals.datasets.support_set``: the model alone reads a fluent passage on the right topic as
support more often than the heuristic does.

A model folder holds ``adapter.safetensors`` (float16) and ``manifest.json`` (the base,
relevance-overlay and adapter sha256, architecture, calibration, the threshold chosen on dev,
data hashes, metrics, the command that reproduces it). Loading checks all three hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import ModelError
from core.types import Chunk
from rag.gate.support_signals import lexical_coverage
from rag.generate.sentences import sentence_spans
from rag.reading.plain_text import plain_text
from rag.rerank.adapter import MANIFEST_FILE, AdapterModel
from rag.rerank.evidence import heading
from rag.rerank.trained import read_model_manifest

if TYPE_CHECKING:
    from rag.rerank.trained import PairTokenizer

SHIPPED_SUPPORT_MODEL = Path(__file__).parent / "weights" / "support-minilm"
FORMAT = "medcite-support-1"
REQUIRED = (
    "format",
    "relevance_overlay_sha256",
    "adapter_sha256",
    "rank",
    "alpha",
    "window_tokens",
    "calibration",
)
FEATURES = ("best_window_logit", "lexical_coverage")  # the calibration's inputs, in this order


def read_support_manifest(folder: Path) -> dict[str, Any]:
    manifest = read_model_manifest(
        folder, FORMAT, REQUIRED, "support model", "verify.model_path", "medcite models train-support"
    )
    if tuple(manifest["calibration"].get("features", ())) != FEATURES:
        raise ModelError(
            f"{folder / MANIFEST_FILE} calibrates on {manifest['calibration'].get('features')}, "
            "this medcite on "
            f"{list(FEATURES)}; retrain with `medcite models train-support`"
        )
    return dict(manifest)


def calibrated(logits: np.ndarray, lexical: np.ndarray, calibration: dict[str, Any]) -> np.ndarray:
    """P(supported) from the best window's logit and the lexical coverage (see the module docstring)."""
    a, c = (float(w) for w in calibration["weights"])
    z = a * np.asarray(logits, dtype=np.float64) + c * np.asarray(lexical, dtype=np.float64)
    return np.asarray(0.5 * (1.0 + np.tanh((z + float(calibration["bias"])) / 2.0)))


def windows(
    heading: str, body: str, token_counts: Sequence[int], spans: Sequence[tuple[int, int]], budget: int
) -> list[str]:
    """Sentence-aligned windows of ``body`` of about ``budget`` wordpieces, each after ``heading``.

    ``spans`` are the body's sentences and ``token_counts`` their wordpiece counts. A window
    grows sentence by sentence while it fits (one sentence always fits: the tokenizer cuts it);
    the next window starts at the previous window's last sentence, so a claim drawn from two
    neighbouring sentences is seen with both.
    """
    prefix = f"{heading}\n" if heading else ""
    if not spans:
        return [prefix + body.strip()] if body.strip() else ([heading] if heading else [])
    out: list[str] = []
    start = 0
    while True:
        end, used = start + 1, token_counts[start]
        while end < len(spans) and used + token_counts[end] <= budget:
            used += token_counts[end]
            end += 1
        out.append(prefix + " ".join(body[s:e].strip() for s, e in spans[start:end]))
        if end >= len(spans):
            return out
        start = end - 1 if end - 1 > start else end


def passage_windows(tokenizer: PairTokenizer, heading: str, body: str, budget: int) -> list[str]:
    """:func:`windows` with the sentences counted by ``tokenizer``."""
    spans = sentence_spans(body)
    return windows(heading, body, tokenizer.count([body[s:e] for s, e in spans]), spans, budget)


class TrainedSupport(AdapterModel):
    """P(the passage supports the claim) from the trained support model; see the module docstring."""

    what = "support model"
    format = FORMAT
    required = REQUIRED
    setting = "verify.model_path"
    command = "medcite models train-support"
    export_name = "support"

    def __init__(self, model_path: Path | str | None = None, *, batch_size: int = 32) -> None:
        super().__init__(
            Path(model_path) if model_path is not None else SHIPPED_SUPPORT_MODEL, batch_size=batch_size
        )
        self.manifest = read_support_manifest(self.folder)

    @property
    def threshold(self) -> float | None:
        value = self.manifest.get("threshold")
        return None if value is None else float(value)

    def windows_of(self, heading: str, body: str) -> list[str]:
        """The windows a passage is read in (see :func:`windows`)."""
        return passage_windows(self._tokenizer, heading, body, int(self.manifest["window_tokens"]))

    def logits(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """The model's raw logit for each ``(claims[i], passages[i])``, one window each."""
        return self.pair_logits(claims, passages)

    def best_logits(self, pairs: Sequence[tuple[str, Chunk]]) -> np.ndarray:
        """Each ``(claim, passage)``'s logit over the passage's windows: the best one's."""
        flat_claims: list[str] = []
        flat_windows: list[str] = []
        owner: list[int] = []
        cache: dict[tuple[str, str], list[str]] = {}
        for i, (claim, chunk) in enumerate(pairs):
            key = (heading(chunk), chunk.text)
            if key not in cache:  # the model reads Markdown as the plain prose it was trained on
                cache[key] = self.windows_of(key[0], plain_text(key[1]))
            for window in cache[key]:
                flat_claims.append(claim)
                flat_windows.append(window)
                owner.append(i)
        best = np.full(len(pairs), -np.inf)
        np.maximum.at(best, np.asarray(owner, dtype=np.int64), self.logits(flat_claims, flat_windows))
        return best

    def probabilities(self, pairs: Sequence[tuple[str, Chunk]]) -> np.ndarray:
        """Calibrated P(supported) for each ``(claim, passage)`` (0 for a passage with no text)."""
        best = self.best_logits(pairs)
        lexical = np.array([lexical_coverage(claim, chunk) for claim, chunk in pairs], dtype=np.float64)
        finite = np.isfinite(best)
        p = calibrated(np.where(finite, best, 0.0), lexical, self.manifest["calibration"])
        return np.where(finite, p, 0.0)
