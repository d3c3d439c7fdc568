"""The config behind ``medcite eval run --dataset SPEC``: one command for a benchmark file, no TOML.

The run compares the profile as shipped with answering from memory: a closed-book arm and one RAG
cell with the profile's own index, retrieval mode, reranker, evidence passages and evidence
threshold (``threshold = "profile"``, the shape of evals/configs/rag_vs_closed_book_profile.toml).
The config is built in code, so the run directory stores it like any other and the same command
resumes the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.errors import ConfigError
from evals.datasets import FREE_TEXT_LOADERS, MCQ_PREFIX, QA_PREFIX
from evals.datasets.rubric import CLINICIAN_PREFIX, RUBRIC_PREFIX
from evals.engine.config import EvalConfig
from rag.profile import load_profile

GRID_RERANKERS = ("none", "llm", "trained")


def _is_freetext(spec: str) -> bool:
    return spec.startswith(QA_PREFIX) or spec in FREE_TEXT_LOADERS


def _is_rubric(spec: str) -> bool:
    return spec.startswith((RUBRIC_PREFIX, CLINICIAN_PREFIX))


def default_name(datasets: Sequence[str]) -> str:
    """The file stems (or built-in names) joined, in the characters a run name allows."""
    files = (MCQ_PREFIX, QA_PREFIX, RUBRIC_PREFIX)
    stems = [Path(d.split(":", 1)[1]).stem if d.startswith(files) else d for d in datasets]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(dict.fromkeys(stems))).strip("-.")
    return name or "my-benchmark"


def config_for_datasets(
    datasets: Sequence[str],
    *,
    n: int | None = None,
    profile: str = "default",
    name: str | None = None,
    columns: Mapping[str, str] | None = None,
    seed: int = 0,
) -> EvalConfig:
    """Closed-book vs the profile's RAG on the given sets; ``columns`` applies to the ``mcq:``/``qa:``
    files among them; ``n`` samples each set (free-text sets: 10 unless given; rubric sets, judged
    by the run's own model where a criterion has no matcher: all unless given)."""
    if not datasets:
        raise ConfigError("name at least one --dataset, e.g. --dataset mcq:exams/cardio.csv")
    base = load_profile(profile)
    if base.rerank.backend not in GRID_RERANKERS:
        raise ConfigError(
            f"profile {profile!r} reranks with {base.rerank.backend!r}, which an eval grid does not offer "
            f"({', '.join(GRID_RERANKERS)}); choose another --profile or write a config file"
        )

    def entry(spec: str) -> dict[str, Any]:
        own = spec.startswith((MCQ_PREFIX, QA_PREFIX))
        fields: dict[str, Any] = {"dataset": spec, "columns": dict(columns) if own and columns else None}
        return {**fields, "n": n} if n is not None else fields

    grid = {
        "index": [base.index],
        "mode": [base.retrieval.mode],
        "rerank": [base.rerank.backend],
        "k": [base.rerank.keep],
        "closed_book": True,
        "threshold": "profile",
    }
    raw = {
        "name": name or default_name(datasets),
        "profile": profile,
        "seed": seed,
        "grid": grid,
        "mcq": [entry(d) for d in datasets if not _is_freetext(d) and not _is_rubric(d)],
        "answers": [entry(d) for d in datasets if _is_freetext(d)],
        "rubric": [{"dataset": d, "n": n} for d in datasets if _is_rubric(d)],
        "rubric_judge": {} if any(map(_is_rubric, datasets)) else None,  # the run's own model judges
    }
    try:
        return EvalConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"cannot build a run from these flags: {problems}") from exc
