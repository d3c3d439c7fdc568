"""The rubric judge: one criterion, one reply, a JSON verdict ``{"met": bool, "explanation": str}``.

The prompt (:class:`JudgeAsk`) follows HealthBench's grader: decide whether the reply meets the
criterion as written, and for a criterion with negative points whether the reply does that bad
thing. The rules are a system turn every judge call shares (the local model keeps its evaluated
state); the conversation, the reply and the criterion are one user turn (split over three turns,
the 1.5B local model called every reply "met": docs/evaluation.md). A reply that does not parse
as the verdict is answered with one more turn asking for the JSON alone, up to ``attempts``
replies in all; then the criterion is ungraded (``met`` None). Greedy decoding and the judge
cache (:mod:`evals.engine.judge.cache`) make every attempt a cached call, so a resumed run asks
nothing twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictBool, ValidationError

from core.types import Message
from rag.generate.sentences import marker_free
from rag.protocols import Generator

PROMPT_VERSION = 1  # recorded in the manifest; bump when the prompt's words change
CONVERSATION_MAX_CHARS = 6000  # the conversation's end is kept: a 4k-token local judge must fit
REPLY_MAX_CHARS = 4000
SYSTEM = (
    "You grade one reply of a health assistant against one rubric criterion.\n"
    "Decide whether the reply meets the criterion as it is written. If the criterion describes "
    "something undesirable (negative points), say whether the reply does that undesirable thing, "
    "not whether the reply is good. When a criterion says 'such as', 'for example' or 'including', "
    "the reply need not name every example.\n"
    "Answer with one JSON object and nothing else: "
    '{"met": true or false, "explanation": "at most 15 words"}'
)
READ = "Conversation:\n{conversation}\n\nReply to grade:\n{reply}"
ASK = (
    "Criterion ({points:+g} points): {criterion}\n\n"
    "Does the reply meet this criterion? Answer with the JSON object only."
)
AGAIN = (
    'That was not the JSON object asked for. Answer with only {"met": true or false, "explanation": "..."}.'
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


class Verdict(BaseModel):
    """The judge's verdict; HealthBench's own key ``criteria_met`` is read as ``met``."""

    model_config = ConfigDict(extra="ignore")

    met: StrictBool = Field(validation_alias=AliasChoices("met", "criteria_met"))
    explanation: str = ""

    @classmethod
    def parse(cls, text: str) -> Verdict | None:
        """The first JSON object of ``text`` (code fences allowed) as a verdict, else None. An
        object left open (the small local judge drops the closing brace, or is cut inside its
        explanation) is closed first: ``met`` comes before the explanation, so it is whole."""
        body = _FENCE.sub("", text.strip())
        start = body.find("{")
        if start < 0:
            return None
        for ending in ("", "}", '"}'):
            try:
                raw, _ = json.JSONDecoder().raw_decode(body[start:] + ending)
                return cls.model_validate(raw)
            except (ValueError, ValidationError):
                continue
        return None


@dataclass(frozen=True)
class JudgeAsk:
    """What the judge is asked about one criterion: the conversation, the reply, the criterion."""

    conversation: tuple[Message, ...]
    reply: str
    criterion: str
    points: float

    def messages(self) -> list[Message]:
        turns = "\n\n".join(f"{m.role}: {m.content}" for m in self.conversation)
        if len(turns) > CONVERSATION_MAX_CHARS:
            turns = "[earlier turns cut] ..." + turns[-CONVERSATION_MAX_CHARS:]
        reply = marker_free(self.reply)[:REPLY_MAX_CHARS] or "(empty reply)"
        read = READ.format(conversation=turns, reply=reply)
        return [
            Message("system", SYSTEM),
            Message("user", f"{read}\n\n{ASK.format(points=self.points, criterion=self.criterion)}"),
        ]


@dataclass(frozen=True)
class JudgeResult:
    met: bool | None  # None: no parsable verdict in ``attempts`` replies
    explanation: str
    attempts: int


def judge_criterion(judge: Generator, ask: JudgeAsk, *, attempts: int, max_tokens: int) -> JudgeResult:
    """The judge's verdict on ``ask``, asking again (bounded) while its reply does not parse.

    GeneratorError (a timeout, a server down) is the caller's to handle: nothing is decided."""
    messages = ask.messages()
    replies: Sequence[str] = []
    for attempt in range(1, attempts + 1):
        text = judge.generate(messages, max_tokens=max_tokens, temperature=0.0).text
        verdict = Verdict.parse(text)
        if verdict is not None:
            return JudgeResult(verdict.met, " ".join(verdict.explanation.split()), attempt)
        replies = [*replies, text]
        messages = [*messages, Message("assistant", text.strip() or "(nothing)"), Message("user", AGAIN)]
    return JudgeResult(None, f"unparsable: {replies[-1][:200]!r}", attempts)
