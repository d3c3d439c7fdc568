"""Is a dose claimed for a group (children, pregnancy, kidney function, ...) given for that group?

One of the checks a support score is capped by (``rag.check.verify``); pure functions.
"""

from __future__ import annotations

import re

from core.types import Chunk
from rag.check.support_signals import quantities
from rag.generate.sentences import marker_free, sentence_spans

# Who or what a dose applies to. A dose stated for one group (a renal dose, an adult dose) read
# as the dose for another is the worst error this product can make, and a bag of words or a
# support model reading the whole passage misses it: the enoxaparin passage of the default index
# says "1 mg/kg subcutaneously once daily" for CrCl < 30 and names pregnancy only in a later
# line about monitoring, and a model answered "the dose of enoxaparin for deep vein thrombosis in
# pregnancy is 1 mg/kg subcutaneously once daily", which the support model scored 0.46.
QUALIFIERS: dict[str, re.Pattern[str]] = {
    "children": re.compile(
        r"\b(?:child(?:ren|hood)?|p(?:a)?ediatric\w*|infan(?:t|ts|cy)|neonat\w*|newborns?"
        r"|adolescen\w*|toddlers?|kids?|teen(?:ager)?s?)\b"
        # an age under 18 names a child too: "a 14-year-old", "6 months old"
        r"|\b(?:1[0-7]|[1-9])[- ]?(?:years?|yrs?|y)[- ]?old\b"
        r"|\b\d+[- ]?(?:months?|weeks?|days?)[- ]?old\b",
        re.IGNORECASE,
    ),
    "pregnancy": re.compile(
        r"\b(?:pregnan\w*|antenatal|prenatal|obstetric\w*|gestation\w*)\b", re.IGNORECASE
    ),
    "breastfeeding": re.compile(r"\b(?:breast-?\s?feed\w*|lactat\w*|nursing mothers?)\b", re.IGNORECASE),
    "kidney function": re.compile(
        r"\b(?:renal|kidney|crcl|creatinine clearance|e?gfr|ckd|aki|dialysis"
        r"|ha?emodialysis)\b",
        re.IGNORECASE,
    ),
    "liver function": re.compile(r"\b(?:hepatic|liver|cirrho\w*|child-pugh)\b", re.IGNORECASE),
    "older age": re.compile(r"\b(?:elderly|older (?:adults?|patients|people)|geriatric)\b", re.IGNORECASE),
    "obesity": re.compile(r"\b(?:obes\w*|bmi)\b", re.IGNORECASE),
}
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
