"""A follow-up read with the conversation before it: what every stage judges in a chat.

"his eGFR is 25 - same dose?" names no drug and no condition; the turn before does. Three ways
of reading it (``[conversation] reading``; measured side by side in
``docs/results/clinician/followups.md``), two of them here (``rewrite``, the generator's
standalone question, is ``Pipeline.conversation``'s, which falls back to ``carry``):

- ``carry``: the earlier user turns and the follow-up, read as one question, with what the
  follow-up says taking the place of what it replaces. The search, the relevance model and the
  line judge read the turns' text in order; the structured reading (``ReadQuestion``) takes its
  subject words from every turn, what is asked (kinds of answer, a number, subtypes) from the
  follow-up or, when it asks nothing of its own ("what instead?"), from the last turn that did,
  and the patient from the condition reader: a value, age, sex, pregnancy, drug or attribute
  family the follow-up states replaces the earlier one ("CURB-65 3 now" replaces "CURB-65 1").
  An earlier value is carried only where a turn writes it with its measure's name or unit ("BP
  84", "90 kg"; not the "50" of "84/50", nor times such as "5 h ago").
- ``search``: the last earlier user turn shapes the search text only; every judgement reads the
  follow-up alone (before issue 60).

The assistant's replies are not read: they are medcite's own lines, already cited, and would
make the next turn judge passages against the previous answer. ``carried`` lists what the
earlier turns contributed, for the reply's "Read with:" line. Pure functions.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.types import Message
from rag.reading.aboutness import key_terms
from rag.reading.condition_words import MEASURE_RES
from rag.reading.conditions import Band, Conditions, question_conditions
from rag.reading.question import ReadQuestion
from rag.reading.terms import Vocabulary


@dataclass(frozen=True)
class Resolved:
    """The question every stage reads (``read``, its ``text`` the search text too) and what the
    earlier turns contributed to it (``carried``, as the user wrote it)."""

    read: ReadQuestion
    carried: tuple[str, ...] = ()
    rewritten: bool = False  # ``read.text`` is the generator's standalone rewrite

    @property
    def text(self) -> str:
        return self.read.text

    @property
    def said(self) -> str:
        """The line a reply starts with, so the clinician sees what was assumed ("" when nothing was)."""
        if self.rewritten:
            return f"Read as: {self.text}\n\n"
        return (
            f"Read with: {', '.join(self.carried)} (from your earlier messages).\n\n" if self.carried else ""
        )


def earlier_questions(history: Sequence[Message]) -> list[str]:
    """The user's earlier turns, oldest first (empty ones dropped)."""
    return [m.content.strip() for m in history if m.role == "user" and m.content.strip()]


def carry(
    question: str,
    earlier: Sequence[str],
    vocabulary: Callable[[], Vocabulary | None] | None = None,
    *,
    same_measure: bool = True,
) -> Resolved:
    """``question`` read with the ``earlier`` user turns (module docstring, ``carry``)."""
    now = ReadQuestion.read(question, vocabulary, same_measure=same_measure)
    if not earlier:
        return Resolved(now)
    before = [ReadQuestion.read(text, same_measure=same_measure) for text in earlier]
    asking = now if (now.kinds or now.asks_number or now.subtypes) else _last_asking(before, now)
    stated = question_conditions(question)
    patient = question_conditions(earlier[0])
    for text in (*earlier[1:], question):
        patient = replaced(patient, question_conditions(text))
    # an earlier value is carried only as written with its measure's name ("BP 84", not a "50" after it)
    names = {b.measure for b in patient.values}  # "CURB-65 2" also reads as a CURB score of 65
    written = {
        b: _stated(b, earlier) if f"{b.measure}-{b.text}" not in names else ""
        for b in patient.values
        if b not in stated.values
    }
    patient = dataclasses.replace(patient, values=tuple(b for b in patient.values if written.get(b, "-")))
    others = describe(dataclasses.replace(patient, values=()))
    own = describe(dataclasses.replace(stated, values=()))
    carried = [w for w in written.values() if w] + [c for c in others if c not in own]
    said = ReadQuestion.read("\n".join(earlier), vocabulary, same_measure=same_measure)
    corpus = vocabulary() if vocabulary is not None else None
    unknown = corpus.idf("") if corpus is not None else None  # the weight of a word no passage has
    subject = [
        c.text
        for c in said.concepts
        if c.specialist and c.text not in now.terms and c.weight != unknown and not _in_any(c.text, carried)
    ]
    facts = tuple(dict.fromkeys([*carried, *_as_written(earlier, subject)]))
    text = "\n".join((*earlier, question))
    read = dataclasses.replace(
        now,
        text=text,
        terms=key_terms(text),
        kinds=now.kinds or asking.kinds,
        asks_number=now.asks_number or (not now.kinds and asking.asks_number),
        subtypes=now.subtypes or asking.subtypes,
        populations=tuple(dict.fromkeys((*now.populations, *(p for r in before for p in r.populations)))),
        conditions=patient,
        named_drugs=stated.drugs,
    )
    return Resolved(read, facts)


