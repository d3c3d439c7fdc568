"""Liveness, readiness, and the served pipeline profiles as OpenAI models (list and one by id)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from api.deps import StateDep, require_client
from api.schemas import ErrorBody, Health, ModelList, ModelOut, Ready
from api.state import Served, ServerState, UnknownModelError

router = APIRouter()


@router.get("/health", response_model=Health, tags=["health"])
def health() -> Health:
    """The process is up and answering (says nothing about indexes or models)."""
    return Health()


@router.get("/ready", response_model=Ready, responses={503: {"model": Ready}}, tags=["health"])
def ready(state: StateDep) -> JSONResponse:
    """Indexes loaded and still complete on disk; a manifest summary per served profile.

    503 names a damaged or missing index folder (answers still come from the copy in memory, but
    a restart could not load it); a profile serving an older build than the one now on disk says
    so in its ``status``, with ``serving`` and ``on_disk`` naming the two builds.
    """
    ok, profiles = state.readiness()
    body = Ready(status="ready" if ok else "not ready", profiles=profiles, queue=state.gate.snapshot())
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


@router.get(
    "/v1/models",
    response_model=ModelList,
    dependencies=[Depends(require_client)],
    responses={code: {"model": ErrorBody} for code in (401, 429)},
    tags=["openai"],
)
def models(state: StateDep) -> ModelList:
    """The pipeline profiles this server answers with; pass one as ``model``."""
    return ModelList(data=[model_out(state, s) for s in state.served.values()])


@router.get(
    "/v1/models/{model_id:path}",  # ":path": an id with a slash is an unknown model, not a 404 route
    response_model=ModelOut,
    dependencies=[Depends(require_client)],
    responses={code: {"model": ErrorBody} for code in (401, 404, 429)},
    tags=["openai"],
)
def model(model_id: str, state: StateDep) -> ModelOut:
    """One served profile, as an item of ``GET /v1/models``; 404 ``model_not_found`` otherwise."""
    if not model_id:  # "/v1/models/": state.get("") would name the default profile
        raise UnknownModelError("no model id given; GET /v1/models lists the served ones")
    return model_out(state, state.get(model_id))


def model_out(state: ServerState, served: Served) -> ModelOut:
    """OpenAI's Model object for a served profile (``description`` is medcite's addition)."""
    description = served.assembled.profile.description
    return ModelOut(id=served.name, created=int(state.started), description=description)
