"""Robustness suite: each multiple-choice item paired with a harmless rewording of itself.

A perturbation takes an item and returns a changed copy, or None when it does not apply (no drug
name to swap, no vignette to add details to). The copy keeps the item's ``qid`` and is recorded
under the dataset ``<set>~<perturbation>`` (``medqa~drug-names``), so reports pair it with its
original by qid; ``meta["option_map"]`` maps the copy's letters back to the original's, so an
answer that moved with its option (shuffled options) is not counted as a change.

    shuffle-options    the options in another order (position bias)
    drug-names         brand <-> generic drug names, RABBITS-style (:mod:`evals.robustness.drugs`)
    disease-synonyms   disease names <-> their exact Disease Ontology synonyms
    patient-details    two irrelevant but plausible details added to a vignette, MedFuzz-style
                       (rule-based, :mod:`evals.robustness.details`)

Every choice is seeded by ``(seed, perturbation, dataset, qid)``: the same config gives the same
perturbed items on any machine, and adding items leaves the others unchanged.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from typing import Literal

from core.errors import ConfigError
from core.paths import Paths
from evals.types import McqItem

PerturbationName = Literal["shuffle-options", "drug-names", "disease-synonyms", "patient-details"]
Perturb = Callable[[McqItem, random.Random], "McqItem | None"]
SEPARATOR = "~"  # <dataset>~<perturbation>


def _perturbation(name: str, paths: Paths) -> Perturb:
    """The named perturbation, with the dictionary it needs loaded once."""
    if name == "shuffle-options":
        from evals.robustness.options import shuffle_options

        return shuffle_options
    if name == "drug-names":
        from evals.robustness.drugs import drug_swapper

        return drug_swapper()
    if name == "disease-synonyms":
        from evals.robustness.diseases import disease_swapper

        return disease_swapper(paths.source_data / "disease_ontology")
    if name == "patient-details":
        from evals.robustness.details import add_patient_details

        return add_patient_details
    raise ConfigError(f"unknown perturbation {name!r}; known: {', '.join(PERTURBATIONS)}")


PERTURBATIONS: tuple[str, ...] = ("shuffle-options", "drug-names", "disease-synonyms", "patient-details")


def item_rng(seed: int, name: str, item: McqItem) -> random.Random:
    """A random stream of its own for one (seed, perturbation, item)."""
    return random.Random(zlib.crc32(f"{seed}|{name}|{item.dataset}|{item.qid}".encode()))


def perturb_items(items: Sequence[McqItem], name: str, seed: int, paths: Paths) -> list[McqItem]:
    """The perturbed copies of the items the perturbation applies to (in item order), each
    recorded under ``<dataset>~<name>`` with ``meta`` saying what changed."""
    perturb = _perturbation(name, paths)
    out: list[McqItem] = []
    for item in items:
        changed = perturb(item, item_rng(seed, name, item))
        if changed is not None:
            out.append(changed)
    return out


def base_dataset(dataset: str) -> tuple[str, str | None]:
    """``medqa~drug-names`` -> ``("medqa", "drug-names")``; an original set -> ``(name, None)``.
    Only a known perturbation after the last ``~`` counts (``mcq:~/exams.csv`` is an original)."""
    base, sep, perturbation = dataset.rpartition(SEPARATOR)
    return (base, perturbation) if sep and perturbation in PERTURBATIONS else (dataset, None)
