"""Whole-word term swaps in a question and its options, for the name-swap perturbations.

Terms match case-insensitively as whole words (a hyphen or letter on either side blocks a match,
so "metformin-induced" and "premetformin" are left alone), longest first, in one pass, so a
replacement is never swapped again. A replacement keeps its own spelling (brand names stay
capitalised, generic and disease names lower case) except at the start of a sentence, where a
capital letter is kept.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Iterable, Mapping

from evals.types import McqItem


def term_pattern(terms: Iterable[str]) -> re.Pattern[str]:
    ordered = sorted({t.lower() for t in terms if t}, key=lambda t: (-len(t), t))
    if not ordered:
        return re.compile(r"(?!x)x")  # matches nothing
    alternation = "|".join(re.escape(t) for t in ordered)
    return re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])", re.IGNORECASE)


def _sentence_start(text: str, at: int) -> bool:
    before = text[:at].rstrip()
    return not before or before[-1] in ".?!:\n"


def swap_terms(text: str, pattern: re.Pattern[str], mapping: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with every term of ``mapping`` (lower-case keys) replaced, and what was swapped."""
    changes: list[str] = []

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        new = mapping[found.lower()]
        if found[0].isupper() and _sentence_start(text, match.start()):
            new = new[0].upper() + new[1:]
        changes.append(f"{found} -> {new}")
        return new

    return pattern.sub(replace, text), changes


def swapped_item(
    item: McqItem, pattern: re.Pattern[str], mapping: Mapping[str, str], name: str
) -> McqItem | None:
    """The item with the terms swapped in its question and options alike, or None when neither
    mentions any. Options keep their letters, so ``option_map`` is the identity."""
    question, changes = swap_terms(item.question, pattern, mapping)
    options: dict[str, str] = {}
    for letter, text in item.options.items():
        options[letter], more = swap_terms(text, pattern, mapping)
        changes += more
    if not changes:
        return None
    meta = {**item.meta, "perturbation": name, "option_map": {k: k for k in item.options}, "changes": changes}
    return dataclasses.replace(
        item, dataset=f"{item.dataset}~{name}", question=question, options=options, meta=meta
    )


class TermSwap:
    """A name-swap perturbation: ``mapping`` (lower-case term -> replacement) applied by
    :func:`swapped_item` under the perturbation's ``name``."""

    def __init__(self, mapping: Mapping[str, str], name: str) -> None:
        self.mapping, self.name = mapping, name
        self.pattern = term_pattern(mapping)

    def __call__(self, item: McqItem, rng: random.Random) -> McqItem | None:
        return swapped_item(item, self.pattern, self.mapping, self.name)
