"""Server settings from ``MEDCITE_*`` environment variables, validated before anything loads.

Unsafe combinations are refused at start-up rather than discovered in production: outside
``MEDCITE_ENV=development`` the server will not start without API keys, and keys shorter than
16 characters are rejected. CORS is closed unless origins are listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from core.errors import ConfigError
from core.paths import DEFAULT_DATA_DIR, DEFAULT_MODEL_DIR, Paths
from rag.retrieve.query import MAX_QUERY_CHARS

MIN_KEY_CHARS = 16


def _split_commas(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class ApiSettings(BaseSettings):
    """Everything ``medcite serve`` reads from the environment (prefix ``MEDCITE_``)."""

    model_config = SettingsConfigDict(env_prefix="MEDCITE_", extra="ignore", frozen=True)

    env: Literal["development", "production"] = Field(
        default="production",
        description="development runs without API keys (a trusted machine); production refuses to.",
    )
    host: str = Field(default="127.0.0.1", description="The address the server listens on.")
    port: int = Field(default=8000, ge=1, le=65535, description="The port the server listens on.")

    profiles: Annotated[list[str], NoDecode] = Field(
        default=["default"], description="Pipeline profiles served, comma-separated: the OpenAI model names."
    )
    index: str | None = Field(default=None, description="Overrides every served profile's index name.")
    data_dir: Path = Field(default=Path(DEFAULT_DATA_DIR), description="Where indexes and caches live.")
    model_dir: Path = Field(default=Path(DEFAULT_MODEL_DIR), description="Where the fetched models live.")
    generator_backend: Literal["llama-cpp", "openai"] | None = Field(
        default=None, description="Overrides the profiles' generator backend."
    )
    generator_url: str | None = Field(
        default=None, description="The openai backend's server, e.g. http://llm:8080/v1."
    )
    generator_model: str | None = Field(
        default=None, description="Overrides the model name sent to the openai server."
    )
    generator_timeout_s: float | None = Field(
        default=None, gt=0, le=3600, description="Overrides the profiles' seconds per generation."
    )

    api_keys: Annotated[list[str], NoDecode] = Field(
        default=[], description="Accepted bearer keys, comma-separated, each at least 16 characters."
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default=[], description="Browser origins allowed by CORS, comma-separated; empty: none."
    )

    max_body_bytes: int = Field(default=64 * 1024, ge=1024, description="Largest request body accepted.")
    max_question_chars: int = Field(
        default=MAX_QUERY_CHARS, ge=16, le=MAX_QUERY_CHARS, description="Longest question accepted."
    )
    max_messages: int = Field(default=32, ge=1, description="Most messages a chat request may carry.")
    max_k: int = Field(default=50, ge=1, le=1000, description="Most passages a retrieve request may ask for.")
    max_tokens: int = Field(default=1024, ge=1, description="Largest max_tokens a chat request may ask for.")

    # the local model runs one request at a time, so the rest wait in a bounded queue
    generation_concurrency: int = Field(default=1, ge=1, description="Generations run at the same time.")
    queue_limit: int = Field(
        default=4, ge=0, description="Requests allowed to wait for a generation; one more gets 429."
    )
    queue_timeout_s: float = Field(
        default=300.0, gt=0, le=3600, description="Seconds a request may wait; longer: 503 with Retry-After."
    )
    retry_after_s: int = Field(
        default=30, ge=1, description="Retry-After seconds when the queue is full or the wait ran out."
    )
    rate_limit_per_minute: int = Field(
        default=600, ge=0, description="Requests per minute per API key (or address without keys); 0: off."
    )
    rate_limit_burst: int = Field(
        default=60, ge=1, description="Requests a client may send at once before the per-minute rate applies."
    )

    # off by default: questions may carry patient data
    log_questions: bool = Field(default=False, description="Write each question to the server's log.")

    @field_validator("profiles", "api_keys", "cors_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _split_commas(value)

    @model_validator(mode="after")
    def _safe(self) -> ApiSettings:
        if not self.profiles:
            raise ValueError("MEDCITE_PROFILES names no profile; e.g. MEDCITE_PROFILES=default")
        if self.env != "development" and not self.api_keys:
            raise ValueError(
                "MEDCITE_API_KEYS is empty: set one or more comma-separated keys, or "
                "MEDCITE_ENV=development to run without authentication on a trusted machine"
            )
        short = [k for k in self.api_keys if len(k) < MIN_KEY_CHARS]
        if short:
            raise ValueError(
                f"API keys must be at least {MIN_KEY_CHARS} characters; {len(short)} are shorter"
            )
        if self.generator_backend == "openai" and not self.generator_url:
            raise ValueError("MEDCITE_GENERATOR_BACKEND=openai needs MEDCITE_GENERATOR_URL")
        return self

    @property
    def auth_required(self) -> bool:
        return bool(self.api_keys)

    def paths(self) -> Paths:
        base = Paths.from_env()
        return Paths(
            data_dir=self.data_dir.expanduser(),
            source_data=base.source_data,
            model_dir=self.model_dir.expanduser(),
        )


def load_settings(**overrides: object) -> ApiSettings:
    """Settings from the environment plus explicit overrides; ConfigError names each problem."""
    try:
        return ApiSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = "_".join(str(p) for p in err["loc"]).upper()
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"MEDCITE_{where}: {message}" if where else message)
        raise ConfigError(f"invalid server settings: {'; '.join(problems)}") from exc
