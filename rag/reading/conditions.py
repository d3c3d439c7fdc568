"""The condition reader: which patient a line of a guideline is stated for, and whether that is
the patient asked about.

A guideline states a line's conditions in fixed places: the line itself ("K+ < 3.5 mmol/L? ->
replace at 10 mmol/hour"), a table row's label cell under its column header, a list's lead-in,
the headings above it. The question states the patient's ("a potassium of 3.1", "a 9-year-old",
"edoxaban"). :func:`read` reads both into :class:`Conditions`: **values** (:class:`Band`: a
measure, a unit and an interval; a line's bare number is no condition), **ages and populations**
(age intervals and sexes, pregnancy), **drugs** (the maintained
``drug_named_entity_recognition`` dictionary, synonyms included) and **exclusive attributes**
(route, vessel, circulation, episode, care setting, type), where a line naming one value of a
family and not the asked one is for another patient), and **indications** (the diseases a line is
stated for: a DVT question's dose is not the ACS guideline's, whatever the line's own band says).

:func:`judge` compares them: a line **conflicts** when one of its conditions excludes the
patient (a band without the value, a disjoint age or sex, another drug of a dose question with
the asked drug unnamed, another value of an attribute family), **fits** when at least one of its
conditions holds the patient and none excludes them, and is **silent** otherwise. A conflicting
line is never quoted (``rag/reading/quote_model.py``); fitting is one of the quote model's features.

The words it knows are in ``condition_words.py``. Pure functions; the drug dictionary is read
once.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rag.reading.condition_words import (
    AGE_GROUPS,
    ATTRIBUTES,
    DASH,
    FEMALE,
    INDICATIONS,
    INF,
    LESS,
    MALE,
    MEASURE_RES,
    MEASURE_WINDOW,
    MORE,
    NOT_PREGNANT,
    NOT_SCORES,
    NUM,
    PREGNANT,
    SCORE,
    STATED_AGE,
    UNIT,
    UNITS,
    subtypes,
)

INDICATION = "indication"  # the attribute family of the diseases a line is stated for


@dataclass(frozen=True)
class Band:
    """A measured value (a point, ``low == high``) or the interval a line states for one."""

    measure: str  # a MEASURES name, or "" when no measure word names it
    unit: str  # a UNITS name, or ""
    low: float
    high: float
    text: str
    point: bool = False

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def comparable(self, other: Band) -> bool:
        """Whether two values measure the same thing: the same measure (units agree or one is
        missing), or no measure on one side and the same unit on both."""
        if self.measure and other.measure:
            return self.measure == other.measure and (
                not self.unit or not other.unit or self.unit == other.unit
            )
        return bool(self.unit) and self.unit == other.unit and self.unit != "%"


@dataclass(frozen=True)
class Conditions:
    values: tuple[Band, ...] = ()
    ages: tuple[tuple[float, float], ...] = ()  # age intervals in years
    sexes: frozenset[str] = frozenset()  # "female", "male"
    pregnancy: str = ""  # "pregnant", "not pregnant" or ""
    drugs: frozenset[str] = frozenset()
    attributes: dict[str, frozenset[str]] = field(default_factory=dict, hash=False)

    def describe(self) -> list[str]:
        out = [b.text for b in self.values]
        out += [f"age {lo:g}-{hi:g}" for lo, hi in self.ages]
        out += sorted(self.sexes) + ([self.pregnancy] if self.pregnancy else []) + sorted(self.drugs)
        out += [f"{family}={','.join(sorted(v))}" for family, v in sorted(self.attributes.items())]
        return out


@dataclass(frozen=True)
class Verdict:
    """``fits`` / ``conflicts`` / ``silent``, with why (``reasons``) and, for a fit, the line's
    conditions that hold the patient (``matched``) and whether one stands only in its headings.
    ``tier``: 2 when a value band, age, sex or pregnancy of the line holds the patient, 1 when
    only a named drug or attribute (route, vessel, ...) matches, 0 when silent or conflicting."""

    state: str
    reasons: tuple[str, ...] = ()
    matched: tuple[str, ...] = ()
    from_heading: bool = False
    tier: int = 0


SILENT = Verdict("silent")


def _unit_of(text: str) -> str:
    for name, pattern in UNITS:
        if re.match(pattern, text, re.I):
            return name
    return ""


def _measure_before(text: str, at: int, default: str = "") -> str:
    """The measure named nearest before position ``at`` (within MEASURE_WINDOW characters): a
    MEASURES name, or a score's acronym after the word "score" or before "of"/"is"/a number."""
    window = text[max(0, at - MEASURE_WINDOW) : at]
    best, where = default, -1
    for name, pattern in MEASURE_RES.items():
        for m in pattern.finditer(window):
            if m.end() > where:
                best, where = name, m.end()
    for m in SCORE.finditer(window):
        if m[0] not in NOT_SCORES and m.end() > where and not m[0].isdigit():
            best, where = f"score:{m[0].lower()}", m.end()
    if best == "" and re.search(r"\bscore\b", window, re.I):
        best = "score"
    return best


