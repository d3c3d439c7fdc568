"""One reading of a yes/no judgement from a model's next-token log-probabilities.

Used by the ``llm`` reranker, the support verifier's optional judge and the answer-quality
judge. A 1.5B chat model mostly starts its reply with "Yes" rather than "yes", so both spellings
count, for either answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from core.errors import GeneratorError
from rag.generate.backend import logsumexp

YES: tuple[str, ...] = ("yes", "Yes")
NO: tuple[str, ...] = ("no", "No")
CANDIDATES: list[str] = [*YES, *NO]  # what to ask the generator's next_token_logprobs for


def yes_probability(logprobs: Mapping[str, float]) -> float | None:
    """``p(yes) / (p(yes) + p(no))`` over both spellings; None when every candidate is -inf.

    Computed as ``sigmoid(logsumexp(yes) - logsumexp(no))`` so tiny probabilities do not
    underflow to 0/0. A NaN means a broken model file, not an opinion: GeneratorError.
    """
    values = [float(logprobs.get(token, -math.inf)) for token in CANDIDATES]
    if any(math.isnan(v) for v in values):
        raise GeneratorError("the generator returned a NaN log-probability; check the model file")
    log_yes = logsumexp(values[: len(YES)])
    log_no = logsumexp(values[len(YES) :])
    if log_yes == -math.inf and log_no == -math.inf:
        return None
    diff = log_yes - log_no  # may be +-inf, which the branches below handle exactly
    if diff >= 0:
        return 1.0 / (1.0 + math.exp(-diff))
    return math.exp(diff) / (1.0 + math.exp(diff))
