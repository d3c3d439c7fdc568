"""Brand <-> generic drug names, RABBITS-style (Gallifant et al. 2024: 1-10% accuracy drops on
MedQA and MedMCQA when the names are swapped, though the question is the same).

The dictionary is ``drug_brands.tsv`` beside this module: 165 common US brand names with their
generic name, each confirmed by the drug dictionary of the ``drug-named-entity-recognition``
package (2.0.9, MIT): the package maps the brand to that generic. ``scripts/drug_brands.py``
rebuilds the file from the package's wheel (hash-pinned) and the candidate list it holds. A
generic name is replaced by its brand and a brand by its generic, in the question and the
options alike.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from core.errors import SourceError
from evals.robustness.terms import TermSwap

TABLE = Path(__file__).with_name("drug_brands.tsv")


@lru_cache(maxsize=1)
def brand_generic_map(path: Path = TABLE) -> dict[str, str]:
    """Both directions, lower-case keys: ``{"metformin": "Glucophage", "glucophage": "metformin"}``."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except OSError as exc:
        raise SourceError(
            f"cannot read the drug name table {path}: {exc}; rebuild it with python scripts/drug_brands.py"
        ) from exc
    mapping: dict[str, str] = {}
    for number, row in enumerate(rows, start=2):
        generic, brand = (row.get("generic") or "").strip(), (row.get("brand") or "").strip()
        if not generic or not brand:
            raise SourceError(f"{path}:{number}: a row needs a generic and a brand name")
        mapping.setdefault(generic.lower(), brand)
        mapping.setdefault(brand.lower(), generic.lower())
    return mapping


def drug_swapper(path: Path = TABLE) -> TermSwap:
    return TermSwap(brand_generic_map(path), "drug-names")
