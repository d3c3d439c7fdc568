"""ASGI middleware: request ids with an access log line, and a request body size limit.

Pure ASGI (not BaseHTTPMiddleware) so streamed responses pass through untouched. The access
log records method, path, status, bytes and time, never the body: questions may carry patient
data.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from starlette.exceptions import HTTPException

from api.errors import error_body

Scope = dict[str, Any]
Message = dict[str, Any]
log = logging.getLogger("medcite.api.access")

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestContext:
    """Give every request an id (a caller's sane X-Request-ID, else a new one) and log it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        offered = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = offered if _SAFE_ID.match(offered) else uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = request_id
        start = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            log.info(
                "%s %s %s %d %.1fms",
                request_id,
                scope["method"],
                scope["path"],
                status,
                (time.perf_counter() - start) * 1000,
            )


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; an HTTPException so FastAPI's body parsing passes it on."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body over the limit of {max_bytes} bytes")


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, by header or by counting a chunked body.

    Not FastAPI's own ``FastAPI(max_body_size=...)`` (fastapi >= 0.164.0): for a body whose
    Content-Length is over the limit, Starlette's limiter under it replaces whatever response the
    app sends with a plain-text "Content Too Large", and it runs outside every user middleware,
    so that 413 carries neither medcite's OpenAI-style error body nor an X-Request-ID
    (tests/api/test_server.py checks both, by length and chunked).
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps(
            error_body(f"request body over the limit of {self.max_bytes} bytes", "request_too_large")
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
