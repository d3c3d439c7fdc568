"""What every stage reads of a question, read once when ``Pipeline.answer`` begins.

The aboutness checks (``aboutness.missing``), the quote model (``quote_model.score_lines``), the
condition reader (``conditions.verdict``) and the support gate all judge passages and lines
against the same reading: the question's key terms and the concepts they form in this corpus,
the "type X" subtypes, the kinds of answer it asks for, the populations it names, the patient it
describes and whether it asks for a number. No stage tokenises or parses the question again.
The concepts (which need the corpus vocabulary) and the patient (which needs the drug
dictionary) are read when a stage first asks, so a question nothing is kept for loads neither.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from rag.reading.aboutness import AskedFor, asked_for, key_terms, populations, written_abbreviations
from rag.reading.condition_words import subtypes
from rag.reading.conditions import Conditions, question_conditions
from rag.reading.terms import Concept, Vocabulary

# a question that asks for a quantity, a time or a threshold
ASKS_NUMBER = re.compile(
    r"\b(?:how (?:much|many|long|soon|often|high|low|far|fast|quickly|big|large|frequently)"
    r"|what (?:dose|dosage|rate|level|score|threshold|cut-?off|target|percentage|interval|age|volume)"
    r"|cut-?off|threshold|when|at what|maximum|minimum|max|min|top dose|limit|within|duration"
    r"|doses?|dosing|interval|target|goal|number of|percent)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ReadQuestion:
    """One question as the chain reads it (module docstring)."""

    text: str
    terms: tuple[str, ...]  # its subject words (``aboutness.key_terms``)
    subtypes: tuple[str, ...]  # "type 2", "type c"
    kinds: tuple[AskedFor, ...]  # a treatment, a dose, a missed dose, storage
    populations: tuple[str, ...]  # children, pregnancy, breastfeeding
    asks_number: bool  # how much, how long, what cut-off
    same_measure: bool = True  # eGFR/GFR and the like count as one concept
    vocabulary: Callable[[], Vocabulary | None] | None = field(default=None, repr=False, compare=False)
    conditions: Conditions | None = None  # the patient, when read elsewhere (a conversation's)
    named_drugs: frozenset[str] | None = None  # the drugs this turn names itself (None: the patient's)

    @classmethod
    def read(
        cls,
        text: str,
        vocabulary: Callable[[], Vocabulary | None] | None = None,
        *,
        same_measure: bool = True,
    ) -> ReadQuestion:
        """``text`` read once; ``vocabulary``: gives the corpus's (None: every concept weighs the
        same, no abbreviation)."""
        return cls(
            text=text,
            subtypes=tuple(f"type {key}" for key in sorted(subtypes(text))),
            kinds=asked_for(text),
            populations=populations(text),
            asks_number=bool(ASKS_NUMBER.search(text)),
            same_measure=same_measure,
            vocabulary=vocabulary,
            terms=key_terms(text),  # last: it tokenises as the index does (indexes/text.py)
        )

    @cached_property
    def concepts(self) -> tuple[Concept, ...]:
        """The key terms grouped into concepts and weighed in this corpus (``terms.py``)."""
        vocabulary = (self.vocabulary() if self.vocabulary is not None else None) or Vocabulary.empty()
        written = written_abbreviations(self.text)
        return vocabulary.concepts(self.terms, same_measure=self.same_measure, written=written)

    @cached_property
    def patient(self) -> Conditions:
        """The condition reader's reading of the patient (``conditions.question_conditions``), or
        the ``conditions`` given (``conversation.carry``)."""
        return self.conditions if self.conditions is not None else question_conditions(self.text)

    @property
    def drugs(self) -> frozenset[str]:
        """The drugs the question itself names: a follow-up's own, not those carried from the
        turns before it (a passage need not name those: "and the parenteral anticoagulant?")."""
        return self.named_drugs if self.named_drugs is not None else self.patient.drugs