def _last_asking(before: Sequence[ReadQuestion], default: ReadQuestion) -> ReadQuestion:
    for read in reversed(before):
        if read.kinds or read.asks_number or read.subtypes:
            return read
    return default


def replaced(earlier: Conditions, now: Conditions) -> Conditions:
    """The patient of ``earlier`` with what ``now`` states put in its place: a value of the same
    measure, the ages, the sex, pregnancy, the drugs, each attribute family."""
    values = [b for b in earlier.values if not any(b.comparable(n) for n in now.values)]
    attributes = {**earlier.attributes, **now.attributes}
    return Conditions(
        values=(*values, *now.values),
        ages=now.ages or earlier.ages,
        sexes=now.sexes or earlier.sexes,
        pregnancy=now.pregnancy or earlier.pregnancy,
        drugs=now.drugs or earlier.drugs,
        attributes=attributes,
    )


def describe(patient: Conditions) -> list[str]:
    """The patient's facts other than values as a clinician reads them: ages, sex, pregnancy, drugs."""
    out = [f"age {lo:g}" if lo == hi else f"age {lo:g}-{hi:g}" for lo, hi in patient.ages]
    return (
        out
        + sorted(patient.sexes)
        + ([patient.pregnancy] if patient.pregnancy else [])
        + sorted(patient.drugs)
    )


_TIMES = frozenset({"years", "months", "weeks", "days", "hours", "minutes"})


def _stated(band: Band, earlier: Sequence[str]) -> str:
    """``band`` as an earlier turn writes it, its measure's name just before it ("CrCl 24 mL/min",
    "CURB-65 of 2"), or "" when no turn does (the reader took a number for the wrong measure)."""
    if not band.measure or band.measure == "age":
        return "" if band.unit in _TIMES else band.text  # a value its unit names ("70 kg"), not a time
    name = MEASURE_RES[band.measure].pattern if band.measure in MEASURE_RES else None
    name = name or re.escape(band.measure.removeprefix("score:"))
    value = re.escape(" ".join(band.text.split())).replace(r"\ ", r"\s*")
    pattern = re.compile(rf"({name})[\s:=~]{{0,3}}(?:(?:of|is|was|at|now)\s+)?({value})", re.IGNORECASE)
    for text in reversed(earlier):
        if found := pattern.search(text):
            return " ".join(f"{found.group(1)} {found.group(2)}".split())
    # its unit names it even where the reader took the wrong measure ("TBSA 45%, 90 kg")
    named = band.unit not in (*_TIMES, "", "%") and any(band.text in text for text in earlier)
    return band.text if named else ""


def _in_any(term: str, facts: Sequence[str]) -> bool:
    return any(term.casefold() in fact.casefold() for fact in facts)


def _as_written(earlier: Sequence[str], terms: Sequence[str]) -> list[str]:
    """``terms`` (case-folded words) as the earlier turns write them ("CAP", not "cap")."""
    written = {w.casefold().strip(".,;:?!()"): w.strip(".,;:?!()") for t in earlier for w in t.split()}
    return [" ".join(written.get(w, w) for w in term.split()) for term in terms]
