"""Irrelevant but plausible patient details added to a clinical vignette, MedFuzz-style.

MedFuzz (Ness et al. 2024) lets an attacker LLM add patient characteristics that should not
change the answer and finds that answers flip. This is the rule-based, reproducible version:
two details drawn from a fixed list are inserted after the vignette's first sentence. The list
avoids anything a clinician could read as a clue: no exposures (travel, animals, smoke, work
with chemicals or children), no diet, drugs, alcohol, family illness or social risk, nothing
about sex, age or ethnicity. Only vignettes are changed: a question that names an age ("A
45-year-old ...") or a patient who presents, comes or is brought in.
"""

from __future__ import annotations

import dataclasses
import random
import re

from evals.types import McqItem

DETAILS: tuple[str, ...] = (
    "The patient works as an accountant at a local firm.",
    "The patient enjoys doing crossword puzzles in the evening.",
    "The patient drives a blue sedan to appointments.",
    "The patient's favourite season is autumn.",
    "The patient plays chess online with friends on weekends.",
    "The patient recently started reading a long historical novel.",
    "The patient has lived in the same apartment building for many years.",
    "The patient's sister is a lawyer in another city.",
    "The patient likes to listen to classical music while cooking.",
    "The patient sings in a community choir on Thursday evenings.",
    "The patient keeps a small collection of postage stamps.",
    "The patient arrived a few minutes early for the appointment.",
)
_VIGNETTE = re.compile(
    r"\b\d+[- ](?:year|month|week|day)s?[- ]old\b"
    r"|\b(?:man|woman|boy|girl|patient|infant|child|newborn)\b[^.?!]{0,80}"
    r"\b(?:presents|comes|is brought|is admitted|visits)\b",
    re.IGNORECASE,
)
_FIRST_SENTENCE_END = re.compile(r"(?<=[a-z0-9)%][.])\s+(?=[A-Z])")


def add_patient_details(item: McqItem, rng: random.Random) -> McqItem | None:
    """The vignette with two details after its first sentence; None for a question that is not
    a vignette or has a single sentence (nowhere to put them without changing the question)."""
    if not _VIGNETTE.search(item.question):
        return None
    end = _FIRST_SENTENCE_END.search(item.question)
    if end is None:
        return None
    added = rng.sample(DETAILS, 2)
    question = item.question[: end.start()] + " " + " ".join(added) + " " + item.question[end.end() :]
    meta = {
        **item.meta,
        "perturbation": "patient-details",
        "option_map": {k: k for k in item.options},
        "changes": added,
    }
    return dataclasses.replace(item, dataset=f"{item.dataset}~patient-details", question=question, meta=meta)
