"""Request and response shapes: OpenAI's chat format plus medcite's citations and retrieval.

Chat requests take OpenAI's fields. Those medcite honours: ``messages``, ``model``,
``max_tokens``/``max_completion_tokens``, ``temperature``, ``stop``, ``stream``,
``stream_options``. Sampling and bookkeeping fields that stock clients send (``top_p``,
``presence_penalty``, ``frequency_penalty``, ``seed``, ``user``, ``metadata``, ``store`` and other
fields not named here) are accepted and ignored, so those clients work unchanged. Features medcite
does not offer are refused with a 400 that names the field (``UNSUPPORTED``): tools and function
calling, structured output (``response_format`` other than text), ``logprobs``, ``n`` > 1, audio.
A value that asks for none of them is accepted (``tools: []``, ``tool_choice: "none"``,
``logprobs: false``, ``n: 1``, ...), as docs/api.md says. medcite's own endpoints reject unknown
fields, so typos surface.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator
from pydantic_core import PydanticCustomError

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


MAX_STOPS = 4  # OpenAI's limit
# What a client asking for a feature medcite does not have is told instead.
UNSUPPORTED: dict[str, str] = {
    "tools": "medcite does not call tools or functions; it answers from its indexed sources with "
    "citations (the `citations` field). Leave out `tools`",
    "tool_choice": 'medcite does not call tools; leave out `tool_choice` (or send "none")',
    "functions": "medcite does not call functions; it answers from its indexed sources with citations. "
    "Leave out `functions`",
    "function_call": 'medcite does not call functions; leave out `function_call` (or send "none")',
    "parallel_tool_calls": "medcite does not call tools; leave out `parallel_tool_calls`",
    "response_format": "medcite answers in plain text with citations alongside (`citations`, `evidence`, "
    '`medcite`); send no `response_format` or {"type": "text"}',
    "logprobs": "medcite does not return token log-probabilities: an answer's text is verified "
    "sentence by sentence (`medcite.sentences` carries each sentence's support); leave `logprobs` false",
    "top_logprobs": "medcite does not return token log-probabilities; leave out `top_logprobs`",
    "n": "medcite returns one answer per request; leave out `n` (or send 1) and ask again for another answer",
    "audio": "medcite answers in text only; leave out `audio`",
    "modalities": 'medcite answers in text only; send no `modalities` or ["text"]',
}


def _refuse(field: str, code: str = "unsupported_parameter") -> PydanticCustomError:
    return PydanticCustomError(code, UNSUPPORTED[field].replace("{", "{{").replace("}", "}}"))


StopSequences = Annotated[
    list[str],
    WithJsonSchema({"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": MAX_STOPS}),
]


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(default=None, description="a served pipeline profile (GET /v1/models)")
    messages: list[ChatMessageIn] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: Annotated[str, Field(min_length=1)] | StopSequences | None = Field(
        default=None,
        description=f"up to {MAX_STOPS} sequences; generation ends before the first one, which is not "
        'returned (finish_reason "stop")',
    )
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, json_schema_extra={"maximum": 1}, description="one answer per request")
    # OpenAI features medcite does not have: declared so that a request using one is refused
    # (400, naming the field), not answered as if the feature had been applied
    tools: list[Any] | None = Field(default=None, description="not supported: " + UNSUPPORTED["tools"])
    tool_choice: Any = Field(default=None, description='not supported, except "none"')
    functions: list[Any] | None = Field(default=None, description="not supported (deprecated by OpenAI)")
    function_call: Any = Field(default=None, description='not supported, except "none"')
    parallel_tool_calls: bool | None = Field(default=None, description="not supported")
    response_format: dict[str, Any] | None = Field(default=None, description='only {"type": "text"}')
    logprobs: bool | None = Field(default=None, description="only false")
    top_logprobs: int | None = Field(default=None, description="not supported")
    audio: dict[str, Any] | None = Field(default=None, description="not supported")
    modalities: list[str] | None = Field(default=None, description='only ["text"]')
    # medcite extensions
    filters: FiltersIn | None = None
    closed_book: bool = Field(default=False, description="answer from model memory only (labelled)")

    @field_validator("stop")
    @classmethod
    def _stops_within_limit(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list):
            if len(value) > MAX_STOPS:
                raise PydanticCustomError(
                    "invalid_value",
                    "at most {limit} stop sequences are allowed, got {count}",
                    {"limit": MAX_STOPS, "count": len(value)},
                )
            if not all(value):
                raise PydanticCustomError("invalid_value", "a stop sequence must not be empty")
        return value

    @field_validator("tools", "functions", "parallel_tool_calls", "audio")
    @classmethod
    def _refuse_when_set(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None or value == []:  # an empty tool list asks for nothing
            return value
        raise _refuse(str(info.field_name))

    @field_validator("tool_choice", "function_call")
    @classmethod
    def _refuse_unless_none(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None or value == "none":
            return value
        raise _refuse(str(info.field_name))

    @field_validator("response_format")
    @classmethod
    def _text_only(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None or value.get("type") == "text":
            return value
        raise _refuse("response_format", "unsupported_value")

    @field_validator("logprobs", "top_logprobs", "n")
    @classmethod
    def _no_alternatives(cls, value: Any, info: ValidationInfo) -> Any:
        if value in (None, False, 0) or (info.field_name == "n" and value == 1):
            return value
        raise _refuse(str(info.field_name), "unsupported_value")

    @field_validator("modalities")
    @classmethod
    def _text_modality(cls, value: list[str] | None) -> list[str] | None:
        if value is None or value == ["text"]:
            return value
        raise _refuse("modalities", "unsupported_value")

    def stop_sequences(self) -> tuple[str, ...]:
        """The stop sequences asked for, as a tuple (empty when none)."""
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)


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
