"""The dose scope of a generated sentence: a dose claimed for a group must be stated for it.

Who or what a dose applies to. A dose stated for one group (a renal dose, an adult dose) read
as the dose for another is the worst error this product can make, and a bag of words or a
support model reading the whole passage misses it: the enoxaparin passage of the default index
says "1 mg/kg subcutaneously once daily" for CrCl < 30 and names pregnancy only in a later
line about monitoring, and a model answered "the dose of enoxaparin for deep vein thrombosis in
pregnancy is 1 mg/kg subcutaneously once daily", which the support model scored 0.46.
"""

from __future__ import annotations

from core.types import Chunk
from rag.gate.support_signals import quantities
from rag.generate.sentences import marker_free, sentence_spans
from rag.reading.condition_words import QUALIFIERS

_DOSE_UNITS = frozenset({"mg", "mcg", "g", "unit", "mmol", "meq", "ml"})


def qualifiers(text: str) -> set[str]:
    """The groups (``QUALIFIERS``) that ``text`` names."""
    return {name for name, pattern in QUALIFIERS.items() if pattern.search(text)}


def doses(text: str) -> set[tuple[str, str | None]]:
    """The dose quantities of ``text``: numbers followed by a dose unit ("1 mg/kg" -> ("1", "mg"))."""
    return {(number, unit) for number, unit in quantities(text) if unit in _DOSE_UNITS}


def unscoped_qualifiers(claim: str, chunk: Chunk) -> tuple[str, ...]:
    """The groups a dose claim names that its passage never ties to that dose.

    For each dose of the claim (a number with a dose unit), the passage's sentences, list items
    and table rows that hold the same number (same unit, or none) are the dose's scope, with the
    passage's title and section path, which scope every line. Each group the claim names
    (children, pregnancy, breastfeeding, kidney or liver function, older age, obesity) must be
    named in that scope: "1 mg/kg once daily in pregnancy" is not supported by a passage whose
    only "1 mg/kg once daily" is the dose for CrCl < 30 and whose "pregnancy" is elsewhere. A
    claim without a dose, or without a group, has nothing to check (empty tuple).
    """
    text = marker_free(claim)
    wanted = qualifiers(text)
    claimed = doses(text)
    if not wanted or not claimed:
        return ()
    scope_groups = qualifiers(" ".join((chunk.title, *chunk.section)))
    for start, end in sentence_spans(chunk.text):
        segment = chunk.text[start:end]
        held = quantities(segment)
        if any((number, unit) in held or (number, None) in held for number, unit in claimed):
            scope_groups |= qualifiers(segment)
    return tuple(sorted(wanted - scope_groups))
