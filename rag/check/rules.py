"""Which checks the support gate applies: one switch each, for the profile and for ablations.

The gate (``gate.py``) presents a generated sentence only when its cited passages are about the
question (``aboutness.py``) and support it (``verify.py``). The default is every check on;
``bench/answers/clinician.py --off NAME`` turns one off to measure what it prevents (issue 31's
ablation table, ``docs/results/clinician/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The checks ``--off`` may name, with where each lives
SWITCHES = {
    "subtypes": "aboutness: a passage naming another 'type X' than the question is not about it",
    "asked_for": "aboutness + gate: a treatment/dose/missed-dose/storage question needs a passage, "
    "and an answer, that gives one",
    "populations": "aboutness: a question about children, pregnancy or breastfeeding needs a passage "
    "naming them",
    "same_measure": "aboutness: eGFR/GFR, HbA1c/A1C, ECG/EKG count as one concept",
    "labels": "gate: a sentence that only repeats a source's label, or asks a question, is no answer",
    "answers": "gate: the relevance model must judge a sentence relevant to the question (min_answer)",
    "dose_scope": "verifier: a dose for a group must stand in a line or heading naming that group",
    "copy_check": "verifier: a near copy of a passage sentence must keep that sentence's words",
}


@dataclass(frozen=True)
class GateRules:
    """``terms``: how a passage shows it is about the question's subject: ``"judged"`` (the
    aboutness model: how much of the question's concepts it covers, weighed by their rarity in
    the corpus, with the relevance model's probability; ``aboutness.AboutnessModel``),
    ``"every"`` (every key term, the rule before issue 31) or ``"off"``. ``min_about``: the
    model's probability a passage must reach (None: the model's own threshold, chosen on the
    clinician benchmark's dev part). Each boolean is one check of :data:`SWITCHES`.
    ``uncited``: what may give a sentence the model left without a marker a source: only a
    passage about the question it quotes word for word (``"quoted"``, the rule before issue 31),
    or also one about the question that supports it at the verifier's threshold
    (``"supported"``: the same bar a cited sentence meets when it is re-cited)."""

    terms: Literal["judged", "every", "off"] = "every"
    uncited: Literal["quoted", "supported"] = "quoted"
    min_about: float | None = None
    min_answer: float = 0.0  # the relevance probability a presented sentence needs (check "answers")
    subtypes: bool = True
    asked_for: bool = True
    populations: bool = True
    same_measure: bool = True
    labels: bool = True
    answers: bool = True
    dose_scope: bool = True
    copy_check: bool = True

    def without(self, *names: str) -> GateRules:
        """These rules with the named checks turned off; an unknown name is a ValueError."""
        unknown = sorted(set(names) - set(SWITCHES))
        if unknown:
            raise ValueError(f"no gate check named {unknown}; choose from {sorted(SWITCHES)}")
        return GateRules(**{**self.__dict__, **dict.fromkeys(names, False)})
