"""A retrieval run as files that trec_eval, pytrec_eval and ranx score: one folder per retrieval set.

    runs/<set>/qrels.txt          qid 0 docid grade: the set's judgements of the queries the run asked
    runs/<set>/<condition>.trec   qid Q0 docid rank score tag, one file per condition (tag: its name)

Ids are medcite's on both sides: the set's own query ids, and document ids as the index names them,
source prefix included (``bioasq:S000123``, ``medquad:GHR_0000393_Sec3``); the loaders map the
source's qrels into that space, so the two files need no mapping. Each query's documents are in
trec_eval's order (score descending as float32, ties broken by the larger doc id) with exact scores
(``repr``), and metrics.json ranks them the same way (:func:`ranking`), so its numbers are trec_eval's.
"""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from core.errors import ConfigError
from evals.metrics.retrieval import ranked
from evals.records import ItemRecord
from evals.types import RetrievalSet

RUNS = "runs"
QRELS = "qrels.txt"
PREFIX = "retrieval/"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def judged(records: Iterable[ItemRecord], rset: RetrievalSet) -> list[ItemRecord]:
    """The records whose query has a relevant document: the ones metrics (and the files) cover."""
    return [r for r in records if any(g > 0 for g in rset.qrels.get(r.qid, {}).values())]


def ranking(records: Iterable[ItemRecord]) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(doc, score), ...]}`` in trec_eval's order; a repeated doc keeps its first score."""
    scores: dict[str, dict[str, float]] = {}
    for r in records:
        per = scores.setdefault(r.qid, {})
        for doc, score in r.retrieved:
            per.setdefault(doc, float(score))
    return {qid: [(d, scores[qid][d]) for d in docs] for qid, docs in ranked(scores).items()}


def file_name(name: str) -> str:
    """``name`` with every character but letters, digits, ``.``, ``_`` and ``-`` as ``_``."""
    return _UNSAFE.sub("_", name)


def write_runs(folder: Path, records: list[ItemRecord], sets: Mapping[str, RetrievalSet]) -> list[Path]:
    """Write ``folder/runs/`` afresh from the retrieval records; returns the files written."""
    out = folder / RUNS
    shutil.rmtree(out, ignore_errors=True)
    (folder / "run.trec").unlink(missing_ok=True)  # older runs' single file mixed every condition
    grouped: dict[str, dict[str, list[ItemRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.condition.startswith(PREFIX) and r.dataset in sets:
            grouped[r.dataset][r.condition.removeprefix(PREFIX)].append(r)
    written: list[Path] = []
    for ds, per in sorted(grouped.items()):
        rows = {cond: judged(rs, sets[ds]) for cond, rs in sorted(per.items())}
        target = _unique(out, ds, (file_name(d) for d in grouped), "retrieval sets")
        target.mkdir(parents=True)
        asked = {r.qid for rs in rows.values() for r in rs}
        written.append(_write_qrels(target / QRELS, sets[ds], asked))
        for cond, rs in rows.items():
            path = _unique(target, cond, (file_name(c) for c in rows), "conditions", ".trec")
            written.append(_write_run(path, cond, rs))
    return written


def _unique(parent: Path, name: str, all_names: Iterable[str], what: str, suffix: str = "") -> Path:
    """``parent/<file_name(name)><suffix>``, refused when two names of ``what`` share that file."""
    if sum(n == file_name(name) for n in all_names) > 1:
        raise ConfigError(
            f"two {what} would both write {parent / (file_name(name) + suffix)}; "
            "rename one (index or dataset names that differ only in punctuation collide)"
        )
    return parent / (file_name(name) + suffix)


def _write_qrels(path: Path, rset: RetrievalSet, queries: set[str]) -> Path:
    lines = [
        _line(path, qid, "0", doc, str(grade))
        for qid in sorted(queries)
        for doc, grade in sorted(rset.qrels.get(qid, {}).items())
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _write_run(path: Path, condition: str, records: list[ItemRecord]) -> Path:
    lines = [
        _line(path, qid, "Q0", doc, str(rank), repr(score), condition)
        for qid, docs in sorted(ranking(records).items())
        for rank, (doc, score) in enumerate(docs, start=1)
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _line(path: Path, *fields: str) -> str:
    """One line of white-space separated fields; an id with white space in it cannot be one."""
    bad = next((f for f in fields if not f or any(c.isspace() for c in f)), None)
    if bad is not None:
        raise ConfigError(
            f"cannot write {path}: {bad!r} is empty or has white space, which TREC files cannot hold; "
            "metrics.json and report.md are written, rename the document, query or condition to get the file"
        )
    return " ".join(fields) + "\n"
