"""A live uvicorn server on 127.0.0.1 for API tests, with a real BM25 index and a scripted model.

The HTTP server, routing, auth, limits, queue and streaming are the subject here, so the model is
a scripted stand-in whose timing the tests control (the real model is in tests/e2e/test_serve.py).
"""

from __future__ import annotations

import codecs
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import uvicorn
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from api.main import create_app
from api.settings import ApiSettings
from core.errors import GeneratorTimeout
from core.paths import Paths
from core.types import Generation
from rag.assemble import Assembled
from rag.indexing import open_index
from rag.pipeline import Pipeline, PipelineSettings
from rag.profile import Profile
from rag.rerank.identity import IdentityReranker
from rag.retrieve.lexical import Bm25Retriever
from tests.helpers import ScriptedVerifier

KEY = "test-key-0123456789abcdef"


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


class RecordingRetriever(Bm25Retriever):
    """The real BM25 retriever, remembering the search texts it was given."""

    def __init__(self, index: Any) -> None:
        super().__init__(index)
        self.queries: list[str] = []

    def retrieve(self, query, k, filters=None):
        self.queries.append(query)
        return super().retrieve(query, k, filters)


def scripted_assembler(paths: Paths, generator: ScriptedGenerator, verifier: ScriptedVerifier | None = None):
    """Pipelines over the real BM25 index with the scripted model; the verifier supports every
    cited sentence unless given one that does not (the support gate runs as in production)."""

    def assemble(profile: Profile) -> Assembled:
        index, _ = open_index(paths, profile.index, with_embedder=False)
        settings = PipelineSettings(threshold=None, keep=3, max_tokens=profile.generator.max_tokens)
        pipeline = Pipeline(
            RecordingRetriever(index),
            IdentityReranker(),
            generator,
            verifier=verifier or ScriptedVerifier(),
            settings=settings,
        )
        return Assembled(pipeline=pipeline, index=index, profile=profile)

    return assemble


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


@contextmanager
def live_server(settings: ApiSettings, assembler: Any = None) -> Iterator[tuple[str, Any]]:
    """Run the app under uvicorn on a free loopback port; yields (base_url, app)."""
    app = create_app(settings, assembler=assembler)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=30)
