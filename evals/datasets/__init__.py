"""Benchmark loaders by name: the one place where a dataset name on the command line becomes data.

Multiple choice (:func:`load_mcq`): ``mirage`` (all five sets), its sets ``mmlu``, ``medqa``,
``medmcqa``, ``pubmedqa``, ``bioasq``, and ``pubmedqa-pqal`` (the PubMedQA* questions with their
gold abstracts, for the oracle-context upper bound), and ``mcq:<file>`` for a user's own file.
Free text with reference answers (:func:`load_freetext`): ``bioasq-ideal``, ``pubmedqa-long``, the
abstention sets, and ``qa:<file>``. Retrieval (:func:`load_retrieval`): ``bioasq-snippets``,
``liveqa-medquad``, ``pubmedqa-pqal``, and ``beir:<folder>`` for any set in BEIR layout.

Built-in sets are read under ``paths.source_data`` (``MEDCITE_SOURCE_DATA``); a relative
``mcq:``/``qa:``/``beir:`` path is looked up from the working directory first, then there.
``mcq:``/``qa:`` files (JSONL, JSON, CSV, parquet, a Hugging Face ``save_to_disk`` folder) take an
optional column mapping and may have unusable rows: :func:`load_checked`, given the :class:`Kind`
:data:`MCQ` or :data:`FREE_TEXT`, returns those with their row numbers
(:mod:`evals.datasets.files.user_sets`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from core.errors import ConfigError
from core.paths import Paths
from evals.datasets.abstention import load_abstention
from evals.datasets.beir import load_beir
from evals.datasets.bioasq import load_bioasq_snippets
from evals.datasets.files.user_sets import (
    MCQ_PREFIX,
    QA_PREFIX,
    LoadedSet,
    SkippedRow,
    load_user_mcq,
    load_user_qa,
)
from evals.datasets.freetext import FreeTextItem, load_bioasq_ideal, load_pubmedqa_long
from evals.datasets.liveqa import load_liveqa
from evals.datasets.mirage import DATASETS as MIRAGE_DATASETS
from evals.datasets.mirage import load_mirage
from evals.datasets.near_miss import load_near_miss
from evals.datasets.pubmedqa import load_pqal, load_pqal_retrieval
from evals.datasets.qrels import coverage, restrict
from evals.datasets.sampling import DEFAULT_STRATA, sample
from evals.types import McqItem, RetrievalSet

BEIR_PREFIX = "beir:"
T = TypeVar("T")


def _mirage_set(name: str) -> Callable[[Paths], list[McqItem]]:
    return lambda paths: load_mirage(paths.source_data / "mirage", (name,))


MCQ_LOADERS: dict[str, Callable[[Paths], list[McqItem]]] = {
    "mirage": lambda paths: load_mirage(paths.source_data / "mirage"),
    **{name: _mirage_set(name) for name in MIRAGE_DATASETS},
    "pubmedqa-pqal": lambda paths: load_pqal(paths.source_data / "pubmedqa", "test"),
}

RETRIEVAL_LOADERS: dict[str, Callable[[Path], RetrievalSet]] = {
    "bioasq-snippets": lambda root: load_bioasq_snippets(root / "bioasq_from_mirage"),
    "liveqa-medquad": lambda root: load_liveqa(root / "medquad"),
    "pubmedqa-pqal": lambda root: load_pqal_retrieval(root / "pubmedqa"),
}


FREE_TEXT_LOADERS: dict[str, Callable[[Paths], list[FreeTextItem]]] = {
    "bioasq-ideal": lambda paths: load_bioasq_ideal(paths.source_data / "bioasq_from_mirage"),
    "bioasq-ideal-11b": lambda paths: load_bioasq_ideal(paths.source_data / "bioasq_from_mirage", "Task11B"),
    "pubmedqa-long": lambda paths: load_pubmedqa_long(paths.source_data / "pubmedqa"),
    "abstention-default": lambda paths: load_abstention(paths, "test"),  # needs the default index built
    "abstention-default-dev": lambda paths: load_abstention(paths, "dev"),
    "abstention-near-miss": lambda paths: load_near_miss(paths, "test"),
    "abstention-near-miss-dev": lambda paths: load_near_miss(paths, "dev"),
}


@dataclass(frozen=True)
class Kind(Generic[T]):
    """What the multiple-choice and the free-text sets differ in when loaded by name."""

    section: str  # where a run config lists such sets: [[mcq]], [[answers]]
    label: str
    prefix: str  # of a user's own file of this kind
    loaders: Mapping[str, Callable[[Paths], list[T]]]  # the built-in sets
    user_file: Callable[[str, Path, Mapping[str, str] | None], LoadedSet[T]]
    strata: tuple[str, ...]  # what a run's sample of such a set is stratified by


MCQ = Kind("mcq", "multiple-choice", MCQ_PREFIX, MCQ_LOADERS, load_user_mcq, DEFAULT_STRATA)
FREE_TEXT = Kind(
    "answers", "free-text", QA_PREFIX, FREE_TEXT_LOADERS, load_user_qa, ("dataset", "answerable")
)


def load_checked(
    kind: Kind[T], name: str, paths: Paths, columns: Mapping[str, str] | None = None
) -> LoadedSet[T]:
    """A set of ``kind`` by name with the rows of a user's file that were skipped (none for
    built-ins); an unknown name lists the known ones."""
    if name.startswith(kind.prefix):
        return kind.user_file(name, paths.source_data, columns)
    loader = kind.loaders.get(name)
    if loader is None:
        known = [*kind.loaders, f"{kind.prefix}<file>"]
        other = FREE_TEXT if kind is MCQ else MCQ
        hint = (
            f"; a {other.label} set goes under [[{other.section}]]" if name.startswith(other.prefix) else ""
        )
        raise ConfigError(f"unknown {kind.label} dataset {name!r}; known: {', '.join(known)}{hint}")
    if columns:
        raise ConfigError(
            f"a column mapping applies to {kind.prefix}<file> sets only, not to the built-in {name!r}"
        )
    return LoadedSet(tuple(loader(paths)))


def load_mcq(name: str, paths: Paths, columns: Mapping[str, str] | None = None) -> list[McqItem]:
    """The items of a multiple-choice set by name."""
    return list(load_checked(MCQ, name, paths, columns).items)


def load_freetext(name: str, paths: Paths, columns: Mapping[str, str] | None = None) -> list[FreeTextItem]:
    """Free-text questions with reference answers, for the answer-quality metrics."""
    return list(load_checked(FREE_TEXT, name, paths, columns).items)


def load_retrieval(name: str, paths: Paths) -> RetrievalSet:
    """A retrieval set by name, or ``beir:<folder>`` (a relative folder that is not found from the
    working directory is looked up under ``paths.source_data``)."""
    if name.startswith(BEIR_PREFIX):
        given = name[len(BEIR_PREFIX) :].strip()
        if not given:
            raise ConfigError("'beir:' needs a folder, e.g. beir:/data/nfcorpus")
        folder = Path(given)
        return load_beir(folder if folder.is_absolute() or folder.is_dir() else paths.source_data / folder)
    loader = RETRIEVAL_LOADERS.get(name)
    if loader is None:
        known = [*RETRIEVAL_LOADERS, f"{BEIR_PREFIX}<folder>"]
        raise ConfigError(f"unknown retrieval dataset {name!r}; known: {', '.join(known)}")
    return loader(paths.source_data)


__all__ = [
    "FREE_TEXT",
    "FREE_TEXT_LOADERS",
    "MCQ",
    "MCQ_LOADERS",
    "MCQ_PREFIX",
    "QA_PREFIX",
    "RETRIEVAL_LOADERS",
    "Kind",
    "LoadedSet",
    "SkippedRow",
    "coverage",
    "load_checked",
    "load_freetext",
    "load_mcq",
    "load_retrieval",
    "restrict",
    "sample",
]
