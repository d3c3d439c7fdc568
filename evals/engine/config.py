"""An evaluation run's configuration: datasets, sample, pipeline profile and ablation grid.

Read from TOML or YAML and validated strictly (an unknown key, dataset, retriever or reranker
is an error naming the choices), then stored resolved in the run directory so a run can be
repeated exactly. Every combination of the grid's lists is one condition; ``closed_book``
adds the no-retrieval arm that RAG conditions are compared against.

    name = "rag-vs-closed-book"
    profile = "fast"
    seed = 0
    [[mcq]]
    dataset = "medqa"
    n = 100
    [grid]
    index = ["default"]
    mode = ["hybrid"]
    rerank = ["none"]
    k = [3]
    closed_book = true
"""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ConfigError, require
from rag.profile import GeneratorConfig, Profile, load_profile


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class McqSet(_Strict):
    dataset: str  # mmlu | medqa | medmcqa | pubmedqa | bioasq | pubmedqa-pqal | mcq:<file>
    n: int | None = Field(default=None, ge=1)  # None: every item
    # mcq:<file> only: standard name -> the file's column, e.g. {question = "stem", answer = "key"};
    # also split (a Hugging Face DatasetDict split) and answer_base (0 or 1).
    # See evals/datasets/files/user_sets.py
    columns: dict[str, str] | None = None


class RetrievalSetConfig(_Strict):
    dataset: str  # bioasq-snippets | liveqa-medquad | pubmedqa-pqal | beir:<folder>
    n: int | None = Field(default=None, ge=1)
    index: tuple[str, ...] | None = None  # the indexes whose documents the qrels name; default: the grid's


class AnswerSetConfig(_Strict):
    dataset: str  # bioasq-ideal | pubmedqa-long | abstention-* | qa:<file>
    n: int = Field(default=10, ge=1)  # each item costs a generation plus several judge calls
    index: tuple[str, ...] | None = None  # default: the grid's
    columns: dict[str, str] | None = None  # qa:<file> only: standard name -> the file's column (and split)


class RubricSetConfig(_Strict):
    """``[[rubric]]``: replies graded criterion by criterion (:mod:`evals.engine.rubric`)."""

    dataset: str  # rubric:<file.jsonl> (HealthBench layout) | clinician-rubric:<test2|test3|test|dev>
    n: int | None = Field(default=None, ge=1)  # None: every item; else a sample stratified by kind
    index: tuple[str, ...] | None = None  # default: the grid's


class RubricJudge(_Strict):
    """``[rubric_judge]``: the model that grades criteria without a matcher (and, for agreement,
    the matched kinds listed in ``matched``); recorded in the run's manifest."""

    profile: str | None = None  # whose [generator] judges; unset: the run's profile (its loaded model)
    generator: dict[str, Any] = Field(default_factory=dict)  # changes to that [generator] table
    matched: tuple[str, ...] = ()  # criterion kinds with a matcher the judge grades too; "*": all
    attempts: int = Field(default=3, ge=1, le=10)  # judge replies per criterion until one parses
    max_tokens: int = Field(default=160, ge=16, le=2048)

    def settings(self, run_profile: str) -> GeneratorConfig:
        """The judge's [generator]: its profile's (default: the run's) with ``generator`` changes."""
        base = load_profile(self.profile or run_profile).generator
        try:
            return GeneratorConfig.model_validate({**base.model_dump(), **self.generator})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"generator: {problems}") from exc


class RobustnessSet(_Strict):
    """``[[robustness]]``: a perturbation applied to multiple-choice sets, each perturbed item run
    under every condition and paired with its original (see :mod:`evals.robustness`)."""

    perturbation: Literal["shuffle-options", "drug-names", "disease-synonyms", "patient-details"]
    datasets: tuple[str, ...] | None = None  # default: every [[mcq]] set


