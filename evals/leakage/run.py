"""Leakage of benchmark sets and of eval runs: ``medcite eval leakage`` and the report's split.

:func:`leakage_report` scans one index for named datasets (the command). For a run report,
:func:`run_leakage` scans each RAG condition's index for the run's multiple-choice items,
cached in the run folder as ``leakage-<index>.json`` keyed by the index's corpus fingerprint (a
rebuilt index is scanned again), and :func:`split_paired` adds to every RAG vs closed-book row
the same comparison over leaked and over clean items. See :mod:`evals.leakage.check` for the score.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import ConfigError, MedciteError
from core.paths import Paths
from evals.datasets.gold_passages import gold_lookup, original_set
from evals.leakage.check import DEFAULT_N, DEFAULT_THRESHOLD, LeakageReport, check_index, leaked_by_key
from evals.records import ItemRecord
from evals.types import McqItem

NOT_FOUND = "index not found"


def index_folder(paths: Paths, name: str) -> Path:
    """The folder of a built index; ConfigError naming the build command when there is none."""
    folder = paths.indexes_dir / name
    if not (folder / "manifest.json").is_file():
        raise ConfigError(
            f"no built index {name!r} under {paths.indexes_dir}; build it with "
            f"`medcite index build --name {name} --source ...` (add --no-dense: leakage reads only chunks)"
        )
    return folder


def leakage_report(
    paths: Paths,
    index: str,
    datasets: Sequence[str],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    ngram: int = DEFAULT_N,
    n: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> LeakageReport:
    """Leakage of every item (or a seeded sample of ``n`` per set) of ``datasets`` in ``index``."""
    from evals.datasets import load_mcq, sample

    folder = index_folder(paths, index)
    items: list[McqItem] = []
    for name in datasets:
        pool = load_mcq(name, paths)
        try:
            items += sample(pool, n, seed) if n else pool
        except ValueError as exc:
            raise ConfigError(f"dataset {name}: {exc}") from exc
    gold = gold_lookup(paths.source_data, datasets)
    try:
        return check_index(items, gold, folder, name=index, threshold=threshold, n=ngram, progress=progress)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def _pct(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "–"
    low, high = rate["ci"]
    return f"{rate['count']}/{rate['n']} = {100 * rate['rate']:.2f}% ({100 * low:.2f}-{100 * high:.2f})"


def format_report(report: LeakageReport, examples: int = 3) -> str:
    """Per dataset: leaked by question, by gold passage, either (95% Wilson CI), and examples."""
    lines = [
        f"leakage in index {report.index} ({report.chunks} chunks, {report.seconds:.1f} s): "
        f"containment >= {report.threshold} of word {report.n}-grams in one chunk"
    ]
    for ds, r in report.rates().items():
        lines.append(f"{ds}: n={r['n']} (with gold passages: {r['with_gold']})")
        for kind, label in (("question", "question"), ("gold", "gold passage"), ("either", "either")):
            lines.append(f"  leaked ({label}): {_pct(r[kind])}")
        for row in [x for x in report.rows if x["dataset"] == ds and x["leaked"]][:examples]:
            ids = [c for c, _ in (row["question_chunks"] + row["gold_chunks"])[:3]]
            lines.append(
                f"    e.g. {row['qid']}: question {row['question_containment']}, "
                f"gold {row['gold_containment']} -> {', '.join(ids)}"
            )
    return "\n".join(lines)


def rag_index(condition: str) -> str | None:
    """``rag/<index>/<mode>/...`` -> ``<index>``; None for a condition without an index."""
    parts = condition.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "rag" else None


def _run_items(records: Sequence[ItemRecord], paths: Paths) -> tuple[list[McqItem], list[str]]:
    """The base items behind a run's multiple-choice records, and the sets that could not load."""
    from evals.datasets import load_mcq

    wanted: dict[str, set[str]] = {}
    for r in records:
        if r.gold is not None:
            wanted.setdefault(original_set(r.dataset), set()).add(r.qid)
    items: list[McqItem] = []
    missing: list[str] = []
    for ds, qids in sorted(wanted.items()):
        try:
            items += [it for it in load_mcq(ds, paths) if it.qid in qids]
        except MedciteError:
            missing.append(ds)
    return items, missing


