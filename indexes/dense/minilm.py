"""MiniLM-L6 (BERT, 6 layers, 384 wide) in plain torch: the encoder under the embedder and the
trained relevance and support models, as trained and as exported to ONNX.

About sixty lines of BERT rather than ``transformers``' ``BertModel`` (or sentence-transformers
around it), so that

- no process imports sentence-transformers or ``transformers`` (about 9 s of imports on this
  machine before the first vector; ``docs/benchmarks.md``, "First run and per-question time"),
  and a query imports no torch at all: these modules are exported once to ONNX and scored with
  ONNX Runtime (``indexes/dense/onnx_models.py``);
- training can run the frozen bottom layers once per pair and cache their output
  (:meth:`MiniLmEncoder.bottom` / :meth:`MiniLmEncoder.top`), which ``BertModel`` has no stable
  public seam for (its attention-mask plumbing changed across 4.x and 5.x);
- the code that scores at query time is the code that was trained, whatever the installed
  ``transformers`` version.

``tests/e2e/test_minilm_embedder.py`` checks the embedder against sentence-transformers on the
shipped weights, and ``tests/e2e/test_onnx_models.py`` the exported models against these
modules: they agree to float32 rounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import ModelError, require
from indexes.dense.onnx_models import padded as padded_arrays

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
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "attn_out",
    "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "ffn_in",
    "output.dense": "ffn_out",
    "output.LayerNorm": "ffn_norm",
}


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


def padded(encoded: Sequence[tuple[list[int], list[int]]]) -> tuple[Any, Any, Any]:
    """Right-padded ``(ids, type_ids, mask)`` tensors for one batch of ``(ids, type_ids)``."""
    ids, types, mask = padded_arrays(encoded)
    return torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask)


def mean_pool(hidden: Any, mask: Any) -> Any:
    """Mean of the token vectors, padding excluded (how all-MiniLM-L6-v2 was trained to pool)."""
    weights = mask[:, :, None].to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


class SentenceVectors(nn.Module):  # type: ignore[misc]
    """The embedder as one module: the encoder, mean pooling and L2 normalisation (what is
    exported to ONNX; ``indexes/dense/onnx_models.py``)."""

    def __init__(self, encoder: MiniLmEncoder) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, ids: Any, types: Any, mask: Any) -> Any:
        hidden = self.encoder.bottom(ids, types, mask, LAYERS)
        return F.normalize(mean_pool(hidden, mask), dim=-1)


def numpy_runner(module: Any, bfloat16: bool = False) -> Any:
    """``module`` called as an :class:`indexes.dense.onnx_models.OnnxModel` is: int64 arrays in, a
    float32 array out (so one scoring loop serves both runtimes). ``bfloat16``: matrix products in
    bfloat16 with float32 sums (torch's CPU autocast; norms, softmax and pooling stay float32)."""

    def run(ids: Any, types: Any, mask: Any) -> Any:
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bfloat16)
        with torch.inference_mode(), autocast:
            out = module(torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask))
        return out.float().numpy()

    return run
