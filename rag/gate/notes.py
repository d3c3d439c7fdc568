"""What the support gate says about an answer: its labels, why sentences failed, what it moved.

The gate (``gate.py``) decides; these are the words it decides in, for the answer's notes and
each sentence's reasons, so a reader (and a test) sees exactly what was done and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from core.types import SentenceSupport

FLAG_UNSUPPORTED = "[UNSUPPORTED] "
FLAG_UNVERIFIED = "[UNVERIFIED] "
UNVERIFIED = "not verified: this pipeline has no support verifier (an index without embeddings)"
_OFF_TOPIC = re.compile(r"^cites \[\d+\] .*, which does not mention (.*)$")


def repair_notes(
    titles: Mapping[int, str],
    trimmed: Sequence[int],
    moved: Sequence[tuple[tuple[int, ...], int]],
    quoted: Sequence[int],
    sourced: Sequence[int],
    lists_cut: Sequence[int],
) -> list[str]:
    """One note per kind of repair the gate made (``trimmed``: markers of passages not about the
    question taken out; ``moved``: (old markers, the one now cited); ``quoted`` / ``sourced``:
    the passage each uncited sentence now cites; ``lists_cut``: items left out per list)."""
    notes: list[str] = []
    if trimmed:
        named = "; ".join(dict.fromkeys(f"[{k}] {titles[k]}" for k in trimmed))
        notes.append(
            f"{len(trimmed)} citations taken out of sentences that also cite a passage about the "
            f"question, as not about it ({named}); those sentences were verified without them"
        )
    if moved:
        moves = "; ".join(f"{''.join(f'[{k}]' for k in old)} -> [{new}]" for old, new in moved)
        notes.append(
            f"{len(moved)} sentences cited a passage that does not support them, or is not "
            f"about the question; each now cites the passage that does ({moves})"
        )
    if quoted:
        cited = ", ".join(f"[{k}]" for k in dict.fromkeys(quoted))
        notes.append(
            f"{len(quoted)} sentences without a marker quote a passage about the question word "
            f"for word; each now cites it ({cited})"
        )
    if sourced:
        cited = ", ".join(f"[{k}]" for k in dict.fromkeys(sourced))
        notes.append(
            f"{len(sourced)} sentences without a marker are cited to the passage about the "
            f"question that supports them best ({cited})"
        )
    if lists_cut:
        left_out = sum(lists_cut)
        rest = f", {left_out} items no such passage lists left out" if left_out else ""
        notes.append(
            f"{len(lists_cut)} list sentences were cited to the passages about the question "
            f"that list their items{rest}"
        )
    return notes


def reasons(failed: Sequence[SentenceSupport]) -> str:
    """The failures in a few words: "1 below the support threshold, 1 citing a passage that does
    not mention pembrolizumab"."""
    counts: dict[str, int] = {}
    for r in failed:
        keys: list[str] = []  # a sentence counts once per kind of failure
        for reason in r.reasons:
            if reason.startswith("support "):
                key = "below the support threshold"
            elif off_topic := _OFF_TOPIC.search(reason):
                key = f"citing a passage that does not mention {off_topic[1]}"
            elif reason == UNVERIFIED:
                key = "not verifiable (no support verifier)"
            else:
                key = reason
            if key not in keys:
                keys.append(key)
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {why}" for why, n in counts.items())


def summary(failed: Sequence[SentenceSupport], total: int) -> str:
    return f"{len(failed)} of {total} sentences failed the support gate ({reasons(failed)})"