def _cached(path: Path, fingerprint: str | None, keys: set[tuple[str, str]]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    have = {(r["dataset"], r["qid"]) for r in data.get("items", [])}
    same = data.get("corpus_fingerprint") == fingerprint and data.get("threshold") == DEFAULT_THRESHOLD
    return data if same and keys <= have else None


def _index_leakage(folder: Path, index: str, items: list[McqItem], paths: Paths) -> dict[str, Any]:
    from indexes.manifest import read_manifest

    try:
        source = index_folder(paths, index)
        fingerprint = read_manifest(source.resolve()).get("corpus_fingerprint")
    except MedciteError:
        return {"status": NOT_FOUND}
    cache = folder / f"leakage-{index}.json"
    data = _cached(cache, fingerprint, {it.key for it in items})
    if data is None:
        try:
            gold = gold_lookup(paths.source_data, {it.dataset for it in items})
            data = check_index(items, gold, source, name=index).to_json()
        except MedciteError as exc:
            return {"status": f"unavailable ({exc})"}
        cache.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return {"status": "ok", "rows": data["items"], "rates": data["rates"]}


def run_leakage(folder: Path, records: Sequence[ItemRecord], paths: Paths) -> dict[str, dict[str, Any]]:
    """Per index of the run's RAG conditions: ``{"status": "ok", "leaked": {(dataset, qid): bool},
    ...}``, or ``{"status": "index not found"}``; datasets that could not load are listed."""
    indexes = sorted({i for r in records if r.gold is not None and (i := rag_index(r.condition))})
    if not indexes:
        return {}
    items, missing = _run_items(records, paths)
    out: dict[str, dict[str, Any]] = {}
    for index in indexes:
        found = _index_leakage(folder, index, items, paths)
        if found["status"] == "ok":
            found["leaked"] = leaked_by_key(found.pop("rows"))
        found["unavailable_datasets"] = missing
        out[index] = found
    return out


_SPLIT_KEYS = (
    "n",
    "accuracy_a",
    "accuracy_b",
    "diff",
    "harm_rate",
    "help_rate",
    "only_a_right",
    "only_b_right",
)


def _split_rows(base: list[ItemRecord], rag: list[ItemRecord]) -> dict[str, dict[str, Any]]:
    from evals.engine.report.compare import compare_sets

    try:
        rows = compare_sets(base, rag, n_resamples=1000)
    except ValueError:  # no paired item on this side of the split
        return {}
    out = {row.dataset: {k: v for k, v in row.to_json().items() if k in _SPLIT_KEYS} for row in rows}
    if len(out) == 1:  # one dataset on this side: its row is also the side's "all" row
        out["all"] = next(iter(out.values()))
    return out


def split_paired(
    paired: dict[str, dict[str, Any]],
    records: Sequence[ItemRecord],
    leakage: dict[str, dict[str, Any]],
    baseline: str = "closed-book",
) -> None:
    """Add ``row["leakage"]`` to each RAG vs closed-book row: the index, its status, and the
    comparison over leaked and over clean items (``n`` 0 when a side has none)."""
    base = [r for r in records if r.condition == baseline and r.gold is not None]
    for cond, per in paired.items():
        index = rag_index(cond)
        info = leakage.get(index or "")
        if info is None:
            continue
        if info["status"] != "ok":
            for row in per.values():
                row["leakage"] = {"index": index, "status": info["status"]}
            continue
        flags = info["leaked"]
        rag = [r for r in records if r.condition == cond and r.gold is not None]
        known = [r for r in rag if (original_set(r.dataset), r.qid) in flags]
        sides = {
            side: _split_rows(base, [r for r in known if flags[(original_set(r.dataset), r.qid)] == want])
            for side, want in (("leaked", True), ("clean", False))
        }
        for ds, row in per.items():
            unknown = [
                r for r in rag if ds in ("all", r.dataset) and (original_set(r.dataset), r.qid) not in flags
            ]
            row["leakage"] = {
                "index": index,
                "status": "ok",
                "unknown": len(unknown),
                **{side: rows.get(ds, {"n": 0}) for side, rows in sides.items()},
            }


def leaked_cell(row: dict[str, Any]) -> str:
    """The report's "leaked" column: leaked items of the paired ones, or why it is unknown."""
    info = row.get("leakage")
    if info is None:
        return "–"
    if info["status"] != "ok":
        return f"leakage: {info['status']}"
    return f"{info['leaked']['n']}/{info['leaked']['n'] + info['clean']['n']}"


def split_table(paired: dict[str, dict[str, Any]]) -> list[list[object]]:
    """Rows of the leaked-vs-clean table: per condition and dataset, closed-book and RAG accuracy
    (%), harm and help (% of that side's paired items), for leaked and for clean items."""

    def side(s: dict[str, Any]) -> list[object]:
        if not s["n"]:
            return [0, "–", "–", "–", "–"]
        return [
            s["n"],
            *(f"{100 * s[k]:.1f}" for k in ("accuracy_a", "accuracy_b", "harm_rate", "help_rate")),
        ]

    return [
        [cond, ds, r["leakage"]["index"], *side(r["leakage"]["leaked"]), *side(r["leakage"]["clean"])]
        for cond, per in paired.items()
        for ds, r in per.items()
        if r.get("leakage", {}).get("status") == "ok"
    ]
