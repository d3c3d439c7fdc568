"""Next-token scoring on a loaded llama.cpp model, for multiple-choice letters and yes/no judgements.

Reading the model's distribution over its first reply token is more reliable than parsing what
a 1.5B model writes ("The answer is C", "**C**", "Option C."), and costs one prompt evaluation
instead of a generation.

Exact prefix reuse (``settle_prefix``): llama.cpp's own reuse keeps whatever prefix the previous
prompt shared with this one, so the split between cached and newly evaluated tokens, and with it
the floating-point sums, depended on the previous item (issue 16 saw a near-tie of option
probabilities flip in 20 items). Only the *fixed* prefix of a prompt (its turns before the last:
the system turn every question and every answer judgement shares, or a chat's earlier turns)
is reused here, and it is always evaluated alone from position 0, so a
prompt's logits are the same bytes whatever came before it, in any process.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import GeneratorError
from rag.generate.backend import candidate_forms

if TYPE_CHECKING:
    from rag.generate.prefix_states import PrefixStates

__all__ = ["candidate_logprobs", "last_position_logits", "settle_prefix", "single_token_ids"]


def settle_prefix(llm: Any, tokens: Sequence[int], fixed: int, states: PrefixStates | None = None) -> int:
    """Leave exactly ``tokens[:fixed]`` in the KV cache, evaluated alone from position 0; return
    how many tokens are cached (``fixed``, or less to keep at least one token to evaluate).

    The prefix is kept when the cache already starts with it (it was evaluated the same way
    then), else restored from ``states`` (a session file another process saved of the same
    evaluation) or evaluated afresh and saved there; everything after it is dropped. Evaluating
    the rest from ``fixed`` on is then the same computation whatever the previous prompt was.
    """
    fixed = max(0, min(fixed, len(tokens) - 1))
    cached = llm.input_ids[: llm.n_tokens].tolist()
    if llm.n_tokens >= fixed and cached[:fixed] == list(tokens[:fixed]):
        llm.n_tokens = fixed  # eval() and generate() drop the KV cache from this position on
        return fixed
    llm.reset()
    if not fixed or (states is not None and states.restore(llm, tokens[:fixed])):
        return fixed
    try:
        llm.eval(list(tokens[:fixed]))
    except (ValueError, RuntimeError) as exc:
        llm.reset()
        raise GeneratorError(f"llama.cpp failed to evaluate the prompt: {exc}") from exc
    if states is not None:
        states.save(llm, tokens[:fixed])
    return fixed


def last_position_logits(
    llm: Any, llama_cpp: Any, tokens: Sequence[int], fixed: int = 0, states: PrefixStates | None = None
) -> np.ndarray:
    """Logits (float32, full vocabulary) of the token that would follow ``tokens``.

    Only ``tokens[:fixed]`` (the prompt's fixed prefix) may come from the KV cache
    (``settle_prefix``); the rest is always evaluated, at least the last token, so the logits
    belong to this prompt and do not depend on the previous one.
    """
    keep = settle_prefix(llm, tokens, fixed, states)
    try:
        llm.eval(list(tokens[keep:]))
    except (ValueError, RuntimeError) as exc:
        llm.reset()  # the cache state is unknown: the next call evaluates from scratch
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
