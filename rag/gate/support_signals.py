"""The cheap signals behind a support score: what a claim is compared with, and how.

Pure functions over text and chunks; ``rag.gate.verify`` combines them (see its docstring
for the formula and the calibration).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from core.types import Chunk
from indexes.text import STOPWORDS, indexed_text, tokenize
from rag.generate.sentences import marker_free, sentence_spans
from rag.reading.plain_text import plain

_NUMBER = re.compile(r"(?<![^\W\d_])(?<![\d.])(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d+)?)")
_NUMBER_WORDS = {
    **{
        w: str(i)
        for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
    },
    **{"once": "1", "twice": "2", "half": "0.5", "dozen": "12", "hundred": "100", "thousand": "1000"},
}
_WORD = re.compile(r"[a-z]+")
_UNIT = re.compile(
    r"[ \t]?(%|percent|mg|mcg|µg|μg|ug|g|kg|mmol|umol|µmol|μmol|mol|meq|mosm|ml|l|dl|mmhg|units?|iu"
    r"|h|hrs?|hours?|d|days?|min|mins|minutes?|wks?|weeks?|months?|y|yrs?|years?)(?![^\W\d_])",
    re.IGNORECASE,
)
_UNIT_ALIASES: dict[str | None, str] = {
    **dict.fromkeys(["percent"], "%"),
    **dict.fromkeys(["µg", "μg", "ug"], "mcg"),
    **dict.fromkeys(["µmol", "μmol"], "umol"),
    **dict.fromkeys(["unit", "units", "iu"], "unit"),
    **dict.fromkeys(["hr", "hrs", "hour", "hours"], "h"),
    **dict.fromkeys(["day", "days"], "d"),
    **dict.fromkeys(["mins", "minute", "minutes"], "min"),
    **dict.fromkeys(["wk", "wks", "week", "weeks"], "wk"),
    **dict.fromkeys(["month", "months"], "mo"),
    **dict.fromkeys(["yr", "yrs", "year", "years"], "y"),
}


def passage_units(chunk: Chunk) -> list[str]:
    """What a claim is compared with: each sentence, list item or table row of the passage,
    prefixed by the passage's last two headings, and the whole passage.

    The headings give a bare list item its subject ("IV Alteplase > Dosing Protocol: Dose: 0.9
    mg/kg"). On the calibration pairs, items without headings let a claim that merely names
    "Hemoptysis" match the item "Hemoptysis: 1.0 point" at cosine 0.62 and left a paraphrase of
    the alteplase dose at 0.48; with them the lowest supported pair scored 0.56.
    """
    heading = " > ".join(plain(part) for part in chunk.section[-2:])
    prefix = f"{heading}: " if heading else ""
    units = [prefix + plain(chunk.text[s:e]) for s, e in sentence_spans(chunk.text)]
    return list(dict.fromkeys(u for u in [*units, plain(chunk.text)] if u.strip()))


def lexical_coverage(claim: str, chunk: Chunk) -> float:
    """Fraction of the claim's non-numeric content tokens found in the passage, title or section."""
    wanted = {singular(t) for t in tokenize(claim) if not _NUMBER.fullmatch(t)}  # numbers: numbers_agree
    if not wanted:
        return 0.0
    have = {singular(t) for t in tokenize(indexed_text(chunk.title, chunk.section, chunk.text))}
    return len(wanted & have) / len(wanted)


def quantities(text: str) -> set[tuple[str, str | None]]:
    """Numbers written in digits with the unit right after them, if any: "2.50 mg" -> ("2.5", "mg")."""
    out: set[tuple[str, str | None]] = set()
    for match in _NUMBER.finditer(text):
        unit = _UNIT.match(text, match.end())
        name = unit.group(1).lower() if unit else None
        out.add((_canonical(match.group(0).replace(",", "")), _UNIT_ALIASES.get(name, name)))
    return out


def numbers_agree(claim: str, passage: str) -> bool:
    """Whether every number of the claim occurs in the passage, with the same unit where both
    give one ("0.5 mg/dL" is not supported by a passage whose only 0.5 is "0.5 mL/kg/h"), and
    in the same company (:func:`numbers_in_context`)."""
    return _numbers_present(claim, passage) and numbers_in_context(claim, passage)


def _numbers_present(claim: str, passage: str) -> bool:
    have = quantities(passage)
    have |= {(_NUMBER_WORDS[w], None) for w in _WORD.findall(passage.lower()) if w in _NUMBER_WORDS}
    units_of: dict[str, set[str | None]] = {}
    for number, unit in have:
        units_of.setdefault(number, set()).add(unit)
    for number, unit in quantities(claim):
        seen = units_of.get(number)
        if seen is None or (unit is not None and unit not in seen and None not in seen):
            return False
    return True


# Words and numbers for the context check: a hyphenated word with letters is one word (AND-1,
# IL-2RA, 10058-F4), a range of digits is its numbers (80-99).
_CONTEXT_TOKEN = re.compile(r"\d+(?:\.\d+)?(?![\w-])(?<!-)|\w+(?:-\w+)*|%")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_RANGE = re.compile(r"[\d.]+(?:-[\d.]+)+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")


def _context_tokens(text: str) -> list[tuple[str, str]]:
    """``(kind, token)`` for each number (``n``), unit (``u``) and content word (``w``), in
    order; stop words and other one-letter words dropped, units and plurals normalised."""
    out: list[tuple[str, str]] = []
    for match in _CONTEXT_TOKEN.finditer(_THOUSANDS.sub("", text.lower())):
        token = match.group(0)
        if _DIGITS.fullmatch(token):
            out.append(("n", _canonical(token)))
        elif token in _NUMBER_WORDS:
            out.append(("n", _NUMBER_WORDS[token]))
        elif _RANGE.fullmatch(token):
            out.extend(("n", _canonical(n)) for n in token.split("-") if n.strip("."))
        elif _UNIT.fullmatch(token):
            out.append(("u", _UNIT_ALIASES.get(token) or token))
        elif token not in STOPWORDS and len(token) > 1:
            out.append(("w", singular(token)))
    return out


def _neighbours(tokens: list[tuple[str, str]], i: int, reach: int) -> set[str]:
    """The words within ``reach`` tokens of number ``i`` on either side, up to the next number,
    and the unit right after it: a unit belongs to the number it follows."""
    out = {tokens[i + 1][1]} if i + 1 < len(tokens) and tokens[i + 1][0] == "u" else set()
    for step in (-1, 1):
        for j in range(i + step, i + step * (reach + 1), step):
            if not 0 <= j < len(tokens) or tokens[j][0] == "n":
                break
            if tokens[j][0] == "w":
                out.add(tokens[j][1])
    return out


CLAIM_REACH, PASSAGE_REACH = 2, 2  # content tokens either side of a number (numbers_in_context)


def numbers_in_context(claim: str, passage: str) -> bool:
    """Whether each number of the claim occurs in the passage near one of the content words near
    it in the claim (within two content tokens either side, stop words skipped, not past another
    number): "aspirin, 200 mg" needs a 200 near "aspirin" or "mg" in the passage, not any 200.

    A number changed to one the passage also has for something else ("stage 2" where the passage
    has "stage 1 and stage 2", a dose doubled to another row's dose) passes a presence check; on
    the BioASQ dev support pairs the presence check caught 80 of 86 changed numbers and this one
    82, while 4 more of the 87 faithful claims with numbers failed it (paraphrased counts and
    years). Reach (claim, passage) = (1, 1) caught 84 and failed 6; (1, 2) caught 83 and failed
    4; (2, 3) caught 81 and failed 3. (2, 2) is the one that keeps the guideline paraphrase "In
    women, OAC is recommended when the CHA2DS2-VASc score is 3 or higher" of "CHA2DS2-VASc >= 3:
    OAC is recommended" (tests/e2e/test_verify_real_embedder.py), for one changed number on dev.
    A number with no content word near it in the claim is not checked here.
    """
    have: dict[str, set[str]] = {}
    tokens = _context_tokens(passage)
    for i, (kind, token) in enumerate(tokens):
        if kind == "n":
            have.setdefault(token, set()).update(_neighbours(tokens, i, PASSAGE_REACH))
    tokens = _context_tokens(claim)
    for i, (kind, token) in enumerate(tokens):
        wanted = _neighbours(tokens, i, CLAIM_REACH) if kind == "n" else set()
        if wanted and not wanted & have.get(token, set()):
            return False
    return True


_NAME_WORD = re.compile(r"[^\W_][\w-]*")
_SPACE_OR_HYPHEN = re.compile(r"[\s-]")


def _name_key(text: str) -> str:
    return _SPACE_OR_HYPHEN.sub("", unicodedata.normalize("NFKC", text).casefold())


def names_agree(claim: str, passage: str) -> bool:
    """Whether every name of the claim occurs in the passage (case, hyphens, spaces and Unicode
    forms aside; a plural "s" may be missing).

    A name is a word after the first with a capital letter (Anakinra, BRD4, IL-1β) or with
    letters and digits (CHA2DS2-VASc, Inn1), other than a capitalised abbreviation of at most
    three letters (DNA, BID, IV: often written out in the passage). A claim naming a drug, gene
    or disease its passage never mentions is the dangerous kind of wrong ("a drug taken from a
    guideline for a different disorder"). On the BioASQ dev support pairs the rule held against
    24 of the 41 entity swaps the support model accepted, and 2 changed numbers, 1 negation and 2
    flipped directions, and failed 7 of the 311 faithful claims it accepted (names written out
    or spelt otherwise in the passage: "American College of Rheumatology", "NSCLC").
    Lower-case names ("pembrolizumab") are not seen: that is the aboutness check's and the
    model's part.
    """
    have = _name_key(passage)
    for n, match in enumerate(_NAME_WORD.finditer(plain(marker_free(claim)))):
        word = match.group(0).strip("-")
        if n == 0 or len(word) < 2 or (word.isupper() and len(word) <= 3):
            continue
        mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        named = mixed or any(c.isupper() for c in word)
        if named and _name_key(word) not in have and _name_key(word.removesuffix("s")) not in have:
            return False
    return True


def _canonical(number: str) -> str:
    whole, _, fraction = number.partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


# A list answer's lead-in: "Symptoms of X include", "X is characterized by", ... (never a negation).
_LEAD_IN = re.compile(
    r"^(?:the\s+)?(?:(?:main|common|typical|frequent|clinical)\s+)?"
    r"(?:signs\s+and\s+symptoms|symptoms\s+and\s+signs|symptoms|signs|features|phenotypes|manifestations)"
    r"(?:\s+of\s+[^:;,]+?)?\s+(?:include|includes|are|may\s+include|can\s+include)\s*:?\s+"
    r"|^[^:;,]+?\s+(?:is|are)\s+characteri[sz]ed\s+by\s+"
    r"|^[^:;,]+?\s+(?:signs\s+and\s+)?symptoms\s+(?:may\s+|can\s+)?include\s*:?\s+"
    r"|^[^:;,]+?\s+(?:can|may)\s+cause\s+(?:symptoms\s+such\s+as\s+|symptoms\s+including\s+)?",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|cannot|no|never|none|neither|nor|without|absent|absence|lack|lacks)\b|n't", re.IGNORECASE
)
_ITEM_SEPARATOR = re.compile(r"\s*[;,]\s*(?:and\s+|or\s+)?|\s+and\s+(?=[^,;]*$)", re.IGNORECASE)


