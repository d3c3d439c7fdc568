"""One place that turns exceptions into HTTP statuses with OpenAI-style error bodies.

Clients never see a stack trace: unexpected exceptions become a 500 that names the request id,
and the trace goes to the server log under the same id.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.gate import QueueFullError, QueueTimeoutError
from api.state import UnknownModelError
from core.errors import (
    ConfigError,
    GeneratorError,
    GeneratorTimeout,
    IndexStoreError,
    MedciteError,
    ModelError,
    QueryError,
)

log = logging.getLogger("medcite.api")

# Most specific first: the first matching class decides the status.
STATUS: list[tuple[type[BaseException], int, str]] = [
    (QueueTimeoutError, 503, "server_busy"),
    (QueueFullError, 429, "rate_limit_exceeded"),
    (UnknownModelError, 404, "model_not_found"),
    (QueryError, 400, "invalid_request_error"),
    (ConfigError, 400, "invalid_request_error"),
    (GeneratorTimeout, 504, "timeout"),
    (GeneratorError, 503, "generator_unavailable"),
    (ModelError, 503, "generator_unavailable"),
    (IndexStoreError, 503, "index_unavailable"),
    (MedciteError, 500, "server_error"),
]


class ApiError(Exception):
    """An HTTP-level refusal raised by the API itself (auth, limits)."""

    def __init__(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.headers = headers or {}


def error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code or kind}}


def classify(exc: BaseException) -> tuple[int, str, dict[str, str]]:
    """Status, error type and extra headers for an exception raised while answering."""
    if isinstance(exc, ApiError):
        return exc.status, exc.kind, exc.headers
    for cls, status, kind in STATUS:
        if isinstance(exc, cls):
            headers = {"Retry-After": str(exc.retry_after_s)} if isinstance(exc, QueueFullError) else {}
            return status, kind, headers
    return 500, "server_error", {}


def public_message(exc: BaseException, request_id: str) -> str:
    if isinstance(exc, MedciteError | ApiError):
        return str(exc)
    return f"internal error; the server log has the details under request id {request_id}"


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", "unknown"))


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    @app.exception_handler(MedciteError)
    async def _known(request: Request, exc: Exception) -> JSONResponse:
        status, kind, headers = classify(exc)
        if status >= 500:
            log.warning("request %s failed: %s: %s", request_id_of(request), type(exc).__name__, exc)
        return JSONResponse(error_body(str(exc), kind), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            not_json = error_body("the request body is not valid JSON", "invalid_request_error")
            return JSONResponse(not_json, status_code=400)
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
            for e in errors[:5]
        )
        body = error_body(f"invalid request: {problems}", "invalid_request_error", param=where or None)
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kinds = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}
        kind = kinds.get(exc.status_code, "invalid_request_error")
        return JSONResponse(
            error_body(str(exc.detail), kind), status_code=exc.status_code, headers=exc.headers or None
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        rid = request_id_of(request)
        log.exception("request %s: unexpected error", rid)
        return JSONResponse(error_body(public_message(exc, rid), "server_error"), status_code=500)
