"""Multiple-choice answering by the option letters' next-token probabilities (no text parsing).

The model sees the question, the options and (in RAG mode) numbered sources, and the answer is
the letter with the highest probability renormalised over the option letters. If the model
gives no probability to any letter, that is an error, never a silent default answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from core.errors import GeneratorError
from core.types import Answer, Hit
from rag.generate import prompts
from rag.protocols import Generator
from rag.turn import Clock


def option_probabilities(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Softmax over the options' log-probabilities: ``p_i = exp(l_i) / sum_j exp(l_j)``."""
    finite = {k: v for k, v in logprobs.items() if math.isfinite(v)}
    if not finite:
        raise GeneratorError("the model gave no probability to any option letter; cannot choose")
    top = max(finite.values())
    weights = {k: math.exp(finite[k] - top) if k in finite else 0.0 for k in logprobs}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def choose_option(
    generator: Generator,
    question: str,
    options: Mapping[str, str],
    evidence: Sequence[Hit],
    clock: Clock,
    usage: Mapping[str, int],
    notes: Sequence[str],
) -> Answer:
    if len(options) < 2:
        raise ValueError("a multiple-choice question needs at least two options")
    messages = prompts.choice_messages(question, options, evidence)
    with clock.stage("generate"):
        logprobs = generator.next_token_logprobs(messages, list(options))
    probs = option_probabilities(logprobs)
    choice = max(probs, key=lambda letter: probs[letter])
    return Answer(
        question=question,
        text=f"{choice}. {options[choice]}",
        mode="rag" if evidence else "closed-book",
        evidence=tuple(evidence),
        timings=clock.timings,
        usage=dict(usage),
        notes=tuple(notes),
        choice=choice,
        option_probs=probs,
    )