_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+")


def _item_key(text: str) -> str:
    """Case, list marks, Markdown and a plural "s" aside ("Seizures" is the entry "Seizure")."""
    words = _LIST_MARK.sub("", plain(text)).casefold().strip(" .:;,").split()
    return " ".join(singular(w) for w in words)


def singular(word: str) -> str:
    """``word`` without a plural "s" ("infections" meets "infection", "sepsis" and "virus" stay):
    the index tokenizer does not stem, and claims and passages are compared after this."""
    plural = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "is", "us"))
    return word[:-1] if plural else word


def _entries(chunk: Chunk) -> set[str]:
    """The passage's sentences and lines, list marks and Markdown removed, for exact comparison."""
    entries = {_item_key(chunk.text[s:e]) for s, e in sentence_spans(chunk.text)}
    return entries | {_item_key(line) for line in chunk.text.splitlines()}


_EMPTY_ANSWERS = frozenset({"none", "unknown", "other", "others", "yes", "no", "n/a"})


def quoted_from_passage(claim: str, chunk: Chunk) -> bool:
    """Whether ``claim`` is, word for word, one whole sentence or line of the passage.

    A quotation says exactly what its source says, numbers included, so it is supported
    whatever a model makes of it (the support model scored the qSOFA line "Systolic Blood
    Pressure: <= 100 mmHg" 0.36 against the guideline that holds it, and "Pruritus." 0.27
    against the phenotype list whose line it is). Whole entries only: a quoted fragment could
    drop a "not" or a condition that the entry states; a one-word entry counts when it is a
    content word of four letters or more (not "Yes." or "None.").
    """
    key = _item_key(marker_free(claim))
    one_word = len(key.split()) == 1 and (len(key) < 4 or key in STOPWORDS or key in _EMPTY_ANSWERS)
    return bool(key) and not one_word and key in _entries(chunk)


