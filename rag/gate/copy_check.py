"""Does a sentence that copies one sentence of its passage keep that sentence's words?

One of the checks a support score is capped by (``rag.gate.verify``); pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from core.types import Chunk
from indexes.text import STOPWORDS
from rag.gate.support_signals import _NUMBER, quantities, singular
from rag.generate.sentences import marker_free, sentence_spans
from rag.reading.plain_text import plain

_COPY_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
NEAR_COPY = 0.6  # share of the claim's words a passage sentence must give, in order, for a near copy
NEAR_COPY_MIN = 6  # and at least this many words


def changed_words(claim: str, chunk: Chunk) -> tuple[str, ...]:
    """The words a near copy of one of the passage's sentences puts in place of the passage's own.

    A claim that repeats a sentence of its passage word for word except for a few words says
    something else about the same thing, and both the support model and the word overlap score
    it as supported: asked for the criteria of septic shock, the model answered "Septic shock is
    defined as life-threatening organ dysfunction caused by a dysregulated host response to
    infection", copied from "Sepsis is defined as ...", and the support model gave it 0.82.

    The claim's words are aligned with those of each sentence, list item or table row of the
    passage (``difflib``); the unit giving the longest aligned run of words is the one copied
    when it gives ``NEAR_COPY`` of the claim's words and at least ``NEAR_COPY_MIN``. Then each
    place where the claim has other content words than the passage ("septic shock" for
    "sepsis", "decreases" for "increases"), or adds or drops a negation, is a change, returned
    as ``"claim words <- passage words"``; so is a number put in place of the copied sentence's
    own (``_renumbered``). Changes of stop words and plurals alone are not. A claim that copies
    nothing has nothing to check.
    """
    words = [w.lower() for w in _COPY_WORD.findall(plain(marker_free(claim)))]
    if len(words) < NEAR_COPY_MIN:
        return ()
    best: tuple[int, float, SequenceMatcher[str] | None, list[str]] = (0, 0.0, None, [])
    for start, end in sentence_spans(chunk.text):
        unit = [w.lower() for w in _COPY_WORD.findall(plain(chunk.text[start:end]))]
        matcher = SequenceMatcher(None, words, unit, autojunk=False)
        same = sum(block.size for block in matcher.get_matching_blocks())
        # the most words in common; on a tie the closest sentence ("X is Y" copies "X is Y", not
        # an earlier "X is not Y" that holds the same words and one more)
        if (same, matcher.ratio()) > best[:2]:
            best = (same, matcher.ratio(), matcher, unit)
    same, _, copied, unit = best
    if copied is None or same < max(NEAR_COPY_MIN, NEAR_COPY * len(words)):
        return ()
    changes = []
    for op, i1, i2, j1, j2 in copied.get_opcodes():
        mine, theirs = words[i1:i2], unit[j1:j2]
        negated = _negations(mine) != _negations(theirs)
        if op != "equal" and (negated or _swapped(mine, theirs, unit) or _renumbered(mine, theirs)):
            changes.append(f"{' '.join(mine) or '(nothing)'} <- {' '.join(theirs) or '(nothing)'}")
    return tuple(changes)


def _renumbered(mine: Sequence[str], theirs: Sequence[str]) -> bool:
    """Whether the claim puts other numbers where the copied sentence has numbers: "prone
    positioning for > 16 hours per day" copied from "> 12 hours per day". The number check
    (``support_signals.numbers_agree``) passes it when the passage gives 16 hours elsewhere
    ("typical sessions 16 hours prone"), near the same words. A number added or dropped, or
    written in words on one side, is not a change here."""
    claimed = {number for number, _ in quantities(" ".join(mine))}
    given = {number for number, _ in quantities(" ".join(theirs))}
    return bool(claimed and given and claimed != given)


SWAP_MAX_WORDS = 4  # a swap replaces a few words; a longer span is a summary of the sentence
_NEGATORS = frozenset({"not", "no", "never", "none", "neither", "nor", "without", "cannot"})


def _swapped(mine: Sequence[str], theirs: Sequence[str], unit: Sequence[str]) -> bool:
    """Whether the claim's ``mine`` stands for other things than the passage's ``theirs``: both
    sides hold content words, a few each, and they differ, other than as a spelling of the same
    words (an abbreviation and its expansion, a typo, a word broken in two) or as words the
    copied sentence itself also uses ("saracatinib (AZD0530)" copied as "AZD0530")."""
    have, want = _content(theirs), _content(mine)
    if not have or not want or have == want:
        return False
    if len(mine) > SWAP_MAX_WORDS or len(theirs) > SWAP_MAX_WORDS:
        return False
    if want <= {singular(w) for w in unit}:
        return False
    return not _same_spelling(mine, theirs)


def _same_spelling(mine: Sequence[str], theirs: Sequence[str]) -> bool:
    if "".join(mine) == "".join(theirs):  # a word broken in two ("m ay")
        return True
    if len(mine) == len(theirs) and all(_one_typo(a, b) for a, b in zip(mine, theirs, strict=True)):
        return True  # "refracctory acture" for "refractory acute", "emphasise" for "emphasize"
    for short, long in ((mine, theirs), (theirs, mine)):  # "npc" <- "nuclear pore complex"
        if len(short) == 1 and _abbreviates(short[0], "".join(long)):
            return True
        if len(short) == 1 and len(short[0]) >= 4 and long[0].startswith(short[0]):  # "stereotact"
            return True
    return False


def _one_typo(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (five letters or more) differ by one letter added, dropped or
    changed. Not more: "hypokalemia" and "hyperkalemia", "regulated" and "dysregulated" are
    other words."""
    if a == b:
        return True
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] or a[i:] == b[i + 1 :] or a[i + 1 :] == b[i:]


def _abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` (2-6 characters) could abbreviate ``long``: same first letter, and its
    characters appear in ``long`` in order ("hattr" <- "hereditary transthyretin amyloidosis",
    "htt" <- "huntingtin"), as in Schwartz and Hearst's abbreviation rule."""
    if not 2 <= len(short) <= 6 or len(long) <= len(short) or short[0] != long[0]:
        return False
    rest = iter(long[1:])
    return all(ch in rest for ch in short[1:])


def _content(words: Sequence[str]) -> frozenset[str]:
    """Content words, plurals aside; stop words, numbers and one-letter words dropped."""
    return frozenset(
        singular(w) for w in words if w not in STOPWORDS and len(w) > 1 and not _NUMBER.fullmatch(w)
    )


def _negations(words: Sequence[str]) -> int:
    return sum(1 for w in words if w in _NEGATORS or w.endswith("n't"))
