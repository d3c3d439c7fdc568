"""Typed pipeline profiles, loaded from TOML files and passed explicitly.

A profile names everything ``medcite ask`` and the API need to assemble a pipeline: which
index, how to retrieve, rerank and filter evidence, which generator, and how to verify
citations. Packaged profiles live in ``rag/profiles/<name>.toml``; ``--profile`` also takes a
path to a user's own file. Unknown keys are errors, so a typo never silently uses a default.
"""

from __future__ import annotations

import difflib
import functools
import os
import tomllib
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import ConfigError

PROFILES_DIR = Path(__file__).parent / "profiles"


UNSET = "unset"
Probability = Annotated[
    float, Field(ge=0.0, le=1.0)
]  # how a profile writes "no value" for a setting that may have none (TOML has no null)


class _Strict(BaseModel):
    # NaN or infinite numbers (TOML has nan and inf) would pass unconstrained fields such as the
    # fusion weights and silently corrupt every ranking
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _unset(cls, data: Any) -> Any:
        """``key = "unset"`` is None for a setting that may be unset (and an error elsewhere)."""
        if not isinstance(data, dict):
            return data
        nullable = {k for k, f in cls.model_fields.items() if _nullable(f.annotation)}
        return {k: None if k in nullable and v == UNSET else v for k, v in data.items()}


def _nullable(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


class RetrievalConfig(_Strict):
    mode: Literal["bm25", "dense", "hybrid"] = Field(
        description="Which retriever: BM25, dense (FAISS) or both fused."
    )
    fusion: Literal["rrf", "weighted"] = Field(
        description="How hybrid mode fuses the two rankings: reciprocal rank or weighted scores.",
    )
    rrf_k: float = Field(gt=0, description="The k of reciprocal rank fusion, 1 / (k + rank).")
    weights: tuple[float, float] = Field(description="Weighted fusion's weights for (BM25, dense).")
    candidates: int = Field(
        ge=1, le=1000, description="Hits each retriever returns, before fusion and reranking."
    )
    sources: tuple[str, ...] = Field(
        description="Only passages from these sources, filtered before ranking; empty: all."
    )
    sections: tuple[str, ...] = Field(
        description="Only passages from these sections, filtered before ranking; empty: all."
    )


class ReformulationConfig(_Strict):
    # off by default: a rewrite costs a generation before retrieval
    kind: Literal["none", "rewrite", "hyde"] = Field(
        description="Rewrite the question, or retrieve with a generated answer (HyDE), before retrieval.",
    )
    max_tokens: int = Field(
        ge=8, le=512, description="Most tokens the rewrite or hypothetical answer may take."
    )


class ConversationConfig(_Strict):
    reading: Literal["carry", "rewrite", "search"] = Field(
        description="How a follow-up is read with the earlier user turns: carried over (subject, asked-for "
        "and patient facts, rag/reading/conversation.py), rewritten as a standalone question by the "
        "generator, or the previous turn only added to the search text."
    )
    max_tokens: int = Field(
        ge=8, le=512, description='reading = "rewrite": most tokens the rewrite may take.'
    )


class RerankConfig(_Strict):
    backend: Literal["none", "llm", "cross-encoder", "trained"] = Field(
        description="Which reranker scores the fused hits; trained: the relevance model shipped.",
    )
    model_path: Path | None = Field(
        description="The cross-encoder's folder, or the trained model's; unset: the shipped trained model.",
    )
    candidates: int = Field(ge=1, le=200, description="How many fused hits are reranked.")
    threshold: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Score a passage needs on the reranker's [0, 1] scale to be evidence; unset: keep all.",
    )
    keep: int = Field(ge=1, le=50, description="Evidence passages given to the generator.")
    order: Literal["relevance", "retrieval"] = Field(
        description="Evidence in the reranker's order, or the retriever's with the reranker only gating.",
    )
    min_clinical: float | None = Field(
        ge=0.0,
        le=1.0,
        description="P(medical) a question needs for any passage to be kept (rag/reading/clinical.py).",
    )


class GeneratorConfig(_Strict):
    backend: Literal["llama-cpp", "openai"] = Field(
        description="A local GGUF model, or an OpenAI-compatible server."
    )
    model_path: Path | None = Field(description="llama-cpp: a GGUF file; unset: the fetched Qwen2.5 1.5B.")
    base_url: str | None = Field(description="openai: the server's URL, e.g. http://127.0.0.1:8080/v1.")
    model: str = Field(description="openai: the model name sent to the server.")
    api_key_env: str | None = Field(description="openai: the environment variable holding the API key.")
    n_ctx: int = Field(ge=512, description="llama-cpp: the context window in tokens.")
    threads: int | None = Field(
        ge=1, description="llama-cpp: CPU threads; unset: the CPUs idle at each answer."
    )
    max_tokens: int = Field(ge=1, le=4096, description="Most tokens an answer may take.")
    temperature: float = Field(
        ge=0.0, le=2.0, description="Sampling temperature; 0 is greedy and repeatable."
    )
    timeout_s: float = Field(gt=0, description="Seconds one generation may take.")
    answers: bool = Field(
        description="Answer by generating when no line is quoted; false: closest lines or nothing relevant.",
    )


