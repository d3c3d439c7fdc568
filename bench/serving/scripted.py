"""Scripted stand-ins for the model and the support verifier, for a medcite chain whose answers the
caller controls: the chat page's benchmark and screenshots (bench/serving/live_chat.py), the API tests
(tests/api/support.py) and the unit tests (tests/helpers.py).

Both are light (core's types only), so importing them loads no server and no model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from core.errors import GeneratorTimeout
from core.types import Generation, SentenceSupport


class ScriptedGenerator:
    """Streams ``reply`` word by word, ``delay_s`` apart; can wait on a gate or time out.

    ``gate``: each stream waits for it before the first piece (to hold the model busy).
    ``timeout_after``: raise GeneratorTimeout after this many pieces (0: before any).
    Records how many pieces each stream yielded and whether the stream was closed early.
    Honours ``stop`` as llama.cpp does: the reply ends before the first stop sequence, which is
    never yielded; the stop sequences of each call are recorded.
    """

    name = "scripted"

    def __init__(self, reply: str, *, delay_s: float = 0.0) -> None:
        self.reply = reply
        self.delay_s = delay_s
        self.gate: threading.Event | None = None
        self.timeout_after: int | None = None
        self.streams: list[dict[str, Any]] = []
        self.stops: list[tuple[str, ...]] = []
        self.lock = threading.Lock()

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        record = {"pieces": 0, "closed_early": False, "finished": False, "started": time.monotonic()}
        self.streams.append(record)
        self.stops.append(tuple(stop))
        with self.lock:  # one at a time, like llama.cpp
            if self.gate is not None:
                self.gate.wait(timeout=30)
            ends = [self.reply.find(s) for s in stop if s in self.reply]
            words = self.reply[: min(ends, default=len(self.reply))].split(" ")
            try:
                for n, word in enumerate(words):
                    if self.timeout_after is not None and n >= self.timeout_after:
                        raise GeneratorTimeout("generation took longer than 0.1 s; raise timeout_s")
                    time.sleep(self.delay_s)
                    record["pieces"] += 1
                    yield word if n == 0 else " " + word
                record["finished"] = True
            except GeneratorExit:
                record["closed_early"] = True
                raise
        return {"prompt_tokens": 100, "completion_tokens": record["pieces"]}

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        text = "".join(self.stream(messages, max_tokens=max_tokens, stop=stop))
        return Generation(text=text, prompt_tokens=100, completion_tokens=len(text.split()), seconds=0.0)

    def next_token_logprobs(self, messages, candidates):
        return {c: -1.0 for c in candidates}

    def fingerprint(self):
        return {"name": self.name}


class ScriptedVerifier:
    """A stand-in for ``SupportVerifier``: every cited sentence scores 0.9 against each passage it
    cites, except those whose claim contains one of ``unsupported`` (0.1), and those whose claim
    contains a phrase of ``only_from`` against passages not listed for it (0.1). Records the
    claims it was asked about, call by call."""

    def __init__(
        self,
        unsupported: Sequence[str] = (),
        threshold: float = 0.5,
        only_from: dict[str, Sequence[int]] | None = None,
    ) -> None:
        self.unsupported = tuple(unsupported)
        self.only_from = dict(only_from or {})
        self.threshold = threshold
        self.uses_generator = False
        self.calls: list[list[str]] = []

    def _value(self, claim: str, marker: int) -> float:
        if any(phrase in claim for phrase in self.unsupported):
            return 0.1
        if any(phrase in claim and marker not in ks for phrase, ks in self.only_from.items()):
            return 0.1
        return 0.9

    def score_sentences(self, sentences, sources, question=None):
        self.calls.append([s.claim for s in sentences])
        out = []
        for s in sentences:
            by_marker = {k: self._value(s.claim, k) for k in s.markers}
            support = max(by_marker.values(), default=0.0)
            supported = bool(s.markers) and support >= self.threshold
            out.append((SentenceSupport(s.claim, s.markers, support, supported), by_marker))
        return out
