"""A live uvicorn server on 127.0.0.1 for API tests, with a real BM25 index and a scripted model.

The HTTP server, routing, auth, limits, queue and streaming are the subject here, so the model is
a scripted stand-in whose timing the tests control (the real model is in tests/e2e/test_serve.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

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
    """

    name = "scripted"

    def __init__(self, reply: str, *, delay_s: float = 0.0) -> None:
        self.reply = reply
        self.delay_s = delay_s
        self.gate: threading.Event | None = None
        self.timeout_after: int | None = None
        self.streams: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        record = {"pieces": 0, "closed_early": False, "finished": False, "started": time.monotonic()}
        self.streams.append(record)
        with self.lock:  # one at a time, like llama.cpp
            if self.gate is not None:
                self.gate.wait(timeout=30)
            words = self.reply.split(" ")
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
        text = "".join(self.stream(messages, max_tokens=max_tokens))
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
            RecordingRetriever(index), IdentityReranker(), generator,
            verifier=verifier or ScriptedVerifier(), settings=settings,
        )  # fmt: skip
        return Assembled(pipeline=pipeline, index=index, profile=profile)

    return assemble


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