# The checks of a passage and a sentence that ``[verify] off`` may turn off, and where each lives
CHECKS = {
    "subtypes": "a passage naming another 'type X' than the question is not about it (reading/aboutness)",
    "asked_for": "a dose, treatment, missed-dose or storage question needs a passage and answer giving it",
    "populations": "a question about children, pregnancy or breastfeeding needs a passage naming them",
    "drugs": "a question (a follow-up: itself) naming drugs needs a passage naming one (reading/aboutness)",
    "same_measure": "eGFR/GFR, HbA1c/A1C, ECG/EKG count as one concept (reading/terms)",
    "labels": "a generated sentence that only repeats a source's label, or asks a question, is no answer",
    "dose_scope": "a generated dose for a group must stand in a line or heading naming that group",
    "copy_check": "a near copy of a passage sentence must keep that sentence's words (gate/copy_check)",
}
Check = Literal[
    "subtypes", "asked_for", "populations", "drugs", "same_measure", "labels", "dose_scope", "copy_check"
]


class VerifyConfig(_Strict):
    backend: Literal["heuristic", "trained"] = Field(
        description="Support score: embedding cosine + lexical coverage, or the trained support model.",
    )
    model_path: Path | None = Field(
        description="trained: a support model folder; unset: the one shipped with medcite."
    )
    threshold: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Support a sentence needs; unset: the backend's own (0.5, or the trained model's).",
    )
    answer_judge: float | None = Field(
        ge=0.0,
        le=1.0,
        description="P(yes) the local model must give that the passage answers so; unset: no judge.",
    )
    judge_above: float = Field(
        ge=0.0,
        le=1.0,
        description="Support a pair needs before the answer judge is asked; 0: every pair passing the rules.",
    )
    # without embeddings there is no verifier: drop and abstain then abstain, flag labels
    # every sentence [UNVERIFIED]
    policy: Literal["drop", "flag", "abstain"] = Field(
        description="An unsupported or off-topic sentence: left out, labelled [UNSUPPORTED], or abstain.",
    )
    about: Literal["judged", "every", "off"] = Field(
        description="A cited passage is about the question: by the aboutness model, every key term, or off.",
    )
    min_about: float | None = Field(
        ge=0.0,
        le=1.0,
        description="The aboutness model's threshold for about = \"judged\"; unset: the model's own.",
    )
    uncited: Literal["quoted", "supported"] = Field(
        description="Unmarked sentence: cited to a passage it quotes, or also to the one supporting it best.",
    )
    off: tuple[Check, ...] = Field(
        description="Checks turned off, for ablations: " + "; ".join(f"{k}: {v}" for k, v in CHECKS.items()),
    )

    def checks(self, name: Check) -> bool:
        """Whether the check ``name`` (one of ``CHECKS``) is on."""
        return name not in self.off


class QuoteConfig(_Strict):
    judge: Literal["quote-model", "reader"] = Field(
        description="What gives each line its P(answers): the quote model (relevance features) or the reader",
    )
    reader_path: Path | None = Field(
        description="judge = reader: the folder `medcite train reader` wrote (none ships yet).",
    )
    threshold: Probability | Literal["model"] | None = Field(
        description='Quote when the best line has this P(answers); "model": the judge\'s; unset: never.',
    )
    sentences: int = Field(ge=1, le=10, description="How many lines a quoted answer shows, at most.")
    conflicts: bool = Field(
        description="A line the condition reader finds stated for another patient is never an answer.",
    )
    closest_floor: Probability | Literal["model"] = Field(
        description='No answer: closest lines if the best reaches this P, else nothing; "model": judge\'s.',
    )
    closest_pool_threshold: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Closest lines from closest_pool_keep passages from this P(relevant) up; unset: kept",
    )
    closest_pool_keep: int = Field(
        ge=1, le=50, description="How many candidates the closest-lines pool holds."
    )
    one_guideline: bool = Field(
        description="A quoted answer's lines after the best come from the best line's guideline (its title).",
    )
    closest_about: Literal["every", "judged", "off"] = Field(
        description='Closest lines come from passages about the question: "every" key term, "judged" by the'
        ' aboutness model, "off".',
    )
    closest_min_about: Probability | None = Field(
        description='closest_about = "judged": the P(about) a passage needs; unset: the model\'s own.',
    )
    closest_min_coverage: Probability = Field(
        description='closest_about = "judged": the idf-weighted share of the question\'s concepts a passage'
        " names, at least.",
    )

    def closest_pool(self) -> tuple[float, int] | None:
        """(relevance floor, how many) of the passages closest lines come from; None: the quote pool."""
        if self.closest_pool_threshold is None:
            return None
        return (self.closest_pool_threshold, self.closest_pool_keep)


