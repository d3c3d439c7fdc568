"""MIRAGE's published predictions as medcite runs, so our comparisons can be checked against theirs.

``mirage/mirage_reference_predictions.jsonl.gz`` holds one line per (dataset, setting, llm, qid):
``setting`` is ``cot`` (closed-book chain of thought) or ``rag_32`` (MedRAG, 32 snippets from
``medcorp/RRF-4``), ``llm`` is ``OpenAI/gpt-35-turbo-16k`` or ``OpenAI/gpt-4-32k``, ``raw`` the
model's output (a one-element list; empty for 34 lines), ``pred`` a letter or null.

The published ``pred`` is not used as the answer: it takes the first capital of the model's
``answer_choice``, so "Cannot be determined" became C (149 lines) and "A/B/C/D" became A (192
lines with several letters). :func:`parse_answer` re-reads ``raw`` strictly and gives
``pred=None`` with a reason in ``error`` instead (:func:`evals.studies.reference.parse.parse_answer`). The
published value and the letter MIRAGE's own scorer credits
(:func:`evals.studies.reference.parse.mirage_letter`) are kept in ``extra`` for reproducing the paper.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.errors import SourceError
from core.paths import Paths
from evals.datasets.mirage import load_mirage
from evals.datasets.qrels import require
from evals.records import ItemRecord, write_records
from evals.studies.reference.parse import REASONS, mirage_letters, parse_answer
from indexes.files import sha256_file

SOURCE_FILE = "mirage/mirage_reference_predictions.jsonl.gz"
CONDITIONS = {"cot": "closed-book", "rag_32": "rag"}


def read_reference(
    path: Path, options: Mapping[tuple[str, str], Iterable[str]]
) -> dict[tuple[str, str], list[ItemRecord]]:
    """Records per (llm, setting); ``options`` maps (dataset, qid) to the item's option letters."""
    rows: list[dict[str, Any]] = []
    with gzip.open(require(path, "MIRAGE reference predictions"), "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{path}:{number}: not valid JSON; re-copy the file") from exc
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["llm"], row["setting"], row["dataset"])].append(row)
    runs: dict[tuple[str, str], list[ItemRecord]] = defaultdict(list)
    for (llm, setting, dataset), group in groups.items():
        credited = mirage_letters(group)
        for row in group:
            key = (dataset, str(row["qid"]))
            if key not in options:
                raise SourceError(f"{path}: {key} is not in MIRAGE's benchmark.json; the files do not match")
            raw = row["raw"][0] if row["raw"] else None
            pred, error = parse_answer(raw, options[key])
            runs[(llm, setting)].append(
                ItemRecord(
                    dataset=dataset,
                    qid=key[1],
                    condition=CONDITIONS.get(setting, setting),
                    gold=row["gold"],
                    pred=pred,
                    answer=raw,
                    error=error,
                    extra={
                        "published_pred": row["pred"],
                        "mirage_pred": credited[key[1]],
                        "corpus_retriever": str(row.get("corpus_retriever") or ""),
                    },
                )
            )
    return dict(runs)


def mirage_scored(records: Iterable[ItemRecord]) -> list[ItemRecord]:
    """Records re-answered with MIRAGE's credited letter (unparsable outputs become "A").

    Only for reproducing the published numbers; medcite's own accuracy never guesses.
    """
    return [replace(r, pred=str(r.extra["mirage_pred"]), error=None) for r in records]


def run_name(llm: str, setting: str) -> str:
    """``mirage-gpt-4-32k-cot``: the run directory of one (llm, setting)."""
    return f"mirage-{llm.rsplit('/', 1)[-1]}-{setting}"


