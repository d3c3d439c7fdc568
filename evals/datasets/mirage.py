"""MIRAGE (Xiong et al. 2024): five medical multiple-choice sets in one ``benchmark.json``.

``{dataset: {qid: {question, options{A..}, answer, PMID?}}}`` with dataset keys ``mmlu``
(MMLU-Med, 1,089), ``medqa`` (MedQA-US, 1,273), ``medmcqa`` (MedMCQA dev, 4,183), ``pubmedqa``
(PubMedQA*, the 500 PQA-L test questions without their abstracts) and ``bioasq`` (BioASQ-Y/N,
618). Items keep MIRAGE's qids so records pair with MIRAGE's published predictions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import ConfigError, SourceError
from evals.datasets.qrels import require
from evals.types import McqItem

BENCHMARK_FILE = "benchmark.json"
DATASETS: dict[str, str] = {  # MIRAGE key -> the name its paper uses
    "mmlu": "MMLU-Med",
    "medqa": "MedQA-US",
    "medmcqa": "MedMCQA",
    "pubmedqa": "PubMedQA*",
    "bioasq": "BioASQ-Y/N",
}


def _item(dataset: str, qid: str, row: Any, path: Path) -> McqItem:
    where = f"{path}: {dataset}/{qid}"
    if not isinstance(row, dict) or not isinstance(row.get("options"), dict):
        raise SourceError(f"{where}: expected an object with 'question', 'options' and 'answer'")
    options = {str(k): str(v) for k, v in sorted(row["options"].items())}
    answer = str(row.get("answer", ""))
    if answer not in options:
        raise SourceError(f"{where}: gold answer {answer!r} is not one of the options {sorted(options)}")
    meta: dict[str, Any] = {}
    if row.get("PMID"):
        meta["pmids"] = [str(p) for p in row["PMID"]]
    return McqItem(
        dataset=dataset,
        qid=qid,
        question=str(row.get("question", "")),
        options=options,
        answer=answer,
        meta=meta,
    )


def load_mirage(root: Path, datasets: Sequence[str] | None = None) -> list[McqItem]:
    """Items of the chosen MIRAGE datasets (all five by default), in file order per dataset.

    ``root`` is the folder holding ``benchmark.json`` (``<source data>/mirage``) or the file.
    """
    if isinstance(datasets, str):
        datasets = (datasets,)
    chosen = list(datasets) if datasets is not None else list(DATASETS)
    unknown = [d for d in chosen if d not in DATASETS]
    if unknown:
        raise ConfigError(f"unknown MIRAGE dataset {unknown[0]!r}; choose from: {', '.join(DATASETS)}")
    path = Path(root)
    path = require(path if path.suffix == ".json" else path / BENCHMARK_FILE, "MIRAGE benchmark.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path} is not valid JSON ({exc}); re-copy MIRAGE's benchmark.json") from exc
    items: list[McqItem] = []
    for dataset in chosen:
        if dataset not in data:
            raise SourceError(f"{path} has no {dataset!r} set (it has: {', '.join(sorted(data))})")
        items.extend(_item(dataset, str(qid), row, path) for qid, row in data[dataset].items())
    return items