def _number(text: str) -> float:
    return float(text.replace(",", ""))


# what comes after an amount to give, or before an action's timing: no condition of the patient
_AMOUNT = re.compile(
    r"\s*(?:mg|mcg|µg|ug|g|units?|iu|mmol(?!\s*/)|meq(?!\s*/)|ml(?!\s*/\s*(?:min|day|d\b))|mg/kg|mcg/kg|l\b)\b",
    re.I,
)
_ACTION_TIME = re.compile(r"(?:every|for|over|at|after|then|q)\s*$", re.I)
_WORD_NUMBERS = {
    w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
_WORD_NUMBER = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.I)


def _is_amount(text: str, start: int, end: int) -> bool:
    return bool(_AMOUNT.match(text, end)) or bool(_ACTION_TIME.search(text[max(0, start - 8) : start]))


_RANGE = re.compile(rf"({NUM})\s*(?:({UNIT})\s*)?{DASH}({NUM})\s*({UNIT})?", re.I)
_COMPARED = re.compile(rf"(?:({LESS})|({MORE}))\s*({NUM})\s*({UNIT})?", re.I)
_POINT = re.compile(rf"({NUM})\s*({UNIT})?", re.I)


def read_values(text: str, point_values: bool, default_measure: str = "") -> list[Band]:
    """The values ``text`` states: ranges and thresholds always; bare numbers only with
    ``point_values`` (a question's "potassium of 3.1"). ``default_measure`` names what a number
    with no measure word before it measures (a table column's header)."""
    bands: list[Band] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for m in _RANGE.finditer(text):
        if _is_amount(text, m.start(), m.end()):
            taken.append(m.span())
            continue
        unit = _unit_of(m[4] or m[2] or "")
        low, high = _number(m[1]), _number(m[3])
        if high < low:
            continue
        measure = _measure_before(text, m.start(), default_measure)
        bands.append(Band(measure, unit, low, high, m[0].strip()))
        taken.append(m.span())
    for m in _COMPARED.finditer(text):
        if not free(*m.span()) or _is_amount(text, m.start(), m.end()):
            continue
        value, unit = _number(m[3]), _unit_of(m[4] or "")
        measure = _measure_before(text, m.start(), default_measure)
        if m[1]:
            band = Band(measure, unit, -INF, value, m[0].strip())
        else:
            band = Band(measure, unit, value, INF, m[0].strip())
        bands.append(band)
        taken.append(m.span())
    if point_values:
        text = _WORD_NUMBER.sub(lambda w: str(_WORD_NUMBERS[w[1].lower()]), text)
        for m in _POINT.finditer(text):
            if not free(*m.span()) or (m.start() > 0 and text[m.start() - 1].isalnum()):
                continue
            after = text[m.end() : m.end() + 6]
            if after[:1] in ("-",) and after[1:2].isalpha():  # "9-year-old" is read as an age
                continue
            if _AMOUNT.match(text, m.end()):  # "on citalopram 40 mg": a dose taken, not a value
                continue
            value, unit = _number(m[1]), _unit_of(m[2] or "")
            measure = _measure_before(text, m.start(), default_measure)
            if (measure or unit) and measure != "age":  # a stated age is read by _ages
                bands.append(Band(measure, unit, value, value, m[0].strip(), point=True))
    return bands


