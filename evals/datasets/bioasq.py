"""BioASQ Task B 2019-2023 (via MIRAGE): questions judged against their gold snippets.

``questions.jsonl`` holds ``{id, type, body, ...}``; ``qrels_snippets.tsv`` pairs question ids
with snippet ids (``S000001``), which :func:`corpora.sources.bioasq.qrels_doc_id` turns into
the doc ids of the ``bioasq-snippets`` corpus, so runs over that index score without mapping.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.errors import ConfigError, SourceError
from corpora.sources.base import iter_jsonl
from corpora.sources.bioasq import qrels_doc_id
from evals.datasets.qrels import build_set, json_rows, read_qrels_tsv
from evals.types import RetrievalSet

QUESTION_TYPES = ("factoid", "list", "summary", "yesno")


def read_questions(path: Path, types: Sequence[str] | None = None) -> tuple[dict[str, str], Counter[str]]:
    """``{id: body}`` of the questions of the chosen types, and how many of each type were kept."""
    queries: dict[str, str] = {}
    kept: Counter[str] = Counter()
    rows = json_rows(path, "BioASQ questions.jsonl", _question_fields, "'id', 'type' and 'body'")
    for _, (qid, body, qtype) in rows:
        if types is None or qtype in types:
            queries[qid] = " ".join(body.split())
            kept[qtype] += 1
    return queries, kept


def _question_fields(row: Any) -> tuple[str, str, str]:
    return str(row["id"]), str(row["body"]), str(row.get("type", ""))


def load_bioasq_snippets(root: Path, types: Sequence[str] | None = None) -> RetrievalSet:
    """The snippet-retrieval set; ``types`` picks question types (all four by default)."""
    if isinstance(types, str):
        types = (types,)
    unknown = sorted(set(types or ()) - set(QUESTION_TYPES))
    if unknown:
        raise ConfigError(
            f"unknown BioASQ question type {unknown[0]!r}; choose from: {', '.join(QUESTION_TYPES)}"
        )
    root = Path(root)
    queries, kept = read_questions(root / "questions.jsonl", types)
    judgements = read_qrels_tsv(root / "qrels_snippets.tsv", doc_id=qrels_doc_id)
    return build_set(
        "bioasq-snippets",
        queries,
        [j for j in judgements if j[0] in queries],
        counts={f"type_{t}": n for t, n in sorted(kept.items())},
        notes=(
            "relevant documents are gold snippets (doc ids bioasq:S......) of the bioasq-snippets corpus",
        ),
    )


_NOT_WORD = re.compile(r"[^\w\s]")


def normalise(text: str) -> str:
    """Lower case, punctuation as spaces, single spaces: ``"Is X-1 safe?" -> "is x 1 safe"``."""
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def task_of(row: Mapping[str, object]) -> str:
    """The BioASQ task of a ``questions.jsonl`` row (``"Task11B"``), from its source file's name."""
    return str(row.get("source_file", "")).split("GoldenEnriched")[0]


def bioasq_rows(source_data: Path) -> list[dict[str, object]]:
    """The rows of ``bioasq_from_mirage/questions.jsonl``, each with its task (``"Task7B"``)."""
    path = source_data / "bioasq_from_mirage" / "questions.jsonl"
    if not path.is_file():
        raise SourceError(
            f"BioASQ questions not found at {path}; point MEDCITE_SOURCE_DATA at the shared data"
        )
    rows: list[dict[str, object]] = []
    for _, row in iter_jsonl(path):
        row["task"] = task_of(row)
        rows.append(row)
    return rows
