"""OpenAI chat-completion bodies and stream chunks built from medcite answers (pure functions).

Both shapes carry the same medcite additions: ``citations`` (each resolving to the exact
passage: chunk id, document, character span, quote, support score), ``evidence`` (the passages
the model was given) and ``medcite`` (answer mode, notes, per-sentence support, timings, the
passages and lines read). In a stream they arrive on the final chunk, after the last piece of
text and before ``[DONE]``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict
from typing import Any

from core.types import Answer, Hit
from rag.render import citation_to_dict, hit_to_dict, sentence_to_dict


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage_of(answer: Answer) -> dict[str, int]:
    prompt = int(answer.usage.get("prompt_tokens", 0))
    completion = int(answer.usage.get("completion_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def finish_reason(answer: Answer, max_tokens: int) -> str:
    return "length" if answer.usage.get("completion_tokens", 0) >= max_tokens else "stop"


def read_to_dict(hit: Hit) -> dict[str, Any]:
    chunk = hit.chunk
    return {"chunk_id": chunk.chunk_id, "title": chunk.title, "score": hit.score, "rank": hit.rank}


def extras(answer: Answer) -> dict[str, Any]:
    """The medcite fields added to a completion (top level) or to the final stream chunk."""
    return {
        "citations": [citation_to_dict(c) for c in answer.citations],
        "evidence": [hit_to_dict(h) for h in answer.evidence],
        "medcite": {
            "mode": answer.mode,
            # answer | closest_lines | nothing_relevant | closed_book | degraded (mode "abstained"
            # is closest_lines or nothing_relevant: not an answer either way)
            "outcome": answer.outcome,
            "text": answer.text,  # the final text: what the stream's content pieces add up to
            "notes": list(answer.notes),
            # every generated sentence, with what the support gate did (removed ones included)
            "sentences": [sentence_to_dict(s) for s in answer.sentences],
            "timings": {k: round(v, 4) for k, v in answer.timings.items()},
            # what was read, whatever the outcome (docs/usage.md, "What a reply is"): every passage
            # scored, kept or not (its text is in evidence when kept), and the best lines' P
            "read": [read_to_dict(h) for h in answer.read],
            "lines_read": [asdict(line) for line in answer.lines_read],
            # what the earlier user turns contributed to the question read (docs/api.md, "Follow-ups")
            "carried": list(answer.carried),
        },
    }


def completion_body(answer: Answer, *, model: str, max_tokens: int) -> dict[str, Any]:
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer.text},
                "finish_reason": finish_reason(answer, max_tokens),
                "logprobs": None,
            }
        ],
        "usage": usage_of(answer),
        **extras(answer),
    }


class ChunkWriter:
    """Server-sent events in the OpenAI ``chat.completion.chunk`` format for one completion."""

    def __init__(self, model: str) -> None:
        self.id = completion_id()
        self.created = int(time.time())
        self.model = model

    def _event(self, choices: list[dict[str, Any]], **more: Any) -> str:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **more,
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    def role(self) -> str:
        delta = {"role": "assistant", "content": ""}
        return self._event([{"index": 0, "delta": delta, "finish_reason": None}])

    def content(self, text: str) -> str:
        return self._event([{"index": 0, "delta": {"content": text}, "finish_reason": None}])

    def final(self, answer: Answer, max_tokens: int) -> str:
        choice = {"index": 0, "delta": {}, "finish_reason": finish_reason(answer, max_tokens)}
        return self._event([choice], **extras(answer))

    def usage(self, answer: Answer) -> str:
        return self._event([], usage=usage_of(answer))

    @staticmethod
    def error(message: str, kind: str) -> str:
        return f"data: {json.dumps({'error': {'message': message, 'type': kind, 'code': kind}})}\n\n"

    @staticmethod
    def done() -> str:
        return "data: [DONE]\n\n"


class AbstainHoldBack:
    """Hold back streamed text while it could still be the model's abstention token.

    The model signals "the sources do not answer this" by starting with a fixed token, which
    the pipeline turns into an abstention message; a client must never see the raw token.
    ``feed`` returns what may be sent now; ``finish`` returns what remains to send once the
    final answer is known.
    """

    def __init__(self, token: str) -> None:
        self.token = token.upper()
        self.held = ""
        self.deciding = True
        self.suppressed = False
        self.sent = ""

    def feed(self, piece: str) -> str:
        if self.suppressed:
            return ""
        if not self.deciding:
            return self._send(piece)
        self.held += piece
        probe = self.held.lstrip().upper()
        if probe.startswith(self.token):
            self.deciding, self.suppressed = False, True
            return ""
        if self.token.startswith(probe):
            return ""  # still undecided (includes whitespace-only text)
        self.deciding = False
        return self._send(self.held)

    def finish(self, answer: Answer) -> str:
        if self.suppressed or (answer.mode in {"abstained", "degraded"} and not self.sent):
            return self._send(answer.text)
        if self.deciding and self.held:
            return self._send(self.held)
        return ""

    def _send(self, text: str) -> str:
        self.sent += text
        return text
