"""A tiny OpenAI-shaped chat server on 127.0.0.1 for tests, told per request how to behave.

Behaviours (queued with :meth:`FakeOpenAIServer.then`, default ``ok``): ``ok`` answers normally
(streaming when the request asks), ``slow`` sleeps before answering, ``500``/``429``/``400``
answer with that status, ``garbage`` answers 200 with a non-JSON body, ``shape`` answers JSON
without choices, ``no_logprobs`` answers without logprobs, ``bad_event`` streams a broken event,
``cut`` streams the reply but closes the connection before ``data: [DONE]``.
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
        self.slow_s = slow_s
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, **body})
                server.headers.append(dict(self.headers))
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
        if behaviour == "garbage":
            return self.send(h, 200, b"<html>not json</html>")
        if behaviour == "shape":
            return self.send(h, 200, {"object": "chat.completion", "choices": []})
        if body.get("stream"):
            return self.stream(h, broken=behaviour == "bad_event", cut=behaviour == "cut")
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": "".join(REPLY)}}
        choice["finish_reason"] = "stop"
        if body.get("logprobs") and behaviour != "no_logprobs":
            choice["logprobs"] = {"content": [{"token": "C", "logprob": -0.5, "top_logprobs": TOP_LOGPROBS}]}
        usage = {"prompt_tokens": 12, "completion_tokens": len(REPLY), "total_tokens": 12 + len(REPLY)}
        return self.send(h, 200, {"object": "chat.completion", "choices": [choice], "usage": usage})

    @staticmethod
    def send(h: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def stream(h: BaseHTTPRequestHandler, *, broken: bool, cut: bool = False) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
        events += [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in REPLY]
        h.wfile.write(b": keep-alive\n\n")
        for event in events:
            h.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        if broken:
            h.wfile.write(b"data: {not json\n\n")
        if not cut:
            h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()
