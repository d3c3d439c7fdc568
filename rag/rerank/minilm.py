"""The relevance and support models: the MiniLM encoder (``indexes/dense/minilm.py``) read as a
cross-encoder, question and passage in one input, one logit out.

The weights of the base model are the registry's all-MiniLM-L6-v2 (the embedder medcite already
installs); a relevance model adds its own top layers and a linear head, trained here
(``training/``), stored as a small safetensors overlay.
"""

from __future__ import annotations

import math
from typing import Any

from core.errors import ModelError
from indexes.dense.minilm import HIDDEN, LAYERS, MiniLmEncoder, mean_pool, nn, torch

F: Any = torch.nn.functional


class RelevanceModel(nn.Module):  # type: ignore[misc]
    """The encoder, mean pooling and one linear unit: a relevance logit per (question, passage).

    ``trainable_from`` is the first layer the relevance training changes; the layers below it
    and the embeddings are the base weights, unchanged (so only the top layers and the head are
    stored).
    """

    def __init__(self, trainable_from: int = 4) -> None:
        super().__init__()
        if not 0 <= trainable_from < LAYERS:
            raise ModelError(f"trainable_from must be in 0..{LAYERS - 1}, got {trainable_from}")
        self.trainable_from = trainable_from
        self.encoder = MiniLmEncoder()
        self.head = nn.Linear(HIDDEN, 1)
        nn.init.normal_(self.head.weight, std=1.0 / math.sqrt(HIDDEN))
        nn.init.zeros_(self.head.bias)

    def trained_names(self) -> list[str]:
        """Names of the parameters the overlay stores: the top layers and the head."""
        prefixes = (*(f"encoder.layers.{i}." for i in range(self.trainable_from, LAYERS)), "head.")
        return [name for name, _ in self.named_parameters() if name.startswith(prefixes)]

    def logits_from_hidden(self, hidden: Any, mask: Any) -> Any:
        top = self.encoder.top(hidden, mask, self.trainable_from)
        return self.head(mean_pool(top, mask)).squeeze(-1)

    def forward(self, ids: Any, types: Any, mask: Any) -> Any:
        hidden = self.encoder.bottom(ids, types, mask, self.trainable_from)
        return self.logits_from_hidden(hidden, mask)


class LoraLinear(nn.Linear):  # type: ignore[misc]
    """A frozen linear layer plus a trained low-rank update: ``W x + b + (alpha/r) B A x``.

    ``weight`` and ``bias`` keep their names, so a checkpoint of the plain layer loads into it;
    ``lora_b`` starts at zero, so a freshly adapted layer computes exactly what it did before.
    """

    def __init__(self, source: Any, rank: int, alpha: float) -> None:
        super().__init__(source.in_features, source.out_features)
        with torch.no_grad():
            self.weight.copy_(source.weight)
            self.bias.copy_(source.bias)
        self.lora_a = nn.Parameter(torch.randn(rank, source.in_features) / math.sqrt(source.in_features))
        self.lora_b = nn.Parameter(torch.zeros(source.out_features, rank))
        self.scale = alpha / rank

    def forward(self, x: Any) -> Any:
        update = F.linear(F.linear(x, self.lora_a), self.lora_b)
        return F.linear(x, self.weight, self.bias) + update * self.scale


ADAPTED = ("q", "k", "v", "attn_out", "ffn_in", "ffn_out")


class SupportModel(RelevanceModel):  # type: ignore[misc]
    """Does the passage support the claim? The relevance model with low-rank adapters.

    Built in two steps so the stored adapter stays small: load the base weights and the
    relevance overlay into it as into a :class:`RelevanceModel`, then :meth:`adapt` swaps the
    top layers' linear maps for :class:`LoraLinear`. What training changes (and the support
    overlay stores) is the adapters, the top layers' LayerNorms and the head.
    """

    def __init__(self, trainable_from: int = 4, rank: int = 16, alpha: float = 32.0) -> None:
        super().__init__(trainable_from)
        if rank < 1:
            raise ModelError(f"the adapter rank must be >= 1, got {rank}")
        self.rank, self.alpha = rank, alpha

    def adapt(self) -> None:
        for layer in self.encoder.layers[self.trainable_from :]:
            for name in ADAPTED:
                current = getattr(layer, name)
                if not isinstance(current, LoraLinear):
                    setattr(layer, name, LoraLinear(current, self.rank, self.alpha))

    def trained_names(self) -> list[str]:
        top = tuple(f"encoder.layers.{i}." for i in range(self.trainable_from, LAYERS))
        return [
            name
            for name, _ in self.named_parameters()
            if name.startswith("head.") or (name.startswith(top) and (".lora_" in name or "_norm." in name))
        ]
