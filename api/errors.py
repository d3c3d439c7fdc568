"""One place that turns exceptions into HTTP statuses with OpenAI-style error bodies.

Every error body is ``{"error": {"message", "type", "param", "code"}}``. A body that fails
schema validation is a 400 ``invalid_request_error`` as at OpenAI (not FastAPI's 422), with
``param`` naming the field (``messages.0.role``) and ``code`` saying what is wrong with it
(``missing_required_parameter``, ``invalid_type``, ``invalid_value``, ``unknown_parameter``,
``unsupported_parameter``, ``unsupported_value``); a body that is not JSON (malformed, or sent
as a form or other non-JSON content type) is a 400 ``invalid_json``.
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

# Most specific first: the first matching class decides the status and the error type.
STATUS: list[tuple[type[BaseException], int, str]] = [
    (QueueTimeoutError, 503, "server_busy"),
    (QueueFullError, 429, "rate_limit_exceeded"),
    (UnknownModelError, 404, "invalid_request_error"),  # as OpenAI answers
    (QueryError, 400, "invalid_request_error"),
    (ConfigError, 400, "invalid_request_error"),
    (GeneratorTimeout, 504, "timeout"),
    (GeneratorError, 503, "generator_unavailable"),
    (ModelError, 503, "generator_unavailable"),
    (IndexStoreError, 503, "index_unavailable"),
    (MedciteError, 500, "server_error"),
]
# The error code where it says more than the type, and the parameter an exception is about.
CODE: dict[type[BaseException], str] = {UnknownModelError: "model_not_found"}
PARAM: dict[type[BaseException], str] = {UnknownModelError: "model"}


class ApiError(Exception):
    """An HTTP-level refusal raised by the API itself (auth, limits)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str,
        headers: dict[str, str] | None = None,
        *,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.headers = headers or {}
        self.code = code or kind
        self.param = param


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


def code_and_param(exc: BaseException) -> tuple[str, str | None]:
    """The error body's ``code`` and ``param`` for an exception (``classify`` gives its type)."""
    if isinstance(exc, ApiError):
        return exc.code, exc.param
    param = next((p for cls, p in PARAM.items() if isinstance(exc, cls)), None)
    code = next((c for cls, c in CODE.items() if isinstance(exc, cls)), None)
    return code or classify(exc)[1], param


# pydantic error types -> OpenAI error codes; a type not listed is "invalid_value"
_CODES = {
    "missing": "missing_required_parameter",
    "extra_forbidden": "unknown_parameter",
    "unsupported_parameter": "unsupported_parameter",
    "unsupported_value": "unsupported_value",
    "json_invalid": "invalid_json",
}
# pydantic names union members in an error's location ("str", "list[TextPart]", "constrained-str");
# no field name looks like one
_UNION_TAGS = {"str", "int", "float", "bool", "none", "list", "dict"}


def error_code(pydantic_type: str) -> str:
    """The OpenAI-style ``code`` for a pydantic validation error type."""
    if pydantic_type in _CODES:
        return _CODES[pydantic_type]
    if pydantic_type.endswith(("_type", "_parsing")) or pydantic_type == "is_instance_of":
        return "invalid_type"
    return "invalid_value"


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", "messages", 0, "role")`` -> ``"messages.0.role"`` (union member tags left out)."""
    parts = [
        str(p)
        for p in loc[1 if loc and loc[0] == "body" else 0 :]
        if not (isinstance(p, str) and (p in _UNION_TAGS or "[" in p or "-" in p or p[:1].isupper()))
    ]
    return ".".join(parts)


def _not_json(error: Any) -> bool:
    """JSON that does not parse, or a body FastAPI did not read as JSON at all (a form, text, no
    Content-Type: it reaches validation as raw bytes)."""
    whole_body = tuple(error.get("loc", ())) == ("body",)
    return error.get("type") == "json_invalid" or (whole_body and isinstance(error.get("input"), bytes))


def validation_error_body(errors: list[Any], content_type: str | None = None) -> dict[str, Any]:
    """The 400 body for a request that failed schema validation.

    ``param`` and ``code`` come from the error deepest in the body: of a union's failed members
    (``stop`` as a string, as a list), the one that got furthest says what is wrong.
    """
    if any(_not_json(e) for e in errors):
        sent = f" (this one was sent as {content_type})" if content_type else ""
        return error_body(
            "the request body is not valid JSON; send a JSON object with Content-Type: application/json"
            + sent,
            "invalid_request_error",
            code="invalid_json",
        )
    first: dict[str, Any] = max(errors, key=lambda e: len(e.get("loc", ())), default={})
    param = field_path(first.get("loc", ())) or None
    ordered = [first, *(e for e in errors if e is not first)][:5]
    problems = "; ".join(f"{field_path(e.get('loc', ())) or 'body'}: {e.get('msg')}" for e in ordered)
    code = error_code(str(first.get("type", "")))
    return error_body(f"invalid request: {problems}", "invalid_request_error", code=code, param=param)


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
        code, param = code_and_param(exc)
        if status >= 500:
            log.warning("request %s failed: %s: %s", request_id_of(request), type(exc).__name__, exc)
        return JSONResponse(error_body(str(exc), kind, code, param), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        body = validation_error_body(list(exc.errors()), request.headers.get("content-type"))
        return JSONResponse(body, status_code=400)

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