def listed_in_passage(claim: str, chunk: Chunk) -> bool:
    """Whether ``claim`` is a list whose every item is a whole entry of the passage's own list.

    A list answer ("Gait disturbance; Chorea", "Symptoms of X include A, B and C") often spans
    more of a phenotype list than one window of the support model holds, so the model cannot
    see all of it at once; when each item is, word for word, one line or sentence of the cited
    passage, the passage states every item. Deliberately narrow: at least two items, a lead-in
    without a negation (an item may hold one: "Absent fingernail" is an entry
    as written), and items match whole entries (adjacent items may join, for entries with a
    comma or an "and" such as "Intellectual disability, severe" and "Nausea and vomiting"),
    never substrings. An item with a number ("Clinodactyly of the 5th finger") must be a whole
    entry on its own, never joined with its neighbours, so no number moves from one row to
    another (a dose split over two items is not accepted).
    """
    return listed_in_passages(claim, [chunk])


def listed_in_passages(claim: str, chunks: Sequence[Chunk]) -> bool:
    """:func:`listed_in_passage` over the passages a sentence cites together: every item is a
    whole entry of one of them, and each of them gives at least one item.

    A sentence citing [1][2] for "A, B, C and D" where [1] lists A and B and [2] lists C and D
    (one phenotype list cut into two chunks) is supported by the two together and by neither
    alone; a cited passage that gives no item is not what the sentence rests on, so the rule
    does not apply.
    """
    lead_in, items = _split_list(claim)
    if not chunks or _NEGATION.search(lead_in):
        return False  # a negation inside an item is fine: the item must be an entry as written
    if len(items) < 2:
        return False
    entries = [_entries(chunk) for chunk in chunks]
    used: set[int] = set()
    at = 0
    while at < len(items):  # greedy: the longest run of items that is one entry of a passage
        for end in range(len(items), at, -1):
            if end - at > 1 and any(_NUMBER.search(i) for i in items[at:end]):
                continue  # an item with a number is one whole entry on its own, never joined
            keys = {_item_key(", ".join(items[at:end])), _item_key(" and ".join(items[at:end]))}
            holders = [n for n, have in enumerate(entries) if keys & have]
            if holders:
                used.update(holders)
                at = end
                break
        else:
            return False
    return len(used) == len(chunks)


