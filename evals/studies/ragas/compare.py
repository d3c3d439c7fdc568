"""medcite's own answer-quality metrics beside the ragas package's, on the same answers.

Two steps around the ragas scorer (``evals/ragas_env/score.py``, run in ``.venv-ragas``):

- ``export``: samples JSONL (``id, question, answer, contexts[], reference``) from medcite answer
  run directories (``evals/studies/ragas/samples.py``), our scores carried along.
- ``report``: joins our scores with ragas' per sample and writes ``report.md`` and
  ``samples.json``: per metric Spearman and Pearson correlation with bootstrap 95% intervals
  (items resampled with replacement, pairs with both scores only), each side's mean, NaN counts
  with reasons, the items where the two disagree most with what ragas' judge said, and the cost
  per sample of each (seconds; ragas' tokens from the server's usage).

    medcite study ragas-compare export data/runs/answer-quality \
        data/ragas/answer-quality/samples.jsonl
    medcite study ragas-compare report data/ragas/answer-quality/samples.jsonl \
        data/ragas/answer-quality/scores.jsonl docs/results/eval/ragas-vs-medcite
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths
from evals.studies.ragas.samples import METRICS, export_samples, unique_by_id


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (a writer killed mid-line) is skipped."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = []
    for number, line in enumerate(lines, start=1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if number != len(lines):
                raise
    return rows


def _value(x: Any) -> float:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else math.nan


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given their average rank (as Spearman's rho needs)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    for v in np.unique(x):
        tied = x == v
        ranks[tied] = ranks[tied].mean()
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; NaN when either side is constant or there are fewer than 3 pairs."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    xc, yc = x - x.mean(), y - y.mean()
    return float((xc @ yc) / math.sqrt((xc @ xc) * (yc @ yc)))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks."""
    return pearson(_ranks(x), _ranks(y))


def bootstrap_ci(
    x: np.ndarray,
    y: np.ndarray,
    stat: Callable[[np.ndarray, np.ndarray], float],
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile 95% interval of ``stat`` over pairs resampled with replacement (NaN draws
    from constant resamples are left out; NaN when fewer than half the draws are defined)."""
    if len(x) < 3:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = np.array([stat(x[i], y[i]) for i in rng.integers(0, len(x), (n_boot, len(x)))])
    draws = draws[np.isfinite(draws)]
    if len(draws) < n_boot / 2:
        return math.nan, math.nan
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def judge_note(metric: str, outputs: Sequence[Mapping[str, Any]]) -> str:
    """A short reading of what ragas' judge said for one metric (from the scorer's ``judge`` log)."""
    last = outputs[-1]["output"] if outputs else {}
    if metric == "faithfulness" and outputs:
        verdicts = last.get("statements") or []
        if outputs[-1]["step"] != "NLIStatementOutput":
            return f"{len(verdicts)} statements, no verdicts"
        bad = [v.get("statement", "") for v in verdicts if not v.get("verdict")]
        head = f"{len(verdicts) - len(bad)}/{len(verdicts)} statements supported"
        return head + (f"; e.g. unsupported: {_cut(bad[0])}" if bad else "")
    if metric == "answer_relevancy" and outputs:
        qs = [o["output"].get("question", "") for o in outputs]
        flags = sum(bool(o["output"].get("noncommittal")) for o in outputs)
        return f"questions written: {' | '.join(_cut(q, 60) for q in qs)}; noncommittal {flags}/{len(qs)}"
    if metric == "context_precision" and outputs:
        return "useful verdicts in retrieval order: " + "".join(
            str(o["output"].get("verdict")) for o in outputs
        )
    if metric == "context_recall" and outputs:
        cls = last.get("classifications") or []
        bad = [c.get("statement", "") for c in cls if not c.get("attributed")]
        head = f"{len(cls) - len(bad)}/{len(cls)} reference statements attributed"
        return head + (f"; e.g. not: {_cut(bad[0])}" if bad else "")
    return "no judge output"


def _cut(text: str, n: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def join(samples: Sequence[Mapping[str, Any]], scored: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per sample scored by ragas: both sides' scores, reasons and cost, and ragas' judge notes."""
    by_id = {str(s["id"]): s for s in samples}
    rows = []
    for r in scored:
        s = by_id.get(str(r["id"]))
        if s is None:
            continue
        ours = s.get("medcite") or {}
        rows.append(
            {
                "id": str(r["id"]),
                "dataset": s.get("dataset"),
                "mode": s.get("mode"),
                "medcite": {m: ours.get("scores", {}).get(m) for m in METRICS},
                "medcite_reasons": ours.get("reasons") or {},
                "ragas": {m: r.get("scores", {}).get(m) for m in METRICS if m in r.get("scores", {})},
                "ragas_reasons": r.get("reasons") or {},
                "ragas_notes": {
                    m: judge_note(m, r.get("judge", {}).get(m) or []) for m in r.get("judge", {})
                },
                "ragas_judge": r.get("judge") or {},
                "medcite_seconds": ours.get("judge_seconds"),
                "ragas_seconds": (r.get("seconds") or {}).get("total"),
                "ragas_tokens": (r.get("tokens") or {}).get("total"),
            }
        )
    return rows


