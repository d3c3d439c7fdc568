"""Request and response shapes: OpenAI's chat format plus medcite's citations and retrieval.

Chat requests accept (and ignore) OpenAI sampling fields medcite does not use, so stock
clients work unchanged; medcite's own endpoints reject unknown fields, so typos surface.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.types import Filters


class FiltersIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: list[str] = Field(default_factory=list, max_length=32)
    sections: list[str] = Field(default_factory=list, max_length=32)

    def to_filters(self) -> Filters:
        return Filters(sources=frozenset(self.sources), sections=frozenset(self.sections))


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content)


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(default=None, description="a served pipeline profile (GET /v1/models)")
    messages: list[ChatMessageIn] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1, description="medcite returns one answer per request")
    # medcite extensions
    filters: FiltersIn | None = None
    closed_book: bool = Field(default=False, description="answer from model memory only (labelled)")


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    k: int = Field(default=10, ge=1)
    mode: Literal["bm25", "dense", "hybrid"] | None = None
    filters: FiltersIn | None = None
    model: str | None = Field(default=None, description="the profile whose index to search")


class ChunkOut(BaseModel):
    """A retrieved passage with its provenance; ``doc.text[start:end] == text``."""

    chunk_id: str
    doc_id: str
    title: str
    section: list[str]
    source: str
    url: str
    license: str
    start: int
    end: int
    text: str
    score: float
    rank: int
    retriever: str


class RetrieveResponse(BaseModel):
    object: Literal["list"] = "list"
    model: str
    mode: str
    k: int
    data: list[ChunkOut]


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "medcite"
    description: str = ""


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    status: Literal["ready", "not ready"]
    profiles: dict[str, dict[str, Any]]
    queue: dict[str, int]


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail
