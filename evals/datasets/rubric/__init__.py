"""Rubric sets by name (a run's ``[[rubric]]`` entries): conversations with graded criteria.

``rubric:<file.jsonl>``: a file in HealthBench's layout, read unchanged (:mod:`.healthbench`; a
relative path is looked up from the working directory, then under ``paths.source_data``).
``clinician-rubric:<part>``: the clinician benchmark's questions, their criteria declared by the
template ``clinician.toml`` (:mod:`.clinician`). Either is read and checked whole before a run
starts.
"""

from __future__ import annotations

from core.errors import ConfigError
from core.paths import Paths
from evals.datasets.files.user_sets import resolve_path
from evals.datasets.rubric.clinician import PARTS, load_clinician_rubric
from evals.datasets.rubric.healthbench import RubricFileError, load_rubric_file
from evals.types import RubricItem

RUBRIC_PREFIX = "rubric:"
CLINICIAN_PREFIX = "clinician-rubric:"
STRATA = ("dataset", "kind")  # what a run's sample of a rubric set is stratified by

__all__ = ["CLINICIAN_PREFIX", "RUBRIC_PREFIX", "STRATA", "RubricFileError", "load_rubric_set"]


def load_rubric_set(name: str, paths: Paths) -> list[RubricItem]:
    """The items of a rubric set by name; ConfigError names the known forms."""
    if name.startswith(RUBRIC_PREFIX):
        given = name.removeprefix(RUBRIC_PREFIX).strip()
        if not given:
            raise ConfigError("'rubric:' needs a file, e.g. rubric:healthbench_hard.jsonl")
        path = resolve_path(given, paths.source_data)
        if not path.is_file():
            raise ConfigError(f"{name}: {path} is a folder; give the JSONL file itself")
        return load_rubric_file(path, name)
    if name.startswith(CLINICIAN_PREFIX):
        return load_clinician_rubric(name.removeprefix(CLINICIAN_PREFIX), name)
    raise ConfigError(
        f"unknown rubric dataset {name!r}; known: {RUBRIC_PREFIX}<file.jsonl> (HealthBench layout), "
        + ", ".join(f"{CLINICIAN_PREFIX}{part}" for part in PARTS)
    )
