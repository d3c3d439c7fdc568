"""Scripted models and a fake OpenAI-compatible server for the Ray eval tests.

They live in an importable module (not a test file) because Ray workers unpickle them: a worker
imports ``tests.ray_eval_support`` from the driver's working directory. Every model call is
appended to a log file, so a test counts the calls made in every worker process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from core.types import Generation
from tests.helpers import written_answer


def preferred(text: str, candidates: list[str]) -> str:
    """A deterministic choice that depends on the prompt (not always the same letter)."""
    return candidates[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(candidates)]


class LoggedModel:
    """Prefers one option per prompt (a hash of it); writes cited answers; says yes to judgements.

    Each call appends ``<node id> <method> <pid>`` to ``log``; ``delay_s`` slows each call down;
    after ``fail_after`` calls (per process) it raises ``RuntimeError`` (a model that crashed)."""

    name = "logged-model"

    def __init__(self, log: Path, *, delay_s: float = 0.0, fail_after: int | None = None) -> None:
        self.log = str(log)
        self.delay_s = delay_s
        self.fail_after = fail_after
        self.calls = 0

    def _called(self, method: str) -> None:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("the scripted model crashed")
        time.sleep(self.delay_s)
        node = "driver"
        with contextlib.suppress(Exception):
            import ray

            if ray.is_initialized():
                node = ray.get_runtime_context().get_node_id()
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(f"{node} {method} {os.getpid()}\n")

    def next_token_logprobs(self, messages, candidates):
        self._called("logprobs")
        if any(c.lower() == "yes" for c in candidates):
            return {c: (-0.1 if c.lower() == "yes" else -3.0) for c in candidates}
        best = preferred(messages[-1].content, list(candidates))
        return {c: (-0.2 if c == best else -2.5) for c in candidates}

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        self._called("generate")
        text = written_answer(messages[-1].content)
        return Generation(text=text, prompt_tokens=50, completion_tokens=10, seconds=0.0)

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        yield self.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop).text

    def fingerprint(self):
        return {"name": self.name, "sha256": "1" * 64}


def calls(log: Path) -> list[str]:
    """The logged calls, one ``<node> <method> <pid>`` string each."""
    return log.read_text(encoding="utf-8").splitlines() if log.is_file() else []


class FakeServer:
    """An OpenAI-compatible ``/v1/chat/completions`` that answers one-token logprob requests the way
    :class:`LoggedModel` chooses, after ``delay_s``; counts requests and the most in flight at once."""

    def __init__(self, delay_s: float = 0.2) -> None:
        self.delay_s = delay_s
        self.requests = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:  # the stdlib's name for the handler of POST
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    time.sleep(server.delay_s)
                    reply = json.dumps(completion(body)).encode()
                finally:
                    with server._lock:
                        server.in_flight -= 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Handler

    def __enter__(self) -> FakeServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion whose one token's top logprobs favour :func:`preferred`'s letter."""
    prompt = body["messages"][-1]["content"]
    letters = re.findall(r"(?m)^([A-Z])\. ", prompt) or ["A", "B", "C", "D"]
    best = preferred(prompt, letters)
    top = [{"token": c, "logprob": -0.2 if c == best else -2.5, "bytes": None} for c in letters]
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {"role": "assistant", "content": best},
                "logprobs": {
                    "content": [{"token": best, "logprob": -0.2, "bytes": None, "top_logprobs": top}]
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }


@contextlib.contextmanager
def fake_servers(n: int, delay_s: float = 0.2) -> Iterator[list[FakeServer]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(FakeServer(delay_s)) for _ in range(n)]


def per_node(log: Path) -> Counter[str]:
    return Counter(line.split()[0] for line in calls(log))


def processes(log: Path, nodes: set[str]) -> set[str]:
    """The worker processes (pids) that made a logged call on one of ``nodes``."""
    return {line.split()[2] for line in calls(log) if line.split()[0] in nodes}
