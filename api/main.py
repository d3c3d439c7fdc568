"""``create_app(settings)``: the FastAPI application, built by a factory, nothing at import.

The lifespan loads every served profile once (indexes, embedder, generator) before the first
request is accepted, and closes them at shutdown. ``uvicorn --factory api.main:create_app``
and ``medcite serve`` both end up here.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool

from api import errors
from api.middleware import BodyLimit, RequestContext
from api.routes import chat, health, retrieve
from api.settings import ApiSettings, load_settings
from api.state import Assembler, load_state
from core import __version__


def serve(settings: ApiSettings) -> None:
    """Run the app under uvicorn until interrupted (``medcite serve``)."""
    import uvicorn

    configure_logging()
    cap_malloc_arenas()
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info", access_log=False)


def configure_logging() -> None:
    """The server's INFO log, without FAISS's loader lines: it tries its AVX-512 and AVX2 builds
    first and logs each one missing as a ``ModuleNotFoundError``, which reads as a failure on every
    start although the build it then loads is the one installed."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)


def cap_malloc_arenas(arenas: int = 2) -> bool:
    """Limit glibc to ``arenas`` malloc arenas (unless MALLOC_ARENA_MAX is set); True if applied.

    glibc gives each thread that allocates its own arena and returns little of it; the server runs
    up to 40 worker threads that embed queries with torch, so resident memory kept climbing under
    load (measured: +121 then +172 MiB over two 60 s phases of 32 clients); capped at two, +88
    then +67 MiB, throughput no lower (docs/reliability.md).
    """
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False  # the operator's choice, already applied by glibc at start
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (musl, macOS): nothing to tune
        return False
    m_arena_max = -8  # from malloc.h
    return bool(libc.mallopt(m_arena_max, arenas))


def create_app(settings: ApiSettings | None = None, *, assembler: Assembler | None = None) -> FastAPI:
    """The app for ``settings`` (default: ``MEDCITE_*``); ``assembler`` replaces model loading in tests."""
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = await run_in_threadpool(load_state, settings, assembler)
        app.state.medcite = state
        try:
            yield
        finally:
            app.state.medcite = None
            state.close()

    app = FastAPI(
        title="medcite",
        summary="Cited answers to clinical questions; OpenAI-compatible chat, retrieval, health.",
        version=__version__,
        lifespan=lifespan,
        docs_url="/docs" if settings.env == "development" else None,
        redoc_url=None,
    )
    app.state.medcite = None
    errors.install(app)
    app.include_router(health.router)
    app.include_router(retrieve.router)
    app.include_router(chat.router)
    from api.routes import page  # the chat page at / (api/static)

    app.include_router(page.router)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
        )
    _document_limits(app, settings)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestContext)  # outermost: every response, even a 413, gets an id
    return app


def _document_limits(app: FastAPI, settings: ApiSettings) -> None:
    """Serve a schema that states this server's limits, so clients and contract tests see them."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            retrieve = schema["components"]["schemas"]["RetrieveRequest"]["properties"]
            retrieve["k"]["maximum"] = settings.max_k
            retrieve["query"]["maxLength"] = settings.max_question_chars
            chat = schema["components"]["schemas"]["ChatRequest"]["properties"]
            chat["messages"]["maxItems"] = settings.max_messages
            _no_422(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _no_422(schema: dict[str, Any]) -> None:
    """Drop FastAPI's automatic 422 responses: a body that fails validation gets OpenAI's 400
    (api/errors.py), which each route declares with medcite's error body."""
    for operations in schema["paths"].values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    for name in ("HTTPValidationError", "ValidationError"):
        schema["components"]["schemas"].pop(name, None)