def import_reference(paths: Paths, out_dir: Path) -> list[Path]:
    """Write one run directory per (llm, setting) under ``out_dir``: records.jsonl + manifest.json.

    Each directory is written under a temporary name and renamed into place, so a crash never
    leaves half a run; an existing run of the same name is replaced.
    """
    source = paths.source_data / SOURCE_FILE
    options = {item.key: tuple(item.options) for item in load_mirage(paths.source_data / "mirage")}
    runs = read_reference(source, options)
    sha = sha256_file(source)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for (llm, setting), records in sorted(runs.items()):
        final = out_dir / run_name(llm, setting)
        tmp = out_dir / f".{final.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        write_records(tmp / "records.jsonl", records, append=False)
        manifest = {
            "kind": "reference",
            "source": str(source),
            "sha256": sha,
            "llm": llm,
            "setting": setting,
            "condition": CONDITIONS.get(setting, setting),
            "corpus_retriever": records[0].extra["corpus_retriever"],
            "records": len(records),
            "no_answer": sum(1 for r in records if r.pred is None),
            "parser": "evals.studies.reference.parse.parse_answer "
            "(strict; extra.mirage_pred holds MIRAGE's letter)",
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        written.append(final)
    return written


# MIRAGE paper (Xiong et al. 2024, Table 2), accuracy in %: CoT = closed-book, MedRAG = rag_32.
PUBLISHED: dict[tuple[str, str], dict[str, float]] = {
    ("OpenAI/gpt-35-turbo-16k", "cot"): {
        "mmlu": 72.91,
        "medqa": 65.04,
        "medmcqa": 55.25,
        "pubmedqa": 36.00,
        "bioasq": 74.27,
    },
    ("OpenAI/gpt-35-turbo-16k", "rag_32"): {
        "mmlu": 75.48,
        "medqa": 66.61,
        "medmcqa": 58.04,
        "pubmedqa": 67.40,
        "bioasq": 90.29,
    },
    ("OpenAI/gpt-4-32k", "cot"): {
        "mmlu": 89.44,
        "medqa": 83.97,
        "medmcqa": 69.88,
        "pubmedqa": 39.60,
        "bioasq": 84.30,
    },
    ("OpenAI/gpt-4-32k", "rag_32"): {
        "mmlu": 87.24,
        "medqa": 82.80,
        "medmcqa": 66.65,
        "pubmedqa": 70.60,
        "bioasq": 92.56,
    },
}


def reference_report(paths: Paths, *, seed: int = 0) -> str:
    """Markdown of ``docs/results/mirage_reference_compare.md``: the published table next to the
    same predictions scored strictly and by MIRAGE's rule, then closed-book vs MedRAG per LLM."""
    from evals.engine.report.compare import compare, render_markdown
    from evals.metrics.choice import accuracy

    source = paths.source_data / SOURCE_FILE
    options = {item.key: tuple(item.options) for item in load_mirage(paths.source_data / "mirage")}
    runs = read_reference(source, options)
    lines = [
        "# MIRAGE reference predictions: published table, strict scoring, paired comparison",
        "",
        f"Source: `{SOURCE_FILE}` (sha256 `{sha256_file(source)[:16]}…`), "
        f"{sum(map(len, runs.values()))} predictions.",
        "Generated by `evals.studies.reference.predictions.reference_report`. Accuracy in %.",
        "strict: medcite's reading (no parsable single letter = no answer = wrong); MIRAGE rule: MIRAGE's",
        '`src/evaluate.py`, which credits "A" when it finds no letter; published: the paper\'s table.',
        "",
        "| LLM | setting | dataset | published | MIRAGE rule | strict | no answer (strict) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for (llm, setting), records in sorted(runs.items()):
        for dataset, published in PUBLISHED.get((llm, setting), {}).items():
            rows = [r for r in records if r.dataset == dataset]
            strict, rule = accuracy(rows), accuracy(mirage_scored(rows))
            lines.append(
                f"| {llm.rsplit('/', 1)[-1]} | {setting} | {dataset} | {published:.2f} "
                f"| {100 * rule.accuracy:.2f} | {100 * strict.accuracy:.2f} | {strict.no_answer} |"
            )
    reasons = REASONS
    lines += ["", "## Outputs without a strict answer, by reason", ""]
    lines += ["| run | " + " | ".join(reasons) + " |", "|---|" + "---:|" * len(reasons)]
    for (llm, setting), records in sorted(runs.items()):
        tally = accuracy(records).reasons
        lines.append(
            f"| {run_name(llm, setting)} | " + " | ".join(str(tally.get(r, 0)) for r in reasons) + " |"
        )
    for llm in sorted({llm for llm, _ in runs}):
        lines += ["", f"## {llm}: closed-book (A) vs MedRAG (B), strict scoring", ""]
        paired = compare(runs[(llm, "cot")], runs[(llm, "rag_32")], seed=seed)
        lines.append(render_markdown(paired, f"{llm} CoT", f"{llm} MedRAG (medcorp/RRF-4, 32 snippets)"))
    return "\n".join(lines).rstrip() + "\n"
