"""``POST /v1/retrieve``: ranked passages with scores and provenance, no generation.

Runs in the thread pool, concurrently with other retrievals and beside a running generation.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from api.deps import StateDep, require_client
from api.errors import ApiError
from api.schemas import ChunkOut, ErrorBody, RetrieveRequest, RetrieveResponse
from core.types import Filters
from rag.render import hit_to_dict
from rag.retrieve.query import clean_query

router = APIRouter()


@router.post(
    "/v1/retrieve",
    response_model=RetrieveResponse,
    dependencies=[Depends(require_client)],
    responses={code: {"model": ErrorBody} for code in (400, 401, 404, 413, 429, 503)},
    tags=["medcite"],
)
async def retrieve(body: RetrieveRequest, state: StateDep) -> RetrieveResponse:
    limits = state.settings
    if body.k > limits.max_k:
        over = f"k={body.k} is over this server's limit of {limits.max_k}"
        raise ApiError(400, over, "invalid_request_error", code="invalid_value", param="k")
    if len(body.query) > limits.max_question_chars:
        raise ApiError(
            413,
            f"the query has {len(body.query)} characters, over the limit of {limits.max_question_chars}",
            "request_too_large",
        )
    served = state.get(body.model)
    query = clean_query(body.query)  # QueryError (400) for an empty or unusable query
    retriever = served.retriever(body.mode)
    filters = body.filters.to_filters() if body.filters else Filters()
    hits = await run_in_threadpool(retriever.retrieve, query, body.k, filters)
    return RetrieveResponse(
        model=served.name,
        mode=body.mode or served.assembled.profile.retrieval.mode,
        k=body.k,
        data=[ChunkOut(**hit_to_dict(h)) for h in hits],
    )
