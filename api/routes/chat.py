"""``POST /v1/chat/completions``: OpenAI-compatible answers with citations, streamed or not.

The latest user turn is the question; the turn before it shapes the search (follow-ups); the
client's system messages are not passed to the model (medcite's own instructions govern
citation and abstention). Every request takes a generation slot first (429 when the queue is
full). Content streams a sentence at a time: ``Pipeline.stream`` lets a sentence out only once
the support gate has verified it (``rag/gate/gate.py``), so an unsupported sentence never
reaches a client as ``content``, and the pieces add up to the final ``medcite.text``. A stream
starts only once its first piece exists (a verified sentence or the abstention), so failures
before it (unknown model, bad query, generator down, a timeout in the first sentence) get their
proper HTTP status; failures after it arrive as an OpenAI-style ``error`` event before ``[DONE]``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from api.completions import AbstainHoldBack, ChunkWriter, completion_body
from api.deps import StateDep, require_client
from api.errors import ApiError, classify, public_message, request_id_of
from api.gate import Slot
from api.runner import ClientGone, PipelineRun
from api.schemas import ChatMessageIn, ChatRequest, ErrorBody
from api.settings import ApiSettings
from core.types import Answer, Filters, Message
from rag.generate.prompts import abstain_token

router = APIRouter()
log = logging.getLogger("medcite.api")

# A body that fails schema validation is a 400, as at OpenAI (not FastAPI's 422).
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 404, 413, 429, 503, 504)
}
# One server-sent event: `data` is a chat.completion.chunk or an error object as JSON, or [DONE].
SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "properties": {"data": {"type": "string"}, "event": {"type": "string"}},
    "required": ["data"],
}
RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "a chat.completion object; with stream=true, server-sent chat.completion.chunk "
        "events, the last one carrying citations, then `data: [DONE]`",
        "content": {"application/json": {}, "text/event-stream": {"schema": SSE_EVENT}},
    },
    **ERRORS,
}


def split_turns(messages: list[ChatMessageIn], limits: ApiSettings) -> tuple[str, list[Message]]:
    """The question (last message, from the user) and the earlier user/assistant turns."""
    if len(messages) > limits.max_messages:
        raise ApiError(
            413, f"{len(messages)} messages is over the limit of {limits.max_messages}", "request_too_large"
        )
    if messages[-1].role != "user":
        raise ApiError(
            400,
            "the last message must be the user's question",
            "invalid_request_error",
            code="invalid_value",
            param=f"messages.{len(messages) - 1}.role",
        )
    question = messages[-1].text()
    if len(question) > limits.max_question_chars:
        raise ApiError(
            413,
            f"the question has {len(question)} characters, over the limit of {limits.max_question_chars}",
            "request_too_large",
        )
    history = [Message(m.role, m.text()) for m in messages[:-1] if m.role in {"user", "assistant"}]
    return question, history


def generation_limits(body: ChatRequest, default_tokens: int, limits: ApiSettings) -> dict[str, Any]:
    """The request's changes to the pipeline (``Pipeline.for_request``): token budget, temperature, stop."""
    max_tokens = body.max_completion_tokens or body.max_tokens or default_tokens
    if max_tokens > limits.max_tokens:
        field = "max_completion_tokens" if body.max_completion_tokens else "max_tokens"
        raise ApiError(
            400,
            f"{field}={max_tokens} is over this server's limit of {limits.max_tokens}",
            "invalid_request_error",
            code="invalid_value",
            param=field,
        )
    changes: dict[str, Any] = {"max_tokens": max_tokens}
    if body.temperature is not None:
        changes["temperature"] = body.temperature
    if body.stop is not None:
        changes["stop"] = body.stop_sequences()  # the generator ends before the first one
    return changes


@router.post(
    "/v1/chat/completions", dependencies=[Depends(require_client)], responses=RESPONSES, tags=["openai"]
)
async def chat_completions(body: ChatRequest, request: Request, state: StateDep) -> Response:
    served = state.get(body.model)
    question, history = split_turns(body.messages, state.settings)
    changes = generation_limits(body, served.assembled.pipeline.profile.generator.max_tokens, state.settings)
    pipeline = served.assembled.pipeline.for_request(**changes)
    filters = body.filters.to_filters() if body.filters else Filters()
    if state.settings.log_questions:
        log.info("request %s question: %s", request_id_of(request), question)

    slot = await state.gate.acquire()
    run = PipelineRun(
        lambda cancelled: pipeline.stream(
            question,
            closed_book=body.closed_book,
            filters=filters or None,
            history=history,
            cancelled=cancelled,
        )
    )
    handed_over = False
    try:
        run.start()
        if body.stream:
            first = await run.next(request)
            handed_over = True
            return StreamingResponse(
                _events(run, slot, first, served.name, changes["max_tokens"], body, request_id_of(request)),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        answer = await _collect(run, request)
        return JSONResponse(completion_body(answer, model=served.name, max_tokens=changes["max_tokens"]))
    except ClientGone:
        return Response(status_code=499)  # nobody is listening; the status only reaches the log
    finally:
        if not handed_over:
            run.cancel.set()
            run.when_done(slot.release)


async def _collect(run: PipelineRun, request: Request) -> Answer:
    answer: Answer | None = None
    while True:
        kind, value = await run.next(request)
        if kind == "end":
            break
        if isinstance(value, Answer):
            answer = value
    if answer is None:
        raise ApiError(500, "the pipeline ended without an answer", "server_error")
    return answer


async def _events(
    run: PipelineRun,
    slot: Slot,
    first: tuple[str, Any],
    model: str,
    max_tokens: int,
    body: ChatRequest,
    request_id: str,
) -> AsyncIterator[str]:
    """The SSE stream: role, verified sentences, the final chunk with citations, usage, [DONE].

    On a client disconnect Starlette cancels this generator; ``finally`` then tells the worker
    to stop and frees the generation slot once the worker has let go of the model.
    """
    writer = ChunkWriter(model)
    holdback = AbstainHoldBack(abstain_token())
    answer: Answer | None = None
    try:
        yield writer.role()
        kind, value = first
        while kind != "end":
            if isinstance(value, Answer):
                answer = value
            else:
                text = holdback.feed(value)
                if text:
                    yield writer.content(text)
            kind, value = await run.next()
        if answer is None:
            raise ApiError(500, "the pipeline ended without an answer", "server_error")
        rest = holdback.finish(answer)
        if rest:
            yield writer.content(rest)
        yield writer.final(answer, max_tokens)
        if body.stream_options and body.stream_options.include_usage:
            yield writer.usage(answer)
        yield writer.done()
    except Exception as exc:  # noqa: BLE001  (after the 200 went out, errors travel in the stream)
        status, kind_name, _ = classify(exc)
        if status >= 500:
            log.warning("request %s: stream failed: %s: %s", request_id, type(exc).__name__, exc)
        yield writer.error(public_message(exc, request_id), kind_name)
        yield writer.done()
    finally:
        run.cancel.set()
        run.when_done(slot.release)
