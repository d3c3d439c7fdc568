"""Which questions training must never see, and how questions are compared.

Every question of an evaluation set the project reports on is held out of training, by
normalised text (case, punctuation and spacing ignored), whatever split it came from:

- MIRAGE's ``bioasq`` items (618; they are drawn from all BioASQ years, 7B-11B),
- BioASQ Task 11B (the retrieval test split; 327 questions),
- TREC 2017 LiveQA-Med test questions (all three wordings: original, paraphrase, summary),
- PubMedQA PQA-L questions (1,000; MIRAGE's PubMedQA* is its test part).

MedQuAD questions are held out by pool instead: the abstention benchmarks draw their items from
fixed (collection, question type) pools (:func:`benchmark_pools`: GARD/GHR symptoms and
treatment questions, MedlinePlus drug questions), and training reads no question of those pools,
so no benchmark item, whatever the index it is selected against, can be a training question.

BioASQ questions whose text occurs more than once in ``questions.jsonl`` (the same question
asked in two years, with different gold snippets) are dropped too: a copy could sit on both
sides of the train/validation split.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.errors import SourceError
from evals.datasets.bioasq import bioasq_rows, normalise


@dataclass(frozen=True)
class HeldOut:
    """Normalised question texts per evaluation set."""

    sets: dict[str, frozenset[str]]

    def all(self) -> frozenset[str]:
        return frozenset().union(*self.sets.values()) if self.sets else frozenset()

    def counts(self) -> dict[str, int]:
        return {name: len(texts) for name, texts in sorted(self.sets.items())}


def _read_json(path: Path, what: str) -> object:
    if not path.is_file():
        raise SourceError(f"{what} not found at {path}; point MEDCITE_SOURCE_DATA at the shared data folder")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SourceError(f"{path} is not valid JSON ({exc}); re-copy it") from exc


def held_out_questions(source_data: Path) -> HeldOut:
    """The evaluation questions listed in the module docstring, normalised."""
    from evals.datasets.liveqa import FIELDS, QUESTIONS, read_questions

    mirage = _read_json(source_data / "mirage" / "benchmark.json", "MIRAGE benchmark.json")
    if not isinstance(mirage, dict) or "bioasq" not in mirage:
        raise SourceError("MIRAGE benchmark.json has no 'bioasq' set; re-copy it")
    pqal = _read_json(source_data / "pubmedqa" / "ori_pqal.json", "PubMedQA ori_pqal.json")
    if not isinstance(pqal, dict):
        raise SourceError("PubMedQA ori_pqal.json should map PubMed ids to items; re-copy it")
    liveqa: set[str] = set()
    for field in FIELDS:
        liveqa |= {normalise(t) for t in read_questions(source_data / "medquad" / QUESTIONS, field).values()}
    sets = {
        "mirage-bioasq": frozenset(normalise(v["question"]) for v in mirage["bioasq"].values()),
        "bioasq-11b": frozenset(
            normalise(str(r["body"])) for r in bioasq_rows(source_data) if r["task"] == "Task11B"
        ),
        "liveqa-med": frozenset(t for t in liveqa if t),
        "pubmedqa-pqal": frozenset(normalise(v["QUESTION"]) for v in pqal.values()),
    }
    return HeldOut(sets)


def benchmark_pools() -> frozenset[tuple[str, str]]:
    """MedQuAD ``(collection, question type)`` pools the abstention benchmarks draw from."""
    from evals.datasets.abstention import DRAWN_FROM as ABSTENTION
    from evals.datasets.near_miss import DRAWN_FROM as NEAR_MISS

    return ABSTENTION | NEAR_MISS


def duplicated(texts: Iterable[str]) -> frozenset[str]:
    """Normalised texts that occur more than once."""
    counts = Counter(normalise(t) for t in texts)
    return frozenset(t for t, n in counts.items() if n > 1)