class Profile(_Strict):
    name: str = Field(description="The profile's name; unset: the file's name.")
    description: str = Field(description="One line saying what the profile is for.")
    index: str = Field(description="The index to answer from (`medcite index build --name`).")
    retrieval: RetrievalConfig = Field(description="How to retrieve.")
    reformulation: ReformulationConfig = Field(description="Whether to rewrite the question first.")
    conversation: ConversationConfig = Field(description="How a follow-up is read with the turns before it.")
    rerank: RerankConfig = Field(description="How to rerank and keep evidence.")
    generator: GeneratorConfig = Field(description="Which model answers.")
    verify: VerifyConfig = Field(description="How each sentence is checked.")
    quote: QuoteConfig = Field(description="When to answer by quoting.")


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


DEFAULT_FILE = PROFILES_DIR / "default.toml"


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read profile {path}: {exc}") from exc


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` laid over it, section by section (a profile's inheritance)."""
    out = dict(base)
    for key, value in changes.items():
        inner = out.get(key)
        out[key] = merged(inner, value) if isinstance(inner, dict) and isinstance(value, dict) else value
    return out


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys a profile may have where ``loc`` ends (``("rerank", "treshold")``: rerank's)."""
    model: type[BaseModel] = Profile
    for part in loc[:-1]:
        inner = model.model_fields[part].annotation if part in model.model_fields else None
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return []
        model = inner
    return list(model.model_fields)


def _problem(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] != "extra_forbidden":
        return f"{where}: {err['msg']}"
    keys = _keys_at(tuple(err["loc"]))
    close = difflib.get_close_matches(str(err["loc"][-1]), keys, n=1)
    if close:
        return f"{where}: unknown key; did you mean {'.'.join([*map(str, err['loc'][:-1]), close[0]])!r}?"
    return f"{where}: unknown key; the keys here are {', '.join(keys)}"


def _validated(raw: dict[str, Any], where: Path | str) -> Profile:
    try:
        return Profile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(_problem(err) for err in exc.errors())
        raise ConfigError(f"invalid profile {where}: {problems}") from exc


@functools.cache
def _default_raw() -> dict[str, Any]:
    return _read(DEFAULT_FILE)


def default_profile() -> Profile:
    """``rag/profiles/default.toml``: the one home of every setting's default."""
    return _validated({"name": DEFAULT_FILE.stem, **_default_raw()}, DEFAULT_FILE)


def with_changes(profile: Profile, changes: dict[str, Any]) -> Profile:
    """``profile`` with some settings changed (``{"rerank": {"threshold": None}}``), validated."""
    return _validated(merged(profile.model_dump(), changes), f"{profile.name} (changed)")


def _not_found(path: Path) -> str:
    packaged = path.stem if path.stem in available_profiles() else None
    hint = (
        f"the packaged profile is named without a path: --profile {packaged}"
        if packaged
        else f"check the path (a relative one starts at {Path.cwd()}) or name a packaged profile: "
        f"{available_profiles()}"
    )
    return f"profile file not found: {path.absolute()}; {hint}"


def load_profile(name_or_path: str | Path = "default") -> Profile:
    """A packaged profile by name, or a TOML file by path, laid over ``default.toml``: a profile
    states only what it changes. Raises ConfigError saying what is wrong."""
    candidate, text = Path(name_or_path), str(name_or_path)
    if text.endswith(".toml") or "/" in text or os.sep in text:  # a path, not a packaged name
        if not candidate.is_file():
            raise ConfigError(_not_found(candidate))
        path = candidate
    else:
        path = PROFILES_DIR / f"{text}.toml"
        if not path.is_file():
            close = difflib.get_close_matches(text, available_profiles(), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(
                f"no profile {text!r}; {hint}choose one of {available_profiles()} or pass a .toml path"
            )
    raw = _read(path)
    raw.setdefault("name", path.stem)
    return _validated(merged(_default_raw(), raw), path)
