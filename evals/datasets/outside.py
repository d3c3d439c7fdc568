"""Questions about nothing in the default corpus: the negatives of the aboutness judgement.

Chit-chat, general knowledge, non-medical questions using a word that also names something
medical ("homonym": a computer virus, a swimming stroke) and clinical questions on topics no
guideline of the default corpus covers ("far"), written by a writer who saw only the
guidelines' titles. ``outside_questions_train.jsonl`` (no far questions) is fitted on by
``medcite train clinical``; ``outside_questions_dev.jsonl`` chooses settings (``medcite bench
closest-about``, the medical-question threshold); ``outside_questions_test.jsonl`` and
``outside_questions_test2.jsonl`` (a fresh part, written once test was spent) are only scored,
each hashed (:data:`TEST_SHA256`, :data:`TEST2_SHA256`) before anything ran on it; the parts'
trap words and diseases are disjoint (tests/unit/evals/test_outside.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.errors import SourceError

FOLDER = Path(__file__).parent
KINDS = ("chit_chat", "general", "homonym", "far")
TEST_SHA256 = "497fe9d44a4b5188da6349ccfd21d7f7725abe8793856a0f9d4377cea0cad1f1"
TEST2_SHA256 = "a6eaa28814fc254aba6fdf7806c77efc70ecdae3a6af78642fa59b51edf1ee1a"
Part = Literal["train", "dev", "test", "test-2"]


@dataclass(frozen=True)
class OutsideQuestion:
    qid: str
    kind: str  # one of KINDS
    question: str
    part: Part

    @property
    def answerable(self) -> bool:
        return False


def outside_file(part: Part) -> Path:
    return FOLDER / f"outside_questions_{part.replace('-', '')}.jsonl"


def load_outside(part: Part) -> list[OutsideQuestion]:
    """The questions of one part, in file order; a malformed row is named."""
    path = outside_file(part)
    if not path.is_file():
        raise SourceError(f"no outside-question file at {path}")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            item = OutsideQuestion(row["id"], row["kind"], row["question"], row["part"])
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceError(f"{path.name} line {n}: not an outside question ({exc})") from exc
        if item.kind not in KINDS or item.part != part:
            raise SourceError(f"{path.name} line {n}: kind {item.kind!r} / part {item.part!r} not allowed")
        out.append(item)
    return out