Listing = tuple[str, list[tuple[str, tuple[int, ...]]]]  # lead-in, (item, passages holding it)


def listed_entries(claim: str, chunks: Sequence[Chunk]) -> Listing | None:
    """A list sentence's lead-in and each item with the passages (indices into ``chunks``) that
    hold it as a whole entry (none: ``()``); ``None`` when the sentence is not a list this may
    apply to: no plain lead-in ("The symptoms of X include"), a negation in it, or fewer than
    two items. An item "A and B" that is no entry counts as its two parts.
    """
    lead_in, items = _split_list(claim)
    if not lead_in.strip() or _NEGATION.search(lead_in):
        return None
    entries = [_entries(chunk) for chunk in chunks]
    out: list[tuple[str, tuple[int, ...]]] = []
    for item in items:
        parts = [item]
        if not any(_item_key(item) in have for have in entries):
            parts = [p for p in re.split(r"\s+and\s+", item) if _item_key(p)]
        for part in parts:
            text = part.strip(" .:;,")
            out.append((text, tuple(n for n, have in enumerate(entries) if _item_key(text) in have)))
    return (lead_in, out) if len(out) >= 2 else None


def list_items(sentence: str) -> list[str]:
    """The items a sentence lists after its lead-in, markers and Markdown removed ("Symptoms of
    X include A, B and C [1]." -> ["A", "B", "C"]); a sentence that lists nothing is one item."""
    return [i.strip(" .:;,") for i in _split_list(sentence)[1]]


def _split_list(sentence: str) -> tuple[str, list[str]]:
    """``(lead-in, items)`` of a sentence, markers and Markdown removed."""
    text = plain(marker_free(sentence))
    body = _LEAD_IN.sub("", text, count=1)
    return text[: len(text) - len(body)], [i for i in _ITEM_SEPARATOR.split(body) if _item_key(i)]
