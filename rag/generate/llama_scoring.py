"""Next-token scoring on a loaded llama.cpp model, for multiple-choice letters and yes/no judgements.

Reading the model's distribution over its first reply token is more reliable than parsing what
a 1.5B model writes ("The answer is C", "**C**", "Option C."), and costs one prompt evaluation
instead of a generation. Prompts that share a prefix (the same passages, another question)
reuse llama.cpp's KV cache for that prefix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.errors import GeneratorError
from rag.generate.backend import candidate_forms

__all__ = ["candidate_logprobs", "last_position_logits", "single_token_ids"]


def last_position_logits(llm: Any, llama_cpp: Any, tokens: Sequence[int]) -> np.ndarray:
    """Logits (float32, full vocabulary) of the token that would follow ``tokens``.

    Only the suffix after the longest prefix already in the KV cache is evaluated, and always at
    least the last token, so the logits belong to this prompt.
    """
    cached = llm.input_ids[: llm.n_tokens].tolist()
    keep = 0
    for a, b in zip(cached, tokens, strict=False):
        if a != b:
            break
        keep += 1
    keep = min(keep, len(tokens) - 1)
    llm.n_tokens = keep  # eval() drops the KV cache from this position on
    try:
        llm.eval(list(tokens[keep:]))
    except (ValueError, RuntimeError) as exc:
        llm.n_tokens = 0  # the cache state is unknown: the next call evaluates from scratch
        raise GeneratorError(f"llama.cpp failed to evaluate the prompt: {exc}") from exc
    row = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()


def single_token_ids(llm: Any, candidate: str) -> tuple[int, ...]:
    """Token ids under which ``candidate`` can start the reply: its bare form ("A") and its
    space-prefixed form (" A"), each only where it is one token. Empty when neither is."""
    ids: set[int] = set()
    for form in candidate_forms(candidate):
        tokens = llm.tokenize(form.encode("utf-8"), add_bos=False, special=False)
        if len(tokens) == 1:
            ids.add(int(tokens[0]))
    return tuple(sorted(ids))


def candidate_logprobs(logits: np.ndarray, ids: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """``log P(candidate)`` = logsumexp of the log-softmax over the whole vocabulary at its ids;
    ``-inf`` for a candidate with no ids."""
    z = logits.astype(np.float64)
    logprobs = z - np.logaddexp.reduce(z)
    return {c: float(np.logaddexp.reduce(logprobs[list(t)])) if t else -math.inf for c, t in ids.items()}
