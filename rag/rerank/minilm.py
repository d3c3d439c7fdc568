"""MiniLM-L6 read as a cross-encoder: question and passage in one input, one relevance logit out.

The weights of the base model are the registry's all-MiniLM-L6-v2 (the embedder medcite already
installs); a relevance model adds its own top layers and a linear head, trained here
(``training/``), stored as a small safetensors overlay. The encoder is written out in plain
torch (about sixty lines of BERT) rather than through ``transformers``' ``BertModel`` so that

- training can run the frozen bottom layers once per pair and cache their output
  (:meth:`MiniLmEncoder.bottom` / :meth:`MiniLmEncoder.top`), which ``BertModel`` has no stable
  public seam for (its attention-mask plumbing changed across 4.x and 5.x);
- the code that scores at query time is the code that was trained, whatever the installed
  ``transformers`` version.

``tests/unit/rag/test_minilm.py`` checks it against sentence-transformers: mean-pooled outputs
agree to 1e-5, so the base weights are read correctly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.errors import ModelError, require

torch: Any = require("torch", package="torch", extra="dense")
nn: Any = torch.nn
F: Any = torch.nn.functional

HIDDEN, HEADS, INTERMEDIATE, LAYERS, EPS = 384, 12, 1536, 6, 1e-12


class _Layer(nn.Module):  # type: ignore[misc]
    """One post-LayerNorm BERT block; parameter names follow the Hugging Face checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.attn_out, self.attn_norm = nn.Linear(HIDDEN, HIDDEN), nn.LayerNorm(HIDDEN, eps=EPS)
        self.ffn_in, self.ffn_out = nn.Linear(HIDDEN, INTERMEDIATE), nn.Linear(INTERMEDIATE, HIDDEN)
        self.ffn_norm = nn.LayerNorm(HIDDEN, eps=EPS)

    def forward(self, x: Any, bias: Any) -> Any:
        batch, length, _ = x.shape

        def heads(t: Any) -> Any:
            return t.view(batch, length, HEADS, HIDDEN // HEADS).transpose(1, 2)

        attended = F.scaled_dot_product_attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)), bias)
        attended = attended.transpose(1, 2).reshape(batch, length, HIDDEN)
        x = self.attn_norm(x + self.attn_out(attended))
        return self.ffn_norm(x + self.ffn_out(F.gelu(self.ffn_in(x))))


# Hugging Face name -> our name, per layer.
_LAYER_NAMES = {
    "attention.self.query": "q", "attention.self.key": "k", "attention.self.value": "v",
    "attention.output.dense": "attn_out", "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "ffn_in", "output.dense": "ffn_out", "output.LayerNorm": "ffn_norm",
}  # fmt: skip


class MiniLmEncoder(nn.Module):  # type: ignore[misc]
    """Embeddings + 6 BERT layers. ``bottom(ids, types, mask, n)`` runs the first ``n`` layers,
    ``top(hidden, mask, n)`` the rest, so ``top(bottom(...))`` equals a full forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.word = nn.Embedding(30522, HIDDEN)
        self.position = nn.Embedding(512, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.embed_norm = nn.LayerNorm(HIDDEN, eps=EPS)
        self.layers = nn.ModuleList(_Layer() for _ in range(LAYERS))

    @staticmethod
    def attention_bias(mask: Any) -> Any:
        """Additive bias (batch, 1, 1, length): 0 for tokens, a large negative for padding."""
        return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min

    def bottom(self, ids: Any, types: Any, mask: Any, n: int) -> Any:
        positions = torch.arange(ids.shape[1], device=ids.device)[None, :]
        x = self.embed_norm(self.word(ids) + self.position(positions) + self.token_type(types))
        bias = self.attention_bias(mask)
        for layer in self.layers[:n]:
            x = layer(x, bias)
        return x

    def top(self, hidden: Any, mask: Any, n: int) -> Any:
        bias = self.attention_bias(mask)
        for layer in self.layers[n:]:
            hidden = layer(hidden, bias)
        return hidden

    def load_hf(self, tensors: Mapping[str, Any]) -> None:
        """Load a Hugging Face BERT checkpoint's tensors (``embeddings.*``, ``encoder.layer.N.*``)."""
        ours: dict[str, Any] = {}
        for name, value in tensors.items():
            key = _hf_to_ours(name)
            if key is not None:
                ours[key] = value
        missing = sorted(set(self.state_dict()) - set(ours))
        if missing:
            raise ModelError(f"the base model lacks {len(missing)} tensors, e.g. {missing[:3]}; reinstall it")
        self.load_state_dict(ours, strict=True)


def _hf_to_ours(name: str) -> str | None:
    name = name.removeprefix("bert.")
    fixed = {
        "embeddings.word_embeddings.weight": "word.weight",
        "embeddings.position_embeddings.weight": "position.weight",
        "embeddings.token_type_embeddings.weight": "token_type.weight",
        "embeddings.LayerNorm.weight": "embed_norm.weight",
        "embeddings.LayerNorm.bias": "embed_norm.bias",
    }
    if name in fixed:
        return fixed[name]
    if not name.startswith("encoder.layer."):
        return None  # position_ids buffer, pooler: not used
    index, _, rest = name.removeprefix("encoder.layer.").partition(".")
    module, _, param = rest.rpartition(".")
    if module not in _LAYER_NAMES:
        return None
    return f"layers.{index}.{_LAYER_NAMES[module]}.{param}"


def mean_pool(hidden: Any, mask: Any) -> Any:
    """Mean of the token vectors, padding excluded (how all-MiniLM-L6-v2 was trained to pool)."""
    weights = mask[:, :, None].to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


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
            name for name, _ in self.named_parameters()
            if name.startswith("head.") or (name.startswith(top) and (".lora_" in name or "_norm." in name))
        ]  # fmt: skip
