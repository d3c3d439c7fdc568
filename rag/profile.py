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
    mode: Literal["bm25", "dense", "hybrid"] = "hybrid"
    fusion: Literal["rrf", "weighted"] = "rrf"
    rrf_k: float = Field(default=60.0, gt=0)
    weights: tuple[float, float] = (0.5, 0.5)
    candidates: int = Field(default=30, ge=1, le=1000)  # per retriever, before fusion and reranking
    sources: tuple[str, ...] = ()  # metadata filters applied before ranking
    sections: tuple[str, ...] = ()


class ReformulationConfig(_Strict):
    kind: Literal["none", "rewrite", "hyde"] = "none"  # off by default; costs a generation
    max_tokens: int = Field(default=96, ge=8, le=512)


class RerankConfig(_Strict):
    backend: Literal["none", "llm", "cross-encoder", "trained"] = "llm"
    model_path: Path | None = None  # cross-encoder folder; trained: default is the shipped model
    candidates: int = Field(default=12, ge=1, le=200)  # how many fused hits are reranked
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)  # reranker's [0, 1] scale; None: keep all
    keep: int = Field(default=5, ge=1, le=50)  # evidence passages given to the generator
    # "relevance": evidence in the reranker's order; "retrieval": the reranker's scores only gate
    # the evidence (threshold) and the passages keep the retriever's order
    order: Literal["relevance", "retrieval"] = "relevance"
    # None: whole passages go to the generator. An int: the generator gets only the best sentences
    # of the kept passages, up to that many wordpieces (rag/rerank/sentences.py); the sentences are
    # scored by the trained relevance model, so this needs backend = "trained".
    sentence_budget: int | None = Field(default=None, ge=16, le=4096)


class GeneratorConfig(_Strict):
    backend: Literal["llama-cpp", "openai"] = "llama-cpp"
    model_path: Path | None = None  # llama-cpp: a GGUF file; default: the fetched Qwen2.5 1.5B
    base_url: str | None = None  # openai: e.g. http://127.0.0.1:8080/v1
    model: str = "default"
    api_key_env: str | None = None  # name of the environment variable holding the key
    n_ctx: int = Field(default=4096, ge=512)
    threads: int | None = Field(default=None, ge=1)
    max_tokens: int = Field(default=256, ge=1, le=4096)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    timeout_s: float = Field(default=120.0, gt=0)


class VerifyConfig(_Strict):
    # "heuristic": embedding cosine + lexical coverage + number check (rag/check/verify.py);
    # "trained": the support model medcite trains (rag/check/support_model.py) + number check.
    backend: Literal["heuristic", "trained"] = "heuristic"
    model_path: Path | None = None  # trained: a model folder; default: the one shipped with medcite
    # None: the backend's own (heuristic 0.5; trained: the threshold in the model's manifest)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    llm_judge: bool = False
    # The local model judges, with the question, whether the cited passage gives each sentence
    # as its answer (rag/check/answer_judge.py); a sentence that passes the rule checks is shown
    # when P(yes) reaches this threshold (and its support reaches judge_above). None: off.
    answer_judge: float | None = Field(default=None, ge=0.0, le=1.0)
    # The support a pair needs before the answer judge is asked (0: every pair that passes the
    # rule checks); with the trained backend, the support model's P(supported).
    judge_above: float = Field(default=0.0, ge=0.0, le=1.0)
    # What a generated sentence below the threshold, or citing a passage not about the question,
    # becomes (rag/check/gate.py): "drop" leaves it out (the answer abstains when none is
    # left), "flag" shows it behind an [UNSUPPORTED] label, "abstain" withholds the whole answer.
    # An index without embeddings has no verifier: nothing is verified, so drop and abstain
    # abstain and flag labels every sentence [UNVERIFIED].
    policy: Literal["drop", "flag", "abstain"] = "drop"
    # When a cited passage is about the question (rag/check/aboutness.py): "judged" (the
    # aboutness model's probability, from the question's concepts the passage covers and the
    # relevance model's probability, reaches min_about; unset: the model's own threshold),
    # "every" (every key term, the rule before issue 31) or "off".
    about: Literal["judged", "every", "off"] = "every"
    min_about: float | None = Field(default=None, ge=0.0, le=1.0)
    # The relevance model's probability a presented sentence needs that it answers the question
    # (rag/check/gate.py, check "answers"; 0 turns it off).
    min_answer: float = Field(default=0.0, ge=0.0, le=1.0)
    # A sentence the model left without a marker (rag/check/gate.py): cited only to a passage
    # about the question it quotes word for word ("quoted"), or also to the one about the
    # question that supports it best at the threshold ("supported").
    uncited: Literal["quoted", "supported"] = "quoted"


class QuoteConfig(_Strict):
    # None: never answer by quoting; a probability: quote the sources when the quote model
    # (rag/check/quotes.py) gives the best sentence at least this
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    sentences: int = Field(default=3, ge=1, le=10)  # how many sentences a quoted answer shows
    # Which passages a quote may come from: None, the kept evidence ([rerank] threshold and
    # keep); a probability, the pool_keep most relevant candidates from it up (a line that
    # answers is often in a passage under the evidence threshold)
    pool_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    pool_keep: int = Field(default=8, ge=1, le=50)
    # When no line is confirmed: the closest lines are shown when the best reaches this P(answers),
    # else "nothing relevant" (rag/outcomes.py); 0 shows them whenever a passage was kept
    closest_floor: float = Field(default=0.0, ge=0.0, le=1.0)
    # Which passages the closest lines come from: None, the quote pool; a probability, the
    # closest_pool_keep most relevant candidates from it up (only once no line is confirmed)
    closest_pool_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    closest_pool_keep: int = Field(default=8, ge=1, le=50)

    def pool(self) -> tuple[float, int] | None:
        """(relevance floor, how many) of the passages quotes come from; None: the kept ones."""
        return None if self.pool_threshold is None else (self.pool_threshold, self.pool_keep)

    def closest_pool(self) -> tuple[float, int] | None:
        """(relevance floor, how many) of the passages closest lines come from; None: the quote pool."""
        if self.closest_pool_threshold is None:
            return None
        return (self.closest_pool_threshold, self.closest_pool_keep)


class Profile(_Strict):
    name: str = "default"
    description: str = ""
    index: str = "default"
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    reformulation: ReformulationConfig = Field(default_factory=ReformulationConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    quote: QuoteConfig = Field(default_factory=QuoteConfig)


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