def _ages(text: str, banded: bool = False) -> tuple[tuple[float, float], ...]:
    """Stated ages (points), and the age groups named unless a band states the ages (``banded``:
    "older adults (>= 75 years)" is the band, narrower than its word)."""
    spans: list[tuple[float, float]] = []
    for m in STATED_AGE.finditer(text):
        if m[3]:
            age = _number(m[3])
        else:
            unit = (m[2] or "y").lower()
            scale = (
                1 / 12
                if unit.startswith("mo")
                else 1 / 52
                if unit.startswith("w")
                else 1 / 365
                if unit.startswith("d")
                else 1
            )
            age = _number(m[1]) * scale
        spans.append((age, age))
    for interval, pattern in AGE_GROUPS:  # most specific first: "older adults" is not also "adults"
        if not banded and pattern.search(text):
            spans.append(interval)
            text = pattern.sub(" ", text)
    return tuple(spans)


@functools.cache
def _drug_finder():  # type: ignore[no-untyped-def]
    from drug_named_entity_recognition import find_drugs

    return find_drugs


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")  # "insulin-naive" is "insulin", "naive"
# words the drug dictionary holds that name no drug in a guideline's sentence
NOT_DRUGS = frozenset(
    {"oxygen", "water", "sodium", "potassium", "glucose", "calcium", "iron", "dextrose", "lead", "saline"}
)
# dosing abbreviations and lab tests the dictionary reads as drugs ("BID" is a chelator's synonym)
NOT_DRUG_WORDS = frozenset(
    {"bid", "tid", "qid", "qd", "od", "prn", "stat", "daily", "afp", "bhb", "ldl", "hdl", "crp"}
)


# the dictionary names a specific immune globulin only as "<target> immunoglobulin": "tetanus
# immune globulin" and "rabies immune globulin" would both be "immunoglobulins"
_IMMUNE_GLOBULIN = re.compile(r"\bimmune\s+globulins?\b", re.IGNORECASE)


def drugs(text: str) -> frozenset[str]:
    """The drugs ``text`` names, as the dictionary's preferred names, lower case."""
    text = _IMMUNE_GLOBULIN.sub("immunoglobulin", text)
    words = [w for w in _WORD.findall(text) if w.lower() not in NOT_DRUG_WORDS]
    found = _drug_finder()(words, is_ignore_case=True)
    names = {
        str(entry["name"]).lower()
        for entry, *_ in found
        # an entry without a name is a matched phrase only ("milk protein"); MeSH D27 is "Chemical
        # Actions and Uses": an entry only there is a class ("Anti-Bacterial Agents")
        if entry.get("name")
        and not (entry.get("mesh_tree") and all(str(tree).startswith("D27") for tree in entry["mesh_tree"]))
    }
    return frozenset(n for n in names if n not in NOT_DRUGS)


def read(text: str, point_values: bool = False, default_measure: str = "") -> Conditions:
    """Everything ``text`` says about whom it is for (see the module docstring)."""
    sexes = set()
    if FEMALE.search(text):
        sexes.add("female")
    if MALE.search(text):
        sexes.add("male")
    pregnancy = "not pregnant" if NOT_PREGNANT.search(text) else "pregnant" if PREGNANT.search(text) else ""
    attributes = {
        family: frozenset(name for name, pattern in values.items() if pattern.search(text))
        for family, values in ATTRIBUTES.items()
    }
    attributes[INDICATION] = frozenset(name for name, pattern in INDICATIONS.items() if pattern.search(text))
    types = subtypes(text)
    if types:
        attributes["type"] = types
    values = read_values(text, point_values, default_measure)
    age_bands = tuple((b.low, b.high) for b in values if b.measure == "age" and b.unit in ("years", ""))
    return Conditions(
        values=tuple(b for b in values if b.measure != "age"),
        ages=_ages(text, bool(age_bands)) + age_bands,
        sexes=frozenset(sexes),
        pregnancy=pregnancy,
        drugs=drugs(text),
        attributes={k: v for k, v in attributes.items() if v},
    )


