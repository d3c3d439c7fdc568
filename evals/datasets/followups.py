"""Follow-ups in a conversation (issue 60): clinicians' two- and three-turn conversations about
the default corpus's guidelines, the last turn only making sense with the earlier ones.

Written by writers who saw only the open-medicine summaries of their part's folders (never the
chain, its code or its answers), frozen (hashed, a test fails when a file changes) before any
change was measured on them. ``clinician_followups.jsonl`` is the test part (the 22 test-part
guideline folders of ``clinician.part_of``), ``clinician_followups_dev.jsonl`` the dev part (the
21 others) for tuning. ``clinician_followups_test2.jsonl`` is a fresh test part over the same 22
folders (the first is spent once a second reading is run on it) and
``clinician_followups_train.jsonl`` conversations over dev folders for fitting models, never
scored. Each row: the user ``turns``; ``follow_up`` (``condition_change``: the
patient changes so the answer is a sibling line, ``next_step``, ``other_property``, or
``unanswerable``: the first turn's subject is in the corpus, the asked aspect is not); the
``standalone`` rewrite of the last turn and the facts it ``carried``; for answerable rows the
answering ``quote`` verbatim, its ``key_fact`` pattern, the ``siblings`` and ``sibling_fact``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from core.errors import SourceError
from evals.datasets.clinician import ClinicianItem

FollowupPart = Literal["dev", "test", "test-2", "train"]
FILES: dict[FollowupPart, Path] = {
    "test": Path(__file__).with_name("clinician_followups.jsonl"),
    "dev": Path(__file__).with_name("clinician_followups_dev.jsonl"),
    "test-2": Path(__file__).with_name("clinician_followups_test2.jsonl"),
    "train": Path(__file__).with_name("clinician_followups_train.jsonl"),
}
# taken before anything was measured on them (tests/unit/evals/test_followups.py)
SHA256: dict[FollowupPart, str] = {
    "test": "0c10337f2217b7673a8d05658ae38881a0abf546c6bd3d6b3ab54f467c5c9dd0",
    "dev": "b87991b4b1aaa6a2b87d5b053b50a0de156357ee164af44cf9de70fd3560b48e",
    "test-2": "eaba5579609390987096327e29b5afedb9db8f3abe375b22a278610457f1421b",
    "train": "67757893011b67a7fd405e05ba2efdeb9ba451b7d494c09706a433e0c1483cdc",
}
FOLLOW_UPS = ("condition_change", "next_step", "other_property", "unanswerable")


@dataclass(frozen=True)
class Conversation:
    cid: str
    kind: str  # answerable | unanswerable
    follow_up: str  # one of FOLLOW_UPS
    guideline: str
    file: str
    turns: tuple[str, ...]  # the user's turns; the last is the one scored
    standalone: str
    carried: tuple[str, ...]
    quote: str | None = None
    key_fact: str | None = None
    siblings: tuple[str, ...] = ()
    sibling_fact: str | None = None

    @property
    def answerable(self) -> bool:
        return self.kind == "answerable"

    @property
    def text(self) -> str:
        """The turns as the ``carry`` reading searches and judges them, oldest first."""
        return "\n".join(self.turns)

    def as_item(self, question: str | None = None) -> ClinicianItem:
        """The last turn (or ``question``) as a clinician question, scored the same way
        (unanswerable follow-ups are ``near``: their subject is in the corpus, the asked aspect
        is not)."""
        return ClinicianItem(
            qid=self.cid,
            kind="answerable" if self.answerable else "near",
            question=self.turns[-1] if question is None else question,
            group=self.guideline,
            guideline=self.guideline,
            key_fact=self.key_fact,
            quote=self.quote,
            sources=(f"open-medicine:{self.guideline}",),
            siblings=self.siblings,
            sibling_fact=self.sibling_fact,
        )


def _conversation(row: dict[str, Any]) -> Conversation:
    return Conversation(
        cid=str(row["id"]),
        kind=str(row["kind"]),
        follow_up=str(row["follow_up"]),
        guideline=str(row["guideline"]),
        file=str(row["file"]),
        turns=tuple(str(t) for t in row["turns"]),
        standalone=str(row["standalone"]),
        carried=tuple(str(c) for c in row.get("carried", ())),
        quote=row.get("quote"),
        key_fact=row.get("key_fact"),
        siblings=tuple(row.get("siblings") or ()),
        sibling_fact=row.get("sibling_fact"),
    )


def load_followups(part: FollowupPart) -> list[Conversation]:
    """The conversations of ``part``; a bad row is an error naming its file, line and field."""
    path = FILES[part]
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            conversation = _conversation(json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise SourceError(f"{path}:{n}: not a conversation row ({exc!r})") from exc
        if conversation.follow_up not in FOLLOW_UPS or len(conversation.turns) < 2:
            raise SourceError(f"{path}:{n}: follow_up must be one of {FOLLOW_UPS} with two turns or more")
        if conversation.answerable and not (conversation.quote and conversation.key_fact):
            raise SourceError(f"{path}:{n}: an answerable row needs its quote and key_fact")
        out.append(conversation)
    return out
