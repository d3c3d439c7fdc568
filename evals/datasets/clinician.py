"""Clinician questions about the default corpus (``clinician-default``): the answer-rate benchmark.

Questions as clinicians ask them about the guideline summaries and HPO disease references of
the default index, written by reading the summaries, never from the chain's output (how:
``docs/clinician_benchmark.md``). Each row is ``answerable`` (the answering passage's
``chunk_id``, its ``guideline`` or HPO document, the verbatim ``quote`` and ``key_fact``, a
regular expression a correct answer must match), ``near`` (unanswerable though its drug or
disease is in the corpus; ``checked``: the words searched for) or ``far`` (off the corpus).

Files, each frozen (hashed, a test fails when it changes) before anything was tuned on it:
``clinician_questions.jsonl`` (issue 31, :data:`FROZEN_SHA256`; parts split by source: a
guideline folder or HPO disease is wholly ``dev`` or ``test``, :func:`part_of`; tune on ``dev``),
``clinician_test2.jsonl`` (issue 46, :data:`TEST2_SHA256`) and ``clinician_test3.jsonl`` (issue
55, :data:`TEST3_SHA256`: frozen before the line reader was trained), fresh test parts over the
test folders whose answerable questions mostly state a patient condition selecting one of
several sibling lines (``siblings`` verbatim; ``sibling_fact`` matches them and not the answer,
so a shown sibling makes an answer wrong; test-3 adds ``also_lines``, lines that answer as well).
The training set (``clinician_train/``, one file per dev-part folder, :data:`TRAIN_SHA256`;
:func:`load_training`) was written the same way for the line reader and is never scored as a
benchmark. How an answer is scored is :func:`outcome`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.errors import SourceError
from indexes.files import sha256_file

NAME = "clinician-default"
INDEX = "default"
QUESTIONS_FILE = Path(__file__).with_name("clinician_questions.jsonl")
# taken before any tuning; tests/unit/evals/test_clinician.py checks it
FROZEN_SHA256 = "2a26e734f1d250159ee65bf5b81be4fd1dd141c572596b8c95956b8bf3dd440e"
TEST2_FILE = Path(__file__).with_name("clinician_test2.jsonl")
# frozen before the first candidate of issue 46 (tests/unit/evals/test_clinician.py)
TEST2_SHA256 = "c4271e6727ec102e17a041dd234968d44fe12ba31a3eaf8084b01a5cf1f2a7e0"
TEST3_FILE = Path(__file__).with_name("clinician_test3.jsonl")
# frozen before the line reader's first training commit (tests/unit/evals/test_clinician.py)
TEST3_SHA256 = "3b55472a535bf85f95ccc6b769ddc103aed2912106a59137d67a744bc55d8f97"
TRAIN_DIR = Path(__file__).with_name("clinician_train")
# the training set's files, hashed in name order (:func:`training_sha256`)
TRAIN_SHA256 = "783b2f9b91c4a9997565162e033db8c1bd013e81993847dcac51b89499396d20"
KINDS = ("answerable", "near", "far")
Part = Literal["dev", "test"]
Outcome = Literal["correct", "other_source", "wrong", "abstained", "degraded", "answered"]


@dataclass(frozen=True)
class ClinicianItem:
    qid: str
    kind: str  # answerable | near | far
    question: str
    group: str  # what the split is by: the guideline folder, "hpo:<disease>" or "far:<id>"
    guideline: str | None = None
    chunk_id: str | None = None
    key_fact: str | None = None
    quote: str | None = None
    sources: tuple[str, ...] = ()  # document-id prefixes a citation may point at to count
    wording: tuple[str, ...] = field(default=())
    siblings: tuple[str, ...] = ()  # test-2: lines of the same guideline for another patient
    sibling_fact: str | None = None  # matches every sibling line and not the answer
    condition: str | None = None  # test-2: the patient condition the question states
    file: str | None = None  # the guideline's section file holding the quote
    also_lines: tuple[str, ...] = ()  # test-3, training: other lines that answer as well

    @property
    def answerable(self) -> bool:
        return self.kind == "answerable"

    @property
    def part(self) -> Part:
        return part_of(self.group)


def part_of(group: str) -> Part:
    """``dev`` or ``test`` by the sha256 of the group's name (guideline folder, HPO disease, far
    question id): a source is wholly on one side, and the rule needs no list to keep in step."""
    return "dev" if int(hashlib.sha256(group.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "test"


def file_sha256(path: Path = QUESTIONS_FILE) -> str:
    return sha256_file(path)


def load_clinician(path: Path = QUESTIONS_FILE, part: Part | None = None) -> list[ClinicianItem]:
    """The questions of ``path`` (all, or one ``part``), in file order."""
    if not path.is_file():
        raise SourceError(f"no clinician question file at {path}")
    items: list[ClinicianItem] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = _item(json.loads(line))
        except (json.JSONDecodeError, KeyError, ValueError) as exc:
            raise SourceError(f"{path}:{number}: not a clinician question ({exc})") from exc
        if item.qid in seen:
            raise SourceError(f"{path}:{number}: duplicate id {item.qid!r}")
        seen.add(item.qid)
        if part is None or item.part == part:
            items.append(item)
    return items


def training_sha256(folder: Path = TRAIN_DIR) -> str:
    """One hash over the training set's files: each name and its sha256, in name order."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.jsonl")):
        digest.update(f"{path.name} {sha256_file(path)}\n".encode())
    return digest.hexdigest()