def same_drug(a: str, b: str) -> bool:
    """One drug under two of the dictionary's names: "insulin glargine" is an insulin."""
    return a == b or a.split()[0] == b.split()[0]


def judge(patient: Conditions, line: Conditions, asks_amount: bool = True) -> tuple[list[str], list[str]]:
    """(conflicts, fits) of one set of a line's conditions against the patient's, each a short
    reason. ``asks_amount``: the question asks for a dose, rate or threshold, so a line about
    another drug (and not the asked one) is another drug's amount."""
    conflicts, fits = [], []
    for value in patient.values:
        same = [band for band in line.values if not band.point and band.comparable(value)]
        if not same:
            continue
        holding = [band for band in same if band.contains(value.low)]
        if holding:
            fits.append(holding[0].text)
        else:
            conflicts.append(f"stated for {same[0].text}; the question gives {value.text}")
    if patient.ages and line.ages:
        # the line fits when it covers the asked ages: "older adults" is no answer about adults
        if all(any(lo <= plo and phi <= hi for lo, hi in line.ages) for plo, phi in patient.ages):
            fits.append("age")
        else:
            conflicts.append("stated for another age group")
    if patient.sexes and line.sexes:
        if patient.sexes & line.sexes:
            fits.append("sex")
        else:
            conflicts.append(f"stated for {'/'.join(sorted(line.sexes))} patients")
    if patient.pregnancy and line.pregnancy and patient.pregnancy != line.pregnancy:
        conflicts.append(f"stated for {line.pregnancy} patients")
    if asks_amount and patient.drugs and line.drugs:
        asked = [d for d in patient.drugs if not any(same_drug(d, x) for x in line.drugs)]
        other = [d for d in line.drugs if not any(same_drug(d, x) for x in patient.drugs)]
        if asked and other:
            conflicts.append(
                f"stated for {', '.join(sorted(other))}; the question asks about {', '.join(sorted(asked))}"
            )
        elif not asked:
            fits.append("drug")
    for family, asked_values in patient.attributes.items():
        stated = line.attributes.get(family)
        if stated and family != INDICATION:  # judged over the whole context: indication_conflicts
            if asked_values & stated:
                fits.append(family)
            else:
                conflicts.append(f"stated for {family} {'/'.join(sorted(stated))}")
    return conflicts, fits


def indication_conflicts(patient: Conditions, own: Conditions, headed: Conditions) -> list[str]:
    """A line whose text, lead-in or headings (the title included) name diseases, none of them
    one the question names, is stated for another disease; no band of the line's own outweighs
    that (enoxaparin 1 mg/kg once daily for CrCl < 30 under an ACS title is no DVT dose)."""
    asked = patient.attributes.get(INDICATION)
    stated = own.attributes.get(INDICATION, frozenset()) | headed.attributes.get(INDICATION, frozenset())
    if not asked or not stated or asked & stated:
        return []
    return [f"stated for {', '.join(sorted(stated))}; the question is about {', '.join(sorted(asked))}"]


@dataclass(frozen=True)
class LineContext:
    """A candidate line with where its conditions may stand: the line, its lead-in or table
    header (with the row's label cell), and its passage's title and headings."""

    line: str
    lead: str = ""
    headings: Sequence[str] = ()


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


SUBJECT_WORDS = 8  # a line's drug is its subject when named before its first number, this early


