"""PubMedQA PQA-L (Jin et al. 2019): 1,000 expert-labelled yes/no/maybe questions with their abstracts.

``ori_pqal.json`` maps a PubMed id to ``QUESTION``, ``CONTEXTS`` (the abstract's sections
without its conclusion), ``LABELS``, ``MESHES``, ``YEAR``, ``final_decision`` and
``LONG_ANSWER``; ``test_ground_truth.json`` names the 500 test ids. Items carry the contexts:
answering with them is the oracle-context upper bound for retrieval. The dataset key is
``pubmedqa`` and the options are MIRAGE's (A yes, B no, C maybe), so records of an oracle run
pair with MIRAGE PubMedQA* records of the same question (the same 500 test ids).

The BEIR-like ``pqal_corpus.jsonl``/``pqal_queries.jsonl``/``pqal_qrels.tsv`` (one abstract
per question) load as a retrieval set with :func:`load_pqal_retrieval`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.errors import ConfigError, SourceError
from evals.datasets.beir import load_beir
from evals.datasets.qrels import require
from evals.types import McqItem, RetrievalSet

DATASET = "pubmedqa"
OPTIONS = {"A": "yes", "B": "no", "C": "maybe"}
LETTER = {text: letter for letter, text in OPTIONS.items()}
SPLITS = ("test", "trainval", "all")


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(require(path, what).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path} is not valid JSON ({exc}); re-copy it from pubmedqa/pubmedqa") from exc


def load_pqal(root: Path, split: str = "test") -> list[McqItem]:
    """PQA-L items with their gold contexts; ``split`` is "test" (500), "trainval" (500) or "all"."""
    if split not in SPLITS:
        raise ConfigError(f"unknown PubMedQA split {split!r}; choose from: {', '.join(SPLITS)}")
    root = Path(root)
    data = _read_json(root / "ori_pqal.json", "PubMedQA ori_pqal.json")
    test = set(_read_json(root / "test_ground_truth.json", "PubMedQA test_ground_truth.json"))
    items: list[McqItem] = []
    for pmid, row in data.items():
        in_test = pmid in test
        if (split == "test" and not in_test) or (split == "trainval" and in_test):
            continue
        decision = str(row.get("final_decision", ""))
        if decision not in LETTER:
            raise SourceError(f"{root / 'ori_pqal.json'}: {pmid} has final_decision {decision!r}")
        items.append(
            McqItem(
                dataset=DATASET,
                qid=str(pmid),
                question=str(row.get("QUESTION", "")),
                options=dict(OPTIONS),
                answer=LETTER[decision],
                contexts=tuple(str(c) for c in row.get("CONTEXTS", ())),
                meta={
                    "split": "test" if in_test else "trainval",
                    "labels": list(row.get("LABELS", ())),
                    "meshes": list(row.get("MESHES", ())),
                    "year": str(row.get("YEAR", "")),
                    "long_answer": str(row.get("LONG_ANSWER", "")),
                },
            )
        )
    return items


def load_pqal_retrieval(root: Path) -> RetrievalSet:
    """The 1,000 PQA-L questions judged against their own abstracts (one relevant doc each)."""
    return load_beir(
        Path(root),
        name="pubmedqa-pqal",
        corpus="pqal_corpus.jsonl",
        queries="pqal_queries.jsonl",
        qrels="pqal_qrels.tsv",
    )
