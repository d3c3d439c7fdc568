"""Unanswerable questions about things the default index does name (``abstention-near-miss``).

The unanswerable half of ``abstention-default`` asks about drugs the index never mentions, so
the evidence gate alone can abstain. The dangerous case is the one a user meets first: the index
has a passage about the question's disease or drug, but not the answer (issue 14's pembrolizumab
question was answered with a dose from the HPO "Melanoma" phenotype list). Every question here is
a real MedQuAD question (NIH, CC BY 4.0) of that kind, without its answer in ``default``:

- ``treatment``: GARD/GHR "What are the treatments for X?" where X is, normalised, the title of
  an HPO disease reference in the index and occurs in no guideline chunk. HPO references list a
  disease's features, inheritance and onset, never its treatment, so no passage answers it.
- ``drug``: MedlinePlus "What should I do if I forget a dose of D?" and "How should I keep D
  stored and dispose of it?" about drugs named in a guideline chunk. Guideline summaries give
  indications and doses, not missed-dose or storage instructions.

Half of each kind per part; the ``test`` and ``dev`` parts share no disease, drug or question
(the pools are sorted, shuffled with the seed, and cut in two). Every item is unanswerable, so a
run reports the abstention rate and what was presented when it did not abstain. No question of
these pools (:data:`DRAWN_FROM`) is a training pair of the relevance or support models
(``training.leakage.benchmark_pools``; a test asserts it). That the answers are not in the index
is a property of the two sources, checked on the built index, not a judgement of each item (the
checks and the retraining history: docs/results/module_history.md).
"""

from __future__ import annotations

import random

from core.paths import Paths
from evals.datasets.abstention import DISEASE_SOURCES, _medquad_rows, default_index_chunks
from evals.datasets.bioasq import normalise
from evals.datasets.freetext import FreeTextItem

NAME = "abstention-near-miss"
DRUG_TYPES = ("forget a dose", "storage and disposal")
# The MedQuAD (collection, question type) pools the items are drawn from; training never reads them.
DRAWN_FROM = frozenset({(s, "treatment") for s in DISEASE_SOURCES} | {("MPlusDrugs", t) for t in DRUG_TYPES})


def near_miss_questions(
    rows: list[dict[str, str]],
    hpo_titles: set[str],
    guideline_text: str,
    per_part: int,
    seed: int,
    part: str = "test",
) -> list[FreeTextItem]:
    """``per_part`` unanswerable items, half ``treatment`` and half ``drug``, interleaved.

    ``hpo_titles``: normalised titles of the index's HPO disease references; ``guideline_text``:
    the normalised title and text of every other chunk, joined by spaces. ``part="test"`` takes
    the first half of each shuffled pool's share, ``part="dev"`` the next.
    """
    if part not in ("test", "dev"):
        raise ValueError(f"part must be 'test' or 'dev', got {part!r}")
    padded = f" {guideline_text} "
    treatment: dict[str, dict[str, str]] = {}
    drugs: dict[str, list[dict[str, str]]] = {}
    for row in sorted(rows, key=lambda r: (r["source"], r["qid"])):
        focus = normalise(row.get("focus", ""))
        if not focus:
            continue
        named_by_guideline = f" {focus} " in padded
        if (row["source"], row["qtype"]) not in DRAWN_FROM:
            continue
        if row["source"] in DISEASE_SOURCES:
            if focus in hpo_titles and not named_by_guideline:
                treatment.setdefault(focus, row)
        elif named_by_guideline:
            drugs.setdefault(focus, []).append(row)
    rng = random.Random(seed)
    diseases, drug_names = sorted(treatment), sorted(drugs)
    rng.shuffle(diseases)
    rng.shuffle(drug_names)
    half = per_part // 2
    start = 0 if part == "test" else half
    chosen_t = [treatment[d] for d in diseases[start : start + half]]
    chosen_d = []
    for n, drug in enumerate(drug_names[start : start + per_part - half]):
        wanted = DRUG_TYPES[n % len(DRUG_TYPES)]
        chosen_d.append(next((r for r in drugs[drug] if r["qtype"] == wanted), drugs[drug][0]))
    mixed = [row for pair in zip(chosen_t, chosen_d, strict=False) for row in pair]
    mixed += chosen_t[len(chosen_d) :] + chosen_d[len(chosen_t) :]
    name = NAME if part == "test" else f"{NAME}-dev"
    return [
        FreeTextItem(
            name, f"{r['source']}:{r['qid']}", " ".join(r["question"].split()), None, answerable=False
        )
        for r in mixed
    ]


def load_near_miss(
    paths: Paths, part: str = "test", per_part: int = 100, seed: int = 13
) -> list[FreeTextItem]:
    """One part (``test`` or ``dev``) of the near-miss unanswerable questions for the default index."""
    chunks = default_index_chunks(paths, NAME)
    hpo_titles = {normalise(c.title) for c in chunks if c.source == "hpo"}
    guideline_text = " ".join(normalise(f"{c.title} {c.text}") for c in chunks if c.source != "hpo")
    rows = _medquad_rows(paths.source_data)
    return near_miss_questions(rows, hpo_titles, guideline_text, per_part, seed, part)
