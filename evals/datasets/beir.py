"""Any retrieval set in BEIR layout, so users bring their own: ``corpus.jsonl``, ``queries.jsonl``,
``qrels/<split>.tsv``.

``queries.jsonl`` lines are ``{"_id", "text"}``; the qrels TSV has a header and
``query-id corpus-id score`` rows. File names can be overridden for BEIR-like folders such as
PubMedQA's ``pqal_corpus.jsonl``/``pqal_queries.jsonl``/``pqal_qrels.tsv``.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import SourceError
from evals.datasets.qrels import build_set, json_rows, read_qrels_tsv
from evals.types import RetrievalSet


def read_queries(path: Path) -> dict[str, str]:
    """``{_id: text}`` from a BEIR ``queries.jsonl``; blank lines are skipped, a duplicate id is an error."""
    queries: dict[str, str] = {}
    rows = json_rows(
        path, "queries file", lambda row: (str(row["_id"]), str(row["text"])), "'_id' and 'text'"
    )
    for line, (qid, text) in rows:
        if qid in queries:
            raise SourceError(f"{path}:{line}: duplicate query id {qid!r}")
        queries[qid] = " ".join(text.split())
    return queries


def load_beir(
    root: Path,
    *,
    split: str = "test",
    name: str | None = None,
    corpus: str = "corpus.jsonl",
    queries: str = "queries.jsonl",
    qrels: str | None = None,
) -> RetrievalSet:
    """A BEIR folder as a RetrievalSet; ``qrels`` defaults to ``qrels/<split>.tsv``.

    The corpus is not read here (it can be large): its path is handed on so an index can be built
    from it, and :func:`evals.datasets.qrels.coverage` checks the qrels against that index.
    """
    root = Path(root)
    if not root.is_dir():
        raise SourceError(f"BEIR folder not found: {root} (expected corpus.jsonl, queries.jsonl, qrels/)")
    qrels_path = root / (qrels or f"qrels/{split}.tsv")
    if qrels is None and not qrels_path.is_file():
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise SourceError(
            f"no qrels for split {split!r} in {root / 'qrels'}; available: {', '.join(splits) or 'none'}"
        )
    corpus_path = root / corpus
    return build_set(
        name or root.name,
        read_queries(root / queries),
        read_qrels_tsv(qrels_path),
        corpus=corpus_path if corpus_path.is_file() else None,
        notes=(f"BEIR layout from {root} (qrels {qrels_path.name})",),
    )
