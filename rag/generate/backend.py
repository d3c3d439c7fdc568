"""What the two generator backends (``llamacpp``, in-process, and ``openai_compat``, over HTTP)
share: the chat as they hand it to a template, the wall-clock deadline of one call, the reply's
:class:`Generation`, and how candidate tokens are spelled and their probabilities combined.

Requests, retries and the mapping of transport errors are not here: only the HTTP backend makes
requests; llama.cpp is a function call whose failures are its own exceptions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from core.types import Generation, Message
from rag.generate.prompts import defuse_control_tokens

__all__ = ["Deadline", "candidate_forms", "chat_messages", "generation", "logsumexp"]


def chat_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """The chat as role/content dicts, every content defused: the template's special tokens are
    parsed in the formatted prompt (by llama.cpp here, by the server there), so no message may
    forge a turn of its own."""
    return [{"role": m.role, "content": defuse_control_tokens(m.content)} for m in messages]


class Deadline:
    """The end of one call's ``timeout_s`` (``None``: never), counted from its construction.

    Also a llama.cpp stopping criterion (called with the ids and logits so far), which ends
    generation once the time is up. Once passed, it stays passed.
    """

    def __init__(self, timeout_s: float | None) -> None:
        self.end = math.inf if timeout_s is None else time.monotonic() + timeout_s
        self.expired = False

    def passed(self) -> bool:
        self.expired = self.expired or time.monotonic() > self.end
        return self.expired

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        return self.passed()


def generation(
    text: str, prompt_tokens: int, completion_tokens: int, started: float, finish_reason: str | None
) -> Generation:
    """The reply, timed from ``started`` (``time.perf_counter``); no finish reason reads as "stop"."""
    return Generation(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        seconds=time.perf_counter() - started,
        finish_reason=finish_reason or "stop",
    )


def candidate_forms(candidate: str) -> tuple[str, ...]:
    """The spellings that start a reply with ``candidate``: bare ("A") and space-prefixed (" A");
    none for the empty string."""
    return (candidate, " " + candidate) if candidate else ()


def logsumexp(values: Sequence[float]) -> float:
    """``log(sum(exp(v)))``, shifted by the maximum so tiny probabilities do not underflow;
    ``-inf`` for no values (or only ``-inf``)."""
    top = max(values, default=-math.inf)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))