class Grid(_Strict):
    index: tuple[str, ...] = Field(default=("default",), min_length=1)
    mode: tuple[Literal["bm25", "dense", "hybrid"], ...] = Field(default=("hybrid",), min_length=1)
    rerank: tuple[Literal["none", "llm", "trained"], ...] = Field(default=("none",), min_length=1)
    k: tuple[Annotated[int, Field(ge=1, le=50)], ...] = Field(default=(3,), min_length=1)
    closed_book: bool = True
    # "none": every RAG condition gets exactly k passages (only retrieval quality differs);
    # "profile": the base profile's evidence threshold applies, as in the product, so a question
    # may get fewer passages or none (then it is answered without sources, and the report counts it)
    threshold: Literal["none", "profile"] = "none"
    # The support verifier of free-text answers: "profile" keeps the base profile's; "heuristic" or
    # "trained" swaps the backend, with that backend's own threshold. Generations are cached, so a
    # second backend re-verifies the same answers at little cost: a paired verifier ablation.
    verify: tuple[Literal["profile", "heuristic", "trained"], ...] = Field(default=("profile",), min_length=1)


class RetrievalGrid(_Strict):
    index: tuple[str, ...] = Field(default=("default",), min_length=1)
    mode: tuple[Literal["bm25", "dense", "hybrid"], ...] = Field(
        default=(
            "bm25",
            "dense",
            "hybrid",
        ),
        min_length=1,
    )
    rerank: tuple[Literal["none", "llm", "trained"], ...] = Field(default=("none",), min_length=1)
    depth: int = Field(default=20, ge=1, le=1000)  # ranked documents kept per query
    rerank_candidates: int = Field(default=10, ge=1, le=100)  # the LLM judges only these
    rerank_n: int | None = Field(default=None, ge=1)  # rerank cells use only the first n queries
    rerank_modes: tuple[Literal["bm25", "dense", "hybrid"], ...] = ("hybrid",)  # LLM-rerank only these


class EvalConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    profile: str = "fast"  # the base pipeline profile; the grid overrides its retrieval and reranking
    seed: int = 0
    mcq: list[McqSet] = Field(default_factory=list)
    grid: Grid = Field(default_factory=Grid)
    retrieval: list[RetrievalSetConfig] = Field(default_factory=list)
    retrieval_grid: RetrievalGrid = Field(default_factory=RetrievalGrid)
    max_tokens: int = Field(default=1, ge=1)  # multiple choice reads one token's probabilities
    answers: list[AnswerSetConfig] = Field(default_factory=list)  # free text, judged (RAGAS metrics)
    robustness: list[RobustnessSet] = Field(default_factory=list)  # perturbed copies of the [[mcq]] sets
    rubric: list[RubricSetConfig] = Field(default_factory=list)  # free text graded on criteria
    rubric_judge: RubricJudge | None = None  # unset: only criteria with a matcher can be graded
    rubric_profiles: tuple[str, ...] = ()  # more rubric arms: each profile as shipped (profile vs profile)
    answer_metrics: tuple[str, ...] = (
        "faithfulness",
        "answer_relevancy",
        "context_precision",
        "context_recall",
        "citation_precision",
        "citation_recall",
    )

    def conditions(self) -> list[dict[str, Any]]:
        """The multiple-choice conditions: the closed-book arm first, then each grid cell."""
        g = self.grid
        cells: list[dict[str, Any]] = [{"name": "closed-book", "closed_book": True}] if g.closed_book else []
        for index, mode, rerank, k, verify in itertools.product(g.index, g.mode, g.rerank, g.k, g.verify):
            cell = {
                "index": index,
                "mode": mode,
                "rerank": rerank,
                "k": k,
                "threshold": g.threshold,
                "verify": verify,
            }
            suffix = "/threshold=profile" if g.threshold == "profile" else ""
            suffix += "" if verify == "profile" else f"/verify={verify}"
            cells.append({"name": f"rag/{index}/{mode}/{rerank}/k={k}{suffix}", "closed_book": False, **cell})
        return cells

    def answer_conditions(self, dataset: str) -> list[dict[str, Any]]:
        """The RAG cells of the grid on the indexes a free-text dataset is answered from."""
        entry = next(e for e in self.answers if e.dataset == dataset)
        indexes = entry.index or self.grid.index
        return [c for c in self.conditions() if not c["closed_book"] and c["index"] in indexes]

    def rubric_conditions(self, dataset: str) -> list[dict[str, Any]]:
        """A rubric set's arms: closed-book (if the grid has it), the grid's RAG cells on the set's
        indexes, then each of ``rubric_profiles`` as shipped."""
        entry = next(e for e in self.rubric if e.dataset == dataset)
        indexes = entry.index or self.grid.index
        cells = [c for c in self.conditions() if c["closed_book"] or c["index"] in indexes]
        cells += [
            {"name": f"rag/profile={p}", "closed_book": False, "profile": p} for p in self.rubric_profiles
        ]
        return cells

    def retrieval_indexes(self, dataset: str) -> tuple[str, ...]:
        """The indexes a retrieval dataset is evaluated on (its qrels name their documents)."""
        entry = next(e for e in self.retrieval if e.dataset == dataset)
        return entry.index or self.retrieval_grid.index

    def retrieval_conditions(self) -> list[dict[str, Any]]:
        g = self.retrieval_grid
        indexes = list(dict.fromkeys(i for e in self.retrieval for i in self.retrieval_indexes(e.dataset)))
        return [
            {"name": f"{index}/{mode}/{rerank}", "index": index, "mode": mode, "rerank": rerank}
            for index, mode, rerank in itertools.product(indexes, g.mode, g.rerank)
            if rerank == "none" or mode in g.rerank_modes
        ]


