"""Abbreviations a corpus defines itself ("Community Acquired Pneumonia (CAP)"), found with the
Schwartz-Hearst algorithm (Schwartz & Hearst, PSB 2003), so "CAP" in a question meets a passage
that says "community acquired pneumonia" and the other way round.

A short form is the text in parentheses after a long form: 2-10 characters, at most two words,
with a letter, starting with a letter or digit. Its long form is the shortest run of the words
before the parenthesis (at most ``min(len + 5, 2 * len)`` words) in which every letter and digit
of the short form can be found from right to left, the first one at the start of a word. The
published algorithm's other direction ("CAP (community acquired pneumonia)") is left out: in
guideline prose it mostly meets drug names with brands in parentheses.

The ``abbreviations`` package on the registry implements the same algorithm, but configures the
root logger at import (every CLI command would print its INFO lines); this is the algorithm as
published, in one small pure function, tested against its paper's examples.

Pure functions; the table of a corpus is computed once per loaded index (``Vocabulary``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

_PAREN = re.compile(r"\(([^()]{2,24})\)")
_WORDS = re.compile(r"\S+")


def _short_form_ok(short: str) -> bool:
    return (
        2 <= len(short) <= 10
        and len(short.split()) <= 2
        and any(ch.isalpha() for ch in short)
        and short[0].isalnum()
    )


def best_long_form(short: str, long: str) -> str | None:
    """The shortest suffix of ``long`` whose characters spell ``short`` right to left, with the
    first character of ``short`` at the start of a word; None when there is none."""
    s, k = len(short) - 1, len(long) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while k >= 0 and (long[k].lower() != c or (s == 0 and k > 0 and long[k - 1].isalnum())):
            k -= 1
        if k < 0:
            return None
        k -= 1
        s -= 1
    start = long.rfind(" ", 0, k + 1) + 1
    found = long[start:].strip()
    return found or None


def pairs_in(text: str) -> list[tuple[str, str]]:
    """The (short form, long form) pairs ``text`` defines, in order."""
    out: list[tuple[str, str]] = []
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if ";" in short or ", " in short:
            short = re.split(r";|, ", short)[0].strip()
        if not _short_form_ok(short):
            continue
        words = _WORDS.findall(text[: match.start()].rsplit("\n", 1)[-1])
        window = words[-min(len(short) + 5, 2 * len(short)) :]
        long = best_long_form(short, " ".join(window))
        if long is None or len(long) <= len(short) or short.lower() in long.lower().split():
            continue
        out.append((short, long.strip(" ,;:*_-")))
    return out


def corpus_pairs(texts: Iterable[str]) -> dict[str, str]:
    """Each short form's most frequent long form over ``texts``, keys case-folded."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for short, long in pairs_in(text):
            counts[short.casefold()][long.casefold()] += 1
    return {short: longs.most_common(1)[0][0] for short, longs in counts.items()}


def merged(*tables: Mapping[str, str]) -> dict[str, str]:
    """Tables joined; an earlier table's long form wins for a short form both define."""
    out: dict[str, str] = {}
    for table in tables:
        for short, long in table.items():
            out.setdefault(short, long)
    return out