def line_conditions(context: LineContext) -> tuple[Conditions, Conditions]:
    """(the line's own conditions with its lead-in and table header, its headings'): a table
    row's cells are read under their column names, so "| 50-100 mL/day |" under "Drainage" is a
    drainage band. The drugs of each are its subject's only: the lead-in, a row's first cell or
    the line's first words, and the innermost heading ("Maintain a 100:40 ratio with
    furosemide" is no furosemide line)."""
    line, lead = context.line, context.lead
    pieces: list[Conditions] = []
    if line.lstrip().startswith("|") and "\n" in lead:
        header = _cells(lead.split("\n")[0])
        cells = _cells(line)
        for n, cell in enumerate(cells):
            name = header[n] if n < len(header) else ""
            measure = _measure_before(name + " ", len(name) + 1)
            pieces.append(read(f"{name}: {cell}" if not measure else cell, default_measure=measure))
        pieces.append(read(" ".join(header)))
        subject = cells[0] if cells else ""
    else:
        pieces.append(read(f"{lead}\n{line}" if lead else line))
        before_number = re.split(r"(?<!\w)\d", line, maxsplit=1)[0]  # "P2Y12" is a name
        subject = " ".join([lead, *before_number.split()[:SUBJECT_WORDS]])
    own = dataclasses.replace(merge(pieces), drugs=drugs(subject))
    headed = _heading(" / ".join(context.headings))
    inner = context.headings[-1] if context.headings else ""
    return own, dataclasses.replace(headed, drugs=_heading(inner).drugs)


@functools.lru_cache(maxsize=4096)
def _heading(text: str) -> Conditions:
    """:func:`read` of a heading path: every sentence of a passage shares it, so it is read once."""
    return read(text)


def _fits_of_innermost_heading(patient: Conditions, context: LineContext, asks_amount: bool) -> list[str]:
    """What the innermost heading fits ("Elderly (>= 75 years)"): a title or a chapter heading
    scopes every line of a guideline, so it selects none of them."""
    if not context.headings:
        return []
    return judge(patient, _heading(context.headings[-1]), asks_amount)[1]


def merge(parts: Iterable[Conditions]) -> Conditions:
    parts = list(parts)
    attributes: dict[str, frozenset[str]] = {}
    for part in parts:
        for family, values in part.attributes.items():
            attributes[family] = attributes.get(family, frozenset()) | values
    pregnancy = {p.pregnancy for p in parts if p.pregnancy}
    return Conditions(
        values=tuple(b for p in parts for b in p.values),
        ages=tuple(a for p in parts for a in p.ages),
        sexes=frozenset().union(*(p.sexes for p in parts)),
        pregnancy=pregnancy.pop() if len(pregnancy) == 1 else "",
        drugs=frozenset().union(*(p.drugs for p in parts)),
        attributes=attributes,
    )


def question_conditions(question: str) -> Conditions:
    return read(question, point_values=True)


def verdict(patient: Conditions, context: LineContext, asks_amount: bool = True) -> Verdict:
    """Whether the line fits the patient, conflicts, or is silent. Headings (the title too) count
    as conditions of every line under them, but the line's own conditions decide first: a row
    for K+ < 3.5 under a heading naming all potassium bands fits a patient with 3.1. A fit
    counts from the line, its lead-in or row, or its innermost heading only."""
    own, headed = line_conditions(context)
    conflicts, fits = judge(patient, own, asks_amount)
    # the line's own drug decides over its headings' ("Citalopram" under "Serotonin reuptake inhibitors")
    for_headings = dataclasses.replace(patient, drugs=frozenset()) if "drug" in fits else patient
    heading_conflicts = judge(for_headings, headed, asks_amount)[0]
    heading_fits = _fits_of_innermost_heading(patient, context, asks_amount)
    # a heading is broader than its lines: it conflicts unless the line's own band or population fits
    if not fits or _tier(fits) < 2:
        conflicts += heading_conflicts
    conflicts += indication_conflicts(patient, own, headed)
    if conflicts:
        return Verdict("conflicts", tuple(conflicts))
    if heading_fits and _tier(heading_fits) > (_tier(fits) if fits else 0):
        return Verdict("fits", matched=tuple(heading_fits), from_heading=True, tier=_tier(heading_fits))
    if fits:
        return Verdict("fits", matched=tuple(fits), tier=_tier(fits))
    return Verdict("silent")


NAMED = frozenset({"drug", *ATTRIBUTES, "type"})  # fits that name the patient's drug or attribute


def _tier(fits: Sequence[str]) -> int:
    return 2 if any(f not in NAMED for f in fits) else 1
