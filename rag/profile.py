"""Typed pipeline profiles, loaded from TOML files and passed explicitly.

A profile names everything ``medcite ask`` and the API need to assemble a pipeline: which
index, how to retrieve, rerank and filter evidence, which generator, and how to verify
citations. Packaged profiles live in ``rag/profiles/<name>.toml``; ``--profile`` also takes a
path to a user's own file. Unknown keys are errors, so a typo never silently uses a default.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ConfigError

PROFILES_DIR = Path(__file__).parent / "profiles"


class _Strict(BaseModel):
    # NaN or infinite numbers (TOML has nan and inf) would pass unconstrained fields such as the
    # fusion weights and silently corrupt every ranking
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class RetrievalConfig(_Strict):
    mode: Literal["bm25", "dense", "hybrid"] = Field(
        default="hybrid", description="Which retriever: BM25, dense (FAISS) or both fused."
    )
    fusion: Literal["rrf", "weighted"] = Field(
        default="rrf",
        description="How hybrid mode fuses the two rankings: reciprocal rank or weighted scores.",
    )
    rrf_k: float = Field(default=60.0, gt=0, description="The k of reciprocal rank fusion, 1 / (k + rank).")
    weights: tuple[float, float] = Field(
        default=(0.5, 0.5), description="Weighted fusion's weights for (BM25, dense)."
    )
    candidates: int = Field(
        default=30, ge=1, le=1000, description="Hits each retriever returns, before fusion and reranking."
    )
    sources: tuple[str, ...] = Field(
        default=(), description="Only passages from these sources, filtered before ranking; empty: all."
    )
    sections: tuple[str, ...] = Field(
        default=(), description="Only passages from these sections, filtered before ranking; empty: all."
    )


class ReformulationConfig(_Strict):
    # off by default: a rewrite costs a generation before retrieval
    kind: Literal["none", "rewrite", "hyde"] = Field(
        default="none",
        description="Rewrite the question, or retrieve with a generated answer (HyDE), before retrieval.",
    )
    max_tokens: int = Field(
        default=96, ge=8, le=512, description="Most tokens the rewrite or hypothetical answer may take."
    )


class RerankConfig(_Strict):
    backend: Literal["none", "llm", "cross-encoder", "trained"] = Field(
        default="llm",
        description="Which reranker scores the fused hits; trained: the relevance model shipped.",
    )
    model_path: Path | None = Field(
        default=None,
        description="The cross-encoder's folder, or the trained model's; unset: the shipped trained model.",
    )
    candidates: int = Field(default=12, ge=1, le=200, description="How many fused hits are reranked.")
    threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Score a passage needs on the reranker's [0, 1] scale to be evidence; unset: keep all.",
    )
    keep: int = Field(default=5, ge=1, le=50, description="Evidence passages given to the generator.")
    order: Literal["relevance", "retrieval"] = Field(
        default="relevance",
        description="Evidence in the reranker's order, or the retriever's with the reranker only gating.",
    )
    # the sentences are scored by the trained relevance model, so this needs backend = "trained"
    sentence_budget: int | None = Field(
        default=None,
        ge=16,
        le=4096,
        description="Wordpieces of the kept passages' best sentences to answer from; unset: whole passages.",
    )


class GeneratorConfig(_Strict):
    backend: Literal["llama-cpp", "openai"] = Field(
        default="llama-cpp", description="A local GGUF model, or an OpenAI-compatible server."
    )
    model_path: Path | None = Field(
        default=None, description="llama-cpp: a GGUF file; unset: the fetched Qwen2.5 1.5B."
    )
    base_url: str | None = Field(
        default=None, description="openai: the server's URL, e.g. http://127.0.0.1:8080/v1."
    )
    model: str = Field(default="default", description="openai: the model name sent to the server.")
    api_key_env: str | None = Field(
        default=None, description="openai: the environment variable holding the API key."
    )
    n_ctx: int = Field(default=4096, ge=512, description="llama-cpp: the context window in tokens.")
    threads: int | None = Field(
        default=None, ge=1, description="llama-cpp: CPU threads; unset: the CPUs idle at each answer."
    )
    max_tokens: int = Field(default=256, ge=1, le=4096, description="Most tokens an answer may take.")
    temperature: float = Field(
        default=0.0, ge=0.0, le=2.0, description="Sampling temperature; 0 is greedy and repeatable."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds one generation may take.")


class VerifyConfig(_Strict):
    backend: Literal["heuristic", "trained"] = Field(
        default="heuristic",
        description="Support score: embedding cosine + lexical coverage, or the trained support model.",
    )
    model_path: Path | None = Field(
        default=None, description="trained: a support model folder; unset: the one shipped with medcite."
    )
    threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Support a sentence needs; unset: the backend's own (0.5, or the trained model's).",
    )
    llm_judge: bool = Field(
        default=False, description="Blend the local model's yes/no on each (sentence, passage) into support."
    )
    answer_judge: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="P(yes) the local model must give that the passage answers so; unset: no judge.",
    )
    judge_above: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Support a pair needs before the answer judge is asked; 0: every pair passing the rules.",
    )
    # without embeddings there is no verifier: drop and abstain then abstain, flag labels
    # every sentence [UNVERIFIED]
    policy: Literal["drop", "flag", "abstain"] = Field(
        default="drop",
        description="An unsupported or off-topic sentence: left out, labelled [UNSUPPORTED], or abstain.",
    )
    about: Literal["judged", "every", "off"] = Field(
        default="every",
        description="A cited passage is about the question: by the aboutness model, every key term, or off.",
    )
    min_about: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The aboutness model's threshold for about = \"judged\"; unset: the model's own.",
    )
    min_answer: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="P(answers) from the relevance model a shown sentence needs; 0: off.",
    )
    uncited: Literal["quoted", "supported"] = Field(
        default="quoted",
        description="Unmarked sentence: cited to a passage it quotes, or also to the one supporting it best.",
    )


class QuoteConfig(_Strict):
    threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Quote the sources when the best sentence has this P(answers); unset: never quote.",
    )
    sentences: int = Field(default=3, ge=1, le=10, description="How many sentences a quoted answer shows.")
    # a line that answers is often in a passage under the evidence threshold
    pool_threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Quotes come from the pool_keep candidates from this P(relevant) up; unset: evidence.",
    )
    pool_keep: int = Field(
        default=8, ge=1, le=50, description="How many candidates the quote pool holds (with pool_threshold)."
    )
    closest_floor: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description='None confirmed: show the closest lines if the best has this P(answers), else "nothing".',
    )
    closest_pool_threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Closest lines from closest_pool_keep passages this P(relevant) up; unset: quote pool.",
    )
    closest_pool_keep: int = Field(
        default=8, ge=1, le=50, description="How many candidates the closest-lines pool holds."
    )

    def pool(self) -> tuple[float, int] | None:
        """(relevance floor, how many) of the passages quotes come from; None: the kept ones."""
        return None if self.pool_threshold is None else (self.pool_threshold, self.pool_keep)

    def closest_pool(self) -> tuple[float, int] | None:
        """(relevance floor, how many) of the passages closest lines come from; None: the quote pool."""
        if self.closest_pool_threshold is None:
            return None
        return (self.closest_pool_threshold, self.closest_pool_keep)


class Profile(_Strict):
    name: str = Field(default="default", description="The profile's name; unset: the file's name.")
    description: str = Field(default="", description="One line saying what the profile is for.")
    index: str = Field(
        default="default", description="The index to answer from (`medcite index build --name`)."
    )
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig, description="How to retrieve.")
    reformulation: ReformulationConfig = Field(
        default_factory=ReformulationConfig, description="Whether to rewrite the question first."
    )
    rerank: RerankConfig = Field(default_factory=RerankConfig, description="How to rerank and keep evidence.")
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig, description="Which model answers.")
    verify: VerifyConfig = Field(default_factory=VerifyConfig, description="How each sentence is checked.")
    quote: QuoteConfig = Field(default_factory=QuoteConfig, description="When to answer by quoting.")


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


def load_profile(name_or_path: str | Path = "default") -> Profile:
    """A packaged profile by name, or a TOML file by path; raises ConfigError saying what is wrong."""
    candidate = Path(name_or_path)
    path = candidate if candidate.suffix == ".toml" else PROFILES_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ConfigError(
            f"no profile {str(name_or_path)!r}; choose one of {available_profiles()} or pass a .toml path"
        )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read profile {path}: {exc}") from exc
    raw.setdefault("name", path.stem)
    try:
        return Profile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ConfigError(f"invalid profile {path}: {problems}") from exc