def _licensed(dataset: Any) -> bool:
    """BioASQ text may not be redistributed (BioASQ terms of use): none of it goes in a report."""
    return str(dataset or "").startswith("bioasq")


def without_licensed_text(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` fit to commit: for a BioASQ sample, ragas' raw judge replies (they restate the
    reference answer) and the reference statements quoted in the notes are left out."""
    if not _licensed(row.get("dataset")):
        return row
    notes = dict(row["ragas_notes"])
    if "context_recall" in notes:
        notes["context_recall"] = notes["context_recall"].split("; e.g. not:")[0]
    return {**row, "ragas_judge": {}, "ragas_notes": notes}


def metric_summary(
    rows: Sequence[Mapping[str, Any]], metric: str, top: int = 3, seed: int = 0
) -> dict[str, Any]:
    """Correlations (with intervals), means, NaN counts and the largest disagreements for one metric."""
    rows = [r for r in rows if metric in r["ragas"]]
    ours = np.array([_value(r["medcite"].get(metric)) for r in rows])
    theirs = np.array([_value(r["ragas"].get(metric)) for r in rows])
    both = np.isfinite(ours) & np.isfinite(theirs)
    x, y = ours[both], theirs[both]

    def mean(v: np.ndarray) -> float | None:
        v = v[np.isfinite(v)]
        return float(v.mean()) if len(v) else None

    gaps = sorted(
        (abs(a - b), i) for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if both[i] and a != b
    )
    worst = [rows[i] for _, i in reversed(gaps[-top:])] if top else []
    return {
        "n": len(rows),
        "n_pairs": int(both.sum()),
        "spearman": spearman(x, y),
        "spearman_ci": bootstrap_ci(x, y, spearman, seed=seed),
        "pearson": pearson(x, y),
        "pearson_ci": bootstrap_ci(x, y, pearson, seed=seed),
        "mean_medcite": mean(ours),
        "mean_ragas": mean(theirs),
        "mean_medcite_paired": mean(x),
        "mean_ragas_paired": mean(y),
        "nan_medcite": _nan_reasons(rows, ours, "medcite_reasons", metric),
        "nan_ragas": _nan_reasons(rows, theirs, "ragas_reasons", metric),
        "disagreements": [
            {
                "id": r["id"],
                "medcite": r["medcite"][metric],
                "ragas": r["ragas"][metric],
                "ragas_judge": r["ragas_notes"].get(metric, ""),
            }
            for r in worst
        ],
    }


def _nan_reasons(
    rows: Sequence[Mapping[str, Any]], values: np.ndarray, side: str, metric: str
) -> dict[str, int]:
    pairs = zip(rows, values, strict=True)
    return dict(Counter(r[side].get(metric, "no score") for r, v in pairs if not math.isfinite(v)))


def cost_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-sample judge cost of each side: median and mean seconds, ragas' tokens."""

    def stats(values: Iterable[Any]) -> dict[str, float | None]:
        v = np.array([float(x) for x in values if isinstance(x, int | float)])
        return {"median": float(np.median(v)), "mean": float(v.mean()), "n": len(v)} if len(v) else {}

    tokens = [r["ragas_tokens"] or {} for r in rows]
    return {
        "medcite_seconds": stats(r["medcite_seconds"] for r in rows),
        "ragas_seconds": stats(r["ragas_seconds"] for r in rows),
        "ragas_prompt_tokens": stats(t.get("prompt") for t in tokens),
        "ragas_completion_tokens": stats(t.get("completion") for t in tokens),
        "ragas_calls": stats(t.get("calls") for t in tokens),
    }


def _num(x: Any, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"


def _ci(pair: Sequence[float]) -> str:
    return f"[{_num(pair[0], 2)}, {_num(pair[1], 2)}]"


def _reasons(counts: Mapping[str, int]) -> str:
    return "; ".join(f"{_cut(k, 60)} ({v})" for k, v in counts.items()) or "–"


METHOD = (
    "Both sides judge the same inputs: the question, the answer without its `[n]` markers, the passages "
    "the chain retrieved (medcite reads the first 5, each cut to 1,200 characters; ragas all of them, "
    "whole) and the reference answer. medcite: `evals/engine/judge/answer_quality.py` inside the eval run, "
    "Qwen2.5-Coder-1.5B-Instruct Q4_K_M in process, yes/no from next-token probabilities. ragas 0.4.3: "
    "`evals/ragas_env/score.py` in `.venv-ragas`, the same GGUF behind llama-cpp-python's "
    "OpenAI-compatible server (`llm_factory`, JSON mode), all-MiniLM-L6-v2 for answer relevancy on both "
    "sides. Abstentions are included for their passages: medcite leaves an abstention's faithfulness and "
    "relevancy undefined (its text is medcite's notice, not an answer), ragas scores the notice like any "
    "answer, so those two metrics are compared on answered items only. BioASQ questions, references and "
    "ragas' raw replies on them are left out of the files (BioASQ terms of use)."
)


def _agreement_lines(summary: Mapping[str, Any]) -> list[str]:
    """The title, coverage, method and the per-metric agreement table with its note."""
    out = [
        "# ragas itself vs medcite's own answer-quality metrics",
        "",
        f"Samples exported from the runs: {summary['n_samples']}; "
        f"scored by ragas so far: {summary['n_scored']} "
        f"(the run and the ragas scorer were still going when this was written; rerun the report command "
        "in docs/evaluation.md, 'ragas itself', to cover more). Scored samples by dataset and answer mode: "
        + (", ".join(f"{k} {v}" for k, v in summary.get("scored_by", {}).items()) or "none")
        + ".",
        "",
        METHOD,
        "",
        "| metric | pairs | Spearman [95% CI] | Pearson [95% CI] | mean medcite | mean ragas | "
        "mean medcite (pairs) | mean ragas (pairs) | NaN medcite | NaN ragas |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m, s in summary["metrics"].items():
        out.append(
            f"| {m} | {s['n_pairs']} | {_num(s['spearman'], 2)} {_ci(s['spearman_ci'])} | "
            f"{_num(s['pearson'], 2)} {_ci(s['pearson_ci'])} | {_num(s['mean_medcite'])} | "
            f"{_num(s['mean_ragas'])} | {_num(s['mean_medcite_paired'])} | {_num(s['mean_ragas_paired'])} | "
            f"{sum(s['nan_medcite'].values())} | {sum(s['nan_ragas'].values())} |"
        )
    out += [
        "",
        "Correlations need 3 pairs and some spread on both sides ('–' otherwise); intervals are",
        "percentile bootstrap intervals over samples (2,000 resamples, seed 0).",
        "",
    ]
    return out


def _nan_lines(per: Mapping[str, Any]) -> list[str]:
    out = ["## NaN reasons", ""]
    for m, s in per.items():
        out.append(f"- {m}: medcite {_reasons(s['nan_medcite'])}; ragas {_reasons(s['nan_ragas'])}")
    return out


def _cost_lines(summary: Mapping[str, Any]) -> list[str]:
    """Each side's judge seconds per sample and ragas' tokens, then the timing note."""
    cost = summary["cost"]
    ms, rs = cost["medcite_seconds"], cost["ragas_seconds"]
    return [
        "",
        "## Cost per sample",
        "",
        "| | median s | mean s | prompt tokens (median) | completion tokens (median) | calls (median) |",
        "|---|---|---|---|---|---|",
        f"| medcite (4 metrics + citation metrics, judge_seconds) | {_num(ms.get('median'), 1)} | "
        f"{_num(ms.get('mean'), 1)} | not recorded | not recorded | not recorded |",
        f"| ragas 0.4.3 (4 metrics) | {_num(rs.get('median'), 1)} | {_num(rs.get('mean'), 1)} | "
        f"{_num(cost['ragas_prompt_tokens'].get('median'), 0)} | "
        f"{_num(cost['ragas_completion_tokens'].get('median'), 0)} | "
        f"{_num(cost['ragas_calls'].get('median'), 0)} |",
        "",
        summary.get("timing_note", ""),
        "",
    ]


def _disagreement_lines(per: Mapping[str, Any]) -> list[str]:
    """Per metric, the samples where the two sides differ most, with what ragas' judge said."""
    out = ["## Where they disagree most", ""]
    for m, s in per.items():
        out.append(f"### {m}\n")
        for d in s["disagreements"]:
            out.append(
                f"- `{d['id']}`: medcite {_num(d['medcite'], 2)}, ragas {_num(d['ragas'], 2)}; "
                f"ragas' judge: {d['ragas_judge']}"
            )
        out.append("" if s["disagreements"] else "(no pair where the two differ)\n")
    return out


def render_markdown(summary: Mapping[str, Any]) -> str:
    """The report: coverage, agreement table, NaNs, cost, then the largest disagreements."""
    per = summary["metrics"]
    out = _agreement_lines(summary) + _nan_lines(per) + _cost_lines(summary) + _disagreement_lines(per)
    return "\n".join(out).rstrip() + "\n"


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def build_report(
    samples_path: Path, scores_path: Path, out_dir: Path, timing_note: str = ""
) -> dict[str, Any]:
    """Join, summarise and write ``report.md`` and ``samples.json`` under ``out_dir``."""
    samples = read_jsonl(samples_path)
    scored = read_jsonl(scores_path) if scores_path.is_file() else []
    rows = [without_licensed_text(r) for r in join(samples, scored)]
    questions = {str(s["id"]): s.get("question") for s in samples if not _licensed(s.get("dataset"))}
    summary = {
        "n_samples": len(samples),
        "n_scored": len(rows),
        "scored_by": {
            f"{k[0]}, {k[1]}": v
            for k, v in sorted(Counter((str(r["dataset"]), str(r["mode"])) for r in rows).items())
        },
        "metrics": {m: metric_summary(rows, m) for m in METRICS},
        "cost": cost_summary(rows),
        "timing_note": timing_note,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.md").write_text(render_markdown(summary), encoding="utf-8")
    per_sample = [{**r, "question": questions.get(r["id"])} for r in rows]
    (out_dir / "samples.json").write_text(
        json.dumps(
            finite({"summary": summary, "samples": per_sample}), indent=1, ensure_ascii=False, allow_nan=False
        )
        + "\n",
        encoding="utf-8",
    )
    return summary


TIMING_NOTE = (
    "Timings: 2 shared CPU cores; the medcite eval run (generation and its own judge) and the "
    "ragas judge server (llama.cpp, 1 thread) competed for them, so seconds are upper bounds and "
    "comparable only as orders of magnitude."
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="medcite study ragas-compare", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="samples JSONL for the ragas scorer from a medcite answer run")
    ex.add_argument("run_dirs", type=Path, nargs="+", help="one or more run directories, then OUT")
    ex.add_argument("--modes", nargs="*", default=[], help="answer modes to export, e.g. rag (default: all)")
    rp = sub.add_parser("report", help="join medcite's and ragas' scores into report.md + samples.json")
    rp.add_argument("samples", type=Path)
    rp.add_argument("scores", type=Path)
    rp.add_argument("out_dir", type=Path)
    args = p.parse_args(argv)
    if args.command == "export":
        *runs, out = args.run_dirs
        if not runs:
            p.error("export needs at least one run directory and the output file")
        exported = [s for run in runs for s in export_samples(run, Paths.from_env(), modes=args.modes)]
        samples = unique_by_id(exported)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
        tmp.replace(out)
        print(f"{len(samples)} samples from {len(runs)} run(s) written to {out}")
    else:
        summary = build_report(args.samples, args.scores, args.out_dir, TIMING_NOTE)
        print(f"report on {summary['n_scored']} of {summary['n_samples']} samples written to {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
