"""Qrels shared by every retrieval set: reading TSVs, merging duplicates, checking coverage.

Duplicate judgements of one (query, document) pair keep the highest grade: an assessor who
found a passage relevant once is believed over one who did not, and the rule does not depend on
file order. The number of merged pairs is reported in the set's counts.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from core.errors import SourceError
from evals.types import QrelsCoverage, RetrievalSet

Judgement = tuple[str, str, int]  # (query id, document id, grade)
T = TypeVar("T")


def require(path: Path, what: str) -> Path:
    """``path`` if it is a file, else a SourceError saying where the data should be."""
    if not path.is_file():
        raise SourceError(
            f"{what} not found at {path}. Point MEDCITE_SOURCE_DATA at the folder of local copies "
            "of the benchmark data (../shared/data by default)."
        )
    return path


def json_rows(path: Path, what: str, fields: Callable[[Any], T], expected: str) -> Iterator[tuple[int, T]]:
    """``(line number, fields(object))`` per non-blank line of the JSONL file ``path`` (``what``,
    for the error if it is missing); a line that is not JSON, or lacks what ``fields`` reads, is a
    SourceError saying that it expected a JSON object with ``expected``."""
    with require(path, what).open(encoding="utf-8") as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                value = fields(json.loads(raw))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise SourceError(f"{path}:{line}: expected a JSON object with {expected}") from exc
            yield line, value


def read_qrels_tsv(path: Path, doc_id: Callable[[str], str] = str) -> list[Judgement]:
    """Judgements from a BEIR qrels TSV (``query-id corpus-id score`` with a header line).

    ``doc_id`` maps the file's corpus ids to the ids of the corpus being evaluated.
    """
    out: list[Judgement] = []
    with require(path, "qrels file").open(encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = next(rows, None)
        if header is None:
            raise SourceError(f"{path} is empty; expected a header 'query-id corpus-id score'")
        for line, row in enumerate(rows, start=2):
            if not row or not "".join(row).strip():
                continue
            try:
                qid, corpus_id, grade = row[0].strip(), row[1].strip(), int(row[2])
            except (IndexError, ValueError) as exc:
                raise SourceError(
                    f"{path}:{line}: expected 'query-id<TAB>corpus-id<TAB>integer score'"
                ) from exc
            out.append((qid, doc_id(corpus_id), grade))
    return out


def merge(judgements: Iterable[Judgement]) -> tuple[dict[str, dict[str, int]], int]:
    """``{qid: {doc_id: grade}}`` keeping the maximum grade per pair, and how many pairs were merged."""
    qrels: dict[str, dict[str, int]] = {}
    merged: set[tuple[str, str]] = set()
    for qid, doc, grade in judgements:
        seen = qrels.setdefault(qid, {})
        if doc in seen:
            merged.add((qid, doc))
            seen[doc] = max(seen[doc], grade)
        else:
            seen[doc] = grade
    return qrels, len(merged)


def build_set(
    name: str,
    queries: Mapping[str, str],
    judgements: Iterable[Judgement],
    *,
    corpus: Path | None = None,
    counts: Mapping[str, int] | None = None,
    notes: Iterable[str] = (),
) -> RetrievalSet:
    """A RetrievalSet holding only the queries that have text and at least one relevant document."""
    qrels, merged = merge(judgements)
    unjudged = [q for q in qrels if q not in queries]
    keep = {q: docs for q, docs in qrels.items() if q in queries and any(g > 0 for g in docs.values())}
    if not keep:
        raise SourceError(f"{name}: no query has both text and a relevant judgement; check the files")
    all_counts = {
        "queries_in_file": len(queries),
        "queries_judged": sum(1 for q in qrels if q in queries),
        "judged_pairs": sum(len(d) for d in qrels.values()),
        "queries": len(keep),
        "queries_without_relevant": sum(1 for q in qrels if q in queries and q not in keep),
        "qrels_queries_without_text": len(unjudged),
        "judgements": sum(len(d) for d in keep.values()),
        "relevant": sum(1 for d in keep.values() for g in d.values() if g > 0),
        "duplicate_pairs_merged": merged,
        **(counts or {}),
    }
    return RetrievalSet(
        name=name,
        queries={q: queries[q] for q in keep},
        qrels=keep,
        corpus=corpus,
        counts=all_counts,
        notes=tuple(notes),
    )


def coverage(qrels: Mapping[str, Mapping[str, int]], doc_ids: Container[str]) -> QrelsCoverage:
    """Which relevant documents of ``qrels`` are absent from ``doc_ids`` (a corpus or an index).

    Reports, never raises: evaluating on a subset corpus is legitimate, as long as the report
    says how many relevant documents (and whole queries) the corpus cannot return.
    """
    per_query: dict[str, int] = {}
    lost: list[str] = []
    relevant = missing = 0
    examples: list[str] = []
    for qid, docs in qrels.items():
        rel = [d for d, g in docs.items() if g > 0]
        gone = [d for d in rel if d not in doc_ids]
        relevant += len(rel)
        missing += len(gone)
        if gone:
            per_query[qid] = len(gone)
            examples.extend(gone[: max(0, 5 - len(examples))])
        if rel and len(gone) == len(rel):
            lost.append(qid)
    return QrelsCoverage(
        queries=len(qrels),
        relevant=relevant,
        missing=missing,
        missing_per_query=per_query,
        queries_without_any=tuple(lost),
        examples=tuple(examples),
    )


def restrict(rset: RetrievalSet, doc_ids: Container[str]) -> RetrievalSet:
    """The set judged only on documents in ``doc_ids``: for scoring a retriever over a subset.

    Queries left without a relevant document are dropped; the counts say how many.
    """
    report = coverage(rset.qrels, doc_ids)
    qrels = {q: {d: g for d, g in docs.items() if d in doc_ids} for q, docs in rset.qrels.items()}
    keep = {q: docs for q, docs in qrels.items() if any(g > 0 for g in docs.values())}
    counts = {
        **rset.counts,
        "queries": len(keep),
        "restricted_missing_relevant": report.missing,
        "restricted_queries_dropped": len(rset.qrels) - len(keep),
    }
    note = f"restricted to a corpus lacking {report.missing} of {report.relevant} relevant documents"
    return RetrievalSet(
        name=rset.name,
        queries={q: rset.queries[q] for q in keep},
        qrels=keep,
        corpus=rset.corpus,
        counts=counts,
        notes=(*rset.notes, note),
    )
