"""Request dependencies: the server state, bearer-key authentication and per-client rate limits."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.errors import ApiError
from api.ratelimit import client_identity
from api.state import ServerState

bearer = HTTPBearer(auto_error=False, description="one of the keys in MEDCITE_API_KEYS")


def get_state(request: Request) -> ServerState:
    state: ServerState | None = getattr(request.app.state, "medcite", None)
    if state is None:  # only between process start and the end of the lifespan start-up
        raise ApiError(503, "the server is still loading its indexes and models", "server_starting")
    return state


def require_key(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """Accept the request only with a valid bearer key (when keys are configured).

    Every configured key is compared in constant time, and all are compared, so the response
    time does not reveal which key or how much of one matched.
    """
    keys = get_state(request).settings.api_keys
    if not keys:
        return
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        missing = "missing API key: send 'Authorization: Bearer <key>'"
        raise ApiError(401, missing, "invalid_api_key", challenge)
    offered = credentials.credentials.encode()
    matched = False
    for key in keys:
        matched |= secrets.compare_digest(offered, key.encode())
    if not matched:
        raise ApiError(401, "invalid API key", "invalid_api_key", challenge)


def require_client(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """An authenticated client within its rate limit (401 first, then 429 with Retry-After)."""
    require_key(request, credentials)
    limiter = get_state(request).rate_limiter
    if limiter is not None:
        key = credentials.credentials if credentials is not None else None
        address = request.client.host if request.client is not None else None
        limiter.check(client_identity(key, address))


StateDep = Annotated[ServerState, Depends(get_state)]
