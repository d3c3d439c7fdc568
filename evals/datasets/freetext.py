"""Free-text questions with a reference answer, for answer-quality metrics (faithfulness etc.).

``bioasq-ideal``: BioASQ questions (all types) with their first expert "ideal answer";
``bioasq-ideal-11b``: only those of Task 11B, the split no trained model of the project has seen
(``training/`` reads Task 7B-10B), so it is the one to evaluate the shipped chain on.
``pubmedqa-long``: the PubMedQA PQA-L test questions with the abstract's conclusion
(``LONG_ANSWER``) as the reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.errors import SourceError
from evals.datasets.bioasq import task_of
from evals.datasets.qrels import require


@dataclass(frozen=True)
class FreeTextItem:
    dataset: str
    qid: str
    question: str
    reference: str | None = None
    answerable: bool | None = None  # abstention sets: does the index hold the answer?


def load_bioasq_ideal(root: Path, task: str | None = None) -> list[FreeTextItem]:
    """Every question with its first ideal answer; with ``task`` (e.g. ``"Task11B"``) that task's only."""
    path = require(root / "questions.jsonl", "BioASQ questions")
    dataset = "bioasq-ideal" if task is None else f"bioasq-ideal-{task.removeprefix('Task').lower()}"
    items: list[FreeTextItem] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if task is not None and task_of(row) != task:
                    continue
                ideal = row.get("ideal_answer") or []
                reference = ideal[0] if isinstance(ideal, list) and ideal else (ideal or None)
                items.append(
                    FreeTextItem(
                        dataset,
                        str(row["id"]),
                        " ".join(str(row["body"]).split()),
                        str(reference) if reference else None,
                    )
                )
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise SourceError(f"{path}:{number}: expected a JSON object with 'id' and 'body'") from exc
    return items


def load_pubmedqa_long(root: Path) -> list[FreeTextItem]:
    path = require(root / "ori_pqal.json", "PubMedQA PQA-L")
    test = require(root / "test_ground_truth.json", "PubMedQA test ids")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        ids = set(json.loads(test.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise SourceError(f"cannot parse {path} or {test}: {exc}") from exc
    return [
        FreeTextItem("pubmedqa-long", pmid, str(row["QUESTION"]), str(row.get("LONG_ANSWER") or "") or None)
        for pmid, row in sorted(rows.items())
        if pmid in ids
    ]