def load_config(path: Path) -> EvalConfig:
    """Parse a TOML or YAML config; ConfigError names the file and every problem."""
    if not path.is_file():
        raise ConfigError(f"no eval config at {path}; see evals/configs/ for examples")
    # UnicodeDecodeError (a file not in UTF-8) is a ValueError; YAML has its own error class
    parse_errors: tuple[type[Exception], ...] = (OSError, tomllib.TOMLDecodeError, ValueError)
    if path.suffix in {".yaml", ".yml"}:
        yaml: Any = require("yaml", package="pyyaml", extra="eval")
        parse_errors += (yaml.YAMLError,)
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix in {".yaml", ".yml"}:
            raw = yaml.safe_load(text) or {}
        elif path.suffix == ".toml":
            raw = tomllib.loads(text)
        else:
            raise ConfigError(f"{path}: an eval config is a .toml or .yaml file")
    except parse_errors as exc:
        raise ConfigError(f"cannot parse {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the config must be a table of settings")
    raw.setdefault("name", path.stem)
    try:
        config = EvalConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid eval config {path}: {problems}") from exc
    from evals.engine.judge.answer_quality import KNOWN_METRICS

    unknown = sorted(set(config.answer_metrics) - set(KNOWN_METRICS))
    if unknown:
        raise ConfigError(f"{path}: unknown answer metric(s) {unknown}; known: {', '.join(KNOWN_METRICS)}")
    mcq_sets = [e.dataset for e in config.mcq]
    for entry in config.robustness:
        stray = sorted(set(entry.datasets or ()) - set(mcq_sets))
        if stray or not mcq_sets:
            raise ConfigError(
                f"{path}: [[robustness]] {entry.perturbation} names {stray or 'no'} dataset(s) "
                f"that are not [[mcq]] sets of this config ({', '.join(mcq_sets) or 'none'})"
            )
    if not config.mcq and not config.retrieval and not config.answers and not config.rubric:
        raise ConfigError(
            f"{path}: names no dataset; add [[mcq]], [[retrieval]], [[answers]] or [[rubric]] entries"
        )
    if config.rubric_judge is not None:
        try:  # an unknown [generator] key or a bad value fails here, named
            config.rubric_judge.settings(config.profile)
        except ConfigError as exc:
            raise ConfigError(f"{path}: [rubric_judge]: {exc}") from exc
    return config


def condition_profile(base: Profile, cell: dict[str, Any]) -> Profile:
    """The base profile with a grid cell's index, retrieval mode, reranker, k and verifier applied.

    By default evaluation gives the model exactly k passages: no evidence threshold, so every
    condition sees the same amount of context and only retrieval quality differs. A grid with
    ``threshold = "profile"`` keeps the base profile's threshold: the product as shipped.
    """
    threshold = base.rerank.threshold if cell.get("threshold") == "profile" else None
    rerank = base.rerank.model_copy(
        update={
            "backend": cell["rerank"],
            "keep": cell["k"],
            "threshold": threshold,
            "candidates": max(cell["k"], base.rerank.candidates),
        }
    )
    retrieval = base.retrieval.model_copy(update={"mode": cell["mode"]})
    verify = base.verify
    if cell.get("verify", "profile") != "profile":  # that backend with its own threshold
        verify = verify.model_copy(update={"backend": cell["verify"], "threshold": None, "model_path": None})
    return base.model_copy(
        update={"index": cell["index"], "retrieval": retrieval, "rerank": rerank, "verify": verify}
    )
