"""Liveness, readiness and the model list (served pipeline profiles)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from api.deps import StateDep, require_client
from api.schemas import ErrorBody, Health, ModelList, ModelOut, Ready

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
    return ModelList(
        data=[
            ModelOut(id=name, created=int(state.started), description=s.assembled.profile.description)
            for name, s in state.served.items()
        ]
    )
