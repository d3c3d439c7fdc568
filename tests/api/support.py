"""The API tests' harness: a live uvicorn server on 127.0.0.1 with a real BM25 index and a
scripted model, and the official OpenAI client checking every chat completion it receives.

The HTTP server, routing, auth, limits, queue and streaming are the subject here, so the model is
a scripted stand-in whose timing the tests control (the real model is in tests/e2e/test_serve.py).
The server, the scripted model and the test key are bench/serving/live_chat.py's and
bench/serving/scripted.py's (the chat page's benchmark and screenshots use them too); they are
imported here under the names the tests use.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from bench.serving.live_chat import KEY
from bench.serving.live_chat import live_server as live_server
from bench.serving.live_chat import scripted_assembler as scripted_assembler
from bench.serving.scripted import ScriptedGenerator as ScriptedGenerator


def conforming_completion(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` after checking it is an OpenAI chat.completion (medcite's extra fields allowed)."""
    ChatCompletion.model_validate(body)
    return body


def conforming_events(text: str) -> list[dict[str, Any] | str]:
    """The ``data`` of each server-sent event, each chunk checked against OpenAI's
    chat.completion.chunk (error events aside); ``[DONE]`` stays a string."""
    events: list[dict[str, Any] | str] = []
    for block in text.split("\n\n"):
        data = "".join(line[len("data: ") :] for line in block.splitlines() if line.startswith("data: "))
        if not data:
            continue
        if data == "[DONE]":
            events.append(data)
            continue
        event = json.loads(data)
        if "error" not in event:
            ChatCompletionChunk.model_validate(event)
        events.append(event)
    return events


class _CheckedEvents(httpx.SyncByteStream):
    """A streamed response passed through unchanged, each complete event checked on the way."""

    def __init__(self, inner: httpx.SyncByteStream) -> None:
        self.inner = inner
        self.pending = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def __iter__(self) -> Iterator[bytes]:
        for raw in self.inner:
            self.pending += self.decoder.decode(raw)
            complete, _, self.pending = self.pending.rpartition("\n\n")
            conforming_events(complete)
            yield raw
        conforming_events(self.pending)

    def close(self) -> None:
        self.inner.close()


class ConformingTransport(httpx.HTTPTransport):
    """Checks every chat completion the official client receives against ``openai.types``: a
    200 JSON body as ChatCompletion, each streamed chunk as ChatCompletionChunk."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if not request.url.path.endswith("/chat/completions") or response.status_code != 200:
            return response
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            assert isinstance(response.stream, httpx.SyncByteStream)
            response.stream = _CheckedEvents(response.stream)
            return response
        response.read()
        conforming_completion(response.json())
        return response


def client(url: str, key: str = KEY) -> openai.OpenAI:
    """The official client, with every chat completion it receives checked against openai.types."""
    http = httpx.Client(transport=ConformingTransport(), timeout=30)
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=30, http_client=http)
