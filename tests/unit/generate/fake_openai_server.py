"""A tiny OpenAI-shaped chat server on 127.0.0.1 for tests, told per request how to behave.

Behaviours (queued with :meth:`FakeOpenAIServer.then`, default ``ok``): ``ok`` answers normally
(streaming when the request asks, the last event with a finish reason, then ``data: [DONE]``),
``slow`` sleeps before answering, ``500``/``429``/``400`` answer with that status,
``retry_after`` answers 429 with ``Retry-After: 1``, ``garbage`` answers 200 with a non-JSON
body, ``shape`` answers JSON without choices, ``no_logprobs`` answers without logprobs,
``bad_event`` streams a broken event, ``error_event`` an OpenAI-style error event, ``cut``
streams the reply but closes the connection before its finish reason and ``data: [DONE]``,
``multiline`` streams events whose JSON is split over several ``data:`` lines, with comment
lines inside and comment-only keep-alive blocks between (all valid SSE; no ``id:`` field: after
one, openai 3.57's decoder turns a later comment-only block into an empty event and fails on it).
Every request is recorded with its path, body, headers and arrival time (``time.monotonic``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = ["Vitamin", " C", " deficiency", "."]
TOP_LOGPROBS = [
    {"token": "C", "logprob": -0.5},
    {"token": " C", "logprob": -1.5},
    {"token": "B", "logprob": -2.0},
    {"token": "The", "logprob": -3.0},
]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is what the slow tests want


class FakeOpenAIServer:
    def __init__(self, slow_s: float = 1.0) -> None:
        self.behaviours: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.arrivals: list[float] = []
        self.slow_s = slow_s
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                server.arrivals.append(time.monotonic())
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, **body})
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                server.respond(self, body, server.behaviours.popleft() if server.behaviours else "ok")

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def then(self, *behaviours: str) -> FakeOpenAIServer:
        self.behaviours.extend(behaviours)
        return self

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def respond(self, h: BaseHTTPRequestHandler, body: dict[str, Any], behaviour: str) -> None:
        if behaviour == "slow":
            time.sleep(self.slow_s)
        if behaviour in {"500", "429", "400"}:
            return self.send(h, int(behaviour), {"error": {"message": f"status {behaviour} on purpose"}})
        if behaviour == "retry_after":
            error = {"error": {"message": "busy, come back in a second"}}
            return self.send(h, 429, error, headers={"Retry-After": "1"})
        if behaviour == "garbage":
            return self.send(h, 200, b"<html>not json</html>")
        if behaviour == "shape":
            return self.send(h, 200, {"object": "chat.completion", "choices": []})
        if body.get("stream"):
            return self.stream(h, behaviour)
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": "".join(REPLY)}}
        choice["finish_reason"] = "stop"
        if body.get("logprobs") and behaviour != "no_logprobs":
            choice["logprobs"] = {"content": [{"token": "C", "logprob": -0.5, "top_logprobs": TOP_LOGPROBS}]}
        usage = {"prompt_tokens": 12, "completion_tokens": len(REPLY), "total_tokens": 12 + len(REPLY)}
        return self.send(h, 200, {"object": "chat.completion", "choices": [choice], "usage": usage})

    @staticmethod
    def send(
        h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def stream(h: BaseHTTPRequestHandler, behaviour: str) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
        events += [
            {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in REPLY
        ]
        last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        h.wfile.write(b": keep-alive\n\n")
        for event in events:
            if behaviour == "multiline":  # one JSON object over several data: lines (joined by "\n")
                text = json.dumps(event, indent=1)
                lines = [f"data: {line}\n" for line in text.split("\n")]
                lines.insert(len(lines) // 2, ": still generating\n")  # a comment inside an event
                h.wfile.write(("event: message\n" + "".join(lines) + "\n").encode())
                h.wfile.write(b":\n\n: keep-alive\n\n")  # comment-only blocks, as proxies send
            else:
                h.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        if behaviour == "bad_event":
            h.wfile.write(b"data: {not json\n\n")
        if behaviour == "error_event":
            h.wfile.write(b'data: {"error": {"message": "out of memory on purpose"}}\n\n')
        if behaviour != "cut":
            h.wfile.write(b"data: " + json.dumps(last).encode() + b"\n\n")
            h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()