def load_training(folder: Path = TRAIN_DIR) -> list[ClinicianItem]:
    """The training set's questions (every file of ``folder``, in name order)."""
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise SourceError(f"no clinician training files in {folder}")
    return [item for path in files for item in load_clinician(path)]


def _item(row: dict[str, Any]) -> ClinicianItem:
    kind = row["kind"]
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is none of {KINDS}")
    guideline = row.get("guideline")
    if kind == "far":
        group = f"far:{row['id']}"
    elif row.get("source") == "hpo":
        group = f"hpo:{row['document']}"
    else:
        group = str(guideline)
    sources: tuple[str, ...] = ()
    if kind == "answerable":
        if not row.get("chunk_id") or not row.get("key_fact"):
            raise ValueError("an answerable question needs chunk_id and key_fact")
        re.compile(row["key_fact"])
        if row.get("source") == "hpo":
            sources = (_document_of(row["chunk_id"]),)
        else:  # the guideline, whichever of its section files: "open-medicine:<folder>"
            sources = tuple(f"open-medicine:{g}" for g in (guideline, *row.get("also_in", ())))
    return ClinicianItem(
        qid=row["id"],
        kind=kind,
        question=row["question"],
        group=group,
        guideline=guideline,
        chunk_id=row.get("chunk_id"),
        key_fact=row.get("key_fact"),
        quote=row.get("quote"),
        sources=sources,
        wording=tuple(row.get("wording", ())),
        siblings=tuple(row.get("siblings", ())),
        sibling_fact=row.get("sibling_fact"),
        condition=(row.get("condition") or {}).get("text"),
        file=row.get("file"),
        also_lines=tuple(row.get("also_lines", ())),
    )


def _document_of(chunk_id: str) -> str:
    """The document a chunk id belongs to (``doc_id#n`` -> ``doc_id``)."""
    return chunk_id.rsplit("#", 1)[0]


_DASHES = re.compile(r"[\u2010-\u2015\u2212]")


def normalise_answer(text: str) -> str:
    """Dashes as "-", whitespace collapsed, Markdown emphasis dropped: what ``key_fact`` reads."""
    return " ".join(_DASHES.sub("-", text).replace("**", "").split())


def key_fact_given(item: ClinicianItem, text: str) -> bool:
    """Whether ``text`` states the item's key fact (its ``key_fact`` pattern, case-insensitive)."""
    return bool(item.key_fact and re.search(item.key_fact, normalise_answer(text), re.IGNORECASE))


def sibling_given(item: ClinicianItem, text: str) -> bool:
    """Whether ``text`` states a sibling line's fact (a line for another band or population)."""
    return bool(item.sibling_fact and re.search(item.sibling_fact, normalise_answer(text), re.IGNORECASE))


def cites_source(item: ClinicianItem, cited_documents: Iterable[str]) -> bool:
    """Whether one of ``cited_documents`` is the answering passage's document (or one that also
    answers, ``also_in``): a guideline summary's section file, or an HPO disease reference."""
    return any(doc == src or doc.startswith(src + "/") for doc in cited_documents for src in item.sources)


def outcome(item: ClinicianItem, mode: str, text: str, cited_documents: Sequence[str]) -> Outcome:
    """How one answer counts.

    Answerable: ``correct`` (mode rag, the key fact stated, a citation to the answering
    passage's document), ``other_source`` (the key fact, but cited elsewhere only), ``wrong``
    (mode rag without the key fact: a wrong or missing dose, number or drug; or with a sibling
    line's fact beside it), ``abstained`` or
    ``degraded``. Unanswerable: ``abstained``, ``degraded`` (evidence listed, no answer) or
    ``answered`` (any rag answer: the sources do not hold it).
    """
    if mode == "abstained":
        return "abstained"
    if mode == "degraded":
        return "degraded"
    if not item.answerable:
        return "answered"
    if not key_fact_given(item, text) or sibling_given(item, text):
        return "wrong"
    return "correct" if cites_source(item, cited_documents) else "other_source"
