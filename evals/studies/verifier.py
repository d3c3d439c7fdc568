"""How far the support verifier can be trusted, measured on the BioASQ support set.

    medcite study verifier --out docs/results/support-verifier [--model none]

Scores every pair of ``evals.datasets.support_set`` with the product's ``SupportVerifier``: the heuristic
(embedding cosine, lexical coverage, number check), the trained support model (``--model``: a
model folder, default the shipped one; ``none`` skips it). (A sample scored with a local LLM
pair judge, 2026-11-24, is kept in ``report-2026-11-24-judge-sample.md``; the judge is gone.)
Reports, on the test split (BioASQ 11B): ROC-AUC; precision and recall at the profiles'
threshold (0.5) and at the threshold chosen on dev for recall 0.80; and per pair kind the share
of unsupported pairs caught (scored under the threshold). The trained model never saw a test
question, nor a dev one (``training/support.py``); its test perturbations come from the same
families as its training ones, except direction flips (``antonym``), which it was not trained on.
Writes ``scores.jsonl`` (question ids, kinds, labels, signals, scores: no text), ``report.json``
and ``report.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths
from evals.datasets.support_set import KINDS, SupportPair, build_pairs, nearest_by_embedding, read_questions
from evals.metrics.classification import precision_recall, roc_auc, threshold_for_recall
from rag.gate.verify import PairSupport, SupportVerifier

PROFILE_THRESHOLD = 0.5
TARGET_RECALL = 0.80
BATCH = 48


def score_all(verifier: SupportVerifier, pairs: Sequence[SupportPair], what: str) -> list[PairSupport]:
    """Scores in batches (one embedding call each), with a progress bar."""
    from tqdm import tqdm

    out: list[PairSupport] = []
    for at in tqdm(range(0, len(pairs), BATCH), desc=what, unit="batch"):
        out.extend(verifier.score_pairs([(p.claim, p.passage) for p in pairs[at : at + BATCH]]))
    return out


def summarise(
    pairs: Sequence[SupportPair], scores: Sequence[float] | np.ndarray, dev_threshold: float | None
) -> dict[str, Any]:
    """ROC-AUC, P/R at the profile threshold (and at the dev one), catch rate per kind."""
    labels = np.array([p.label for p in pairs])
    s = np.array(scores, dtype=np.float64)
    out: dict[str, Any] = {
        "pairs": len(pairs),
        "supported": int(labels.sum()),
        "roc_auc": roc_auc(s, labels),
        "at_profile_threshold": precision_recall(s, labels, PROFILE_THRESHOLD),
    }
    oracle = threshold_for_recall(s, labels, TARGET_RECALL)  # chosen on these scores: an upper bound
    out["precision_at_recall_0.80"] = precision_recall(s, labels, oracle)
    if dev_threshold is not None:
        out["at_dev_threshold"] = precision_recall(s, labels, dev_threshold)
    kinds = np.array([p.kind for p in pairs])
    out["by_kind"] = {}
    for kind in KINDS:
        mask = kinds == kind
        if mask.any():
            below = s[mask] < PROFILE_THRESHOLD
            entry = {"pairs": int(mask.sum()), "mean_score": float(s[mask].mean())}
            if kind == "own":
                entry["accepted"] = float(np.mean(~below))
            else:
                entry["caught"] = float(np.mean(below))
            if dev_threshold is not None:
                at_dev = s[mask] >= dev_threshold
                key = "accepted_at_dev_threshold" if kind == "own" else "caught_at_dev_threshold"
                entry[key] = float(np.mean(at_dev if kind == "own" else ~at_dev))
            out["by_kind"][kind] = entry
    return out


def _row(pair: SupportPair, score: PairSupport) -> dict[str, Any]:
    row: dict[str, Any] = {"qid": pair.qid, "split": pair.split, "kind": pair.kind, "label": pair.label}
    row.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(score).items()})
    row["heuristic"] = round(score.heuristic, 4)
    return row


def _verifier_report(pairs: Sequence[SupportPair], support: np.ndarray) -> dict[str, Any]:
    """Dev and test summaries of one verifier's scores, the threshold chosen on dev."""
    dev = [i for i, p in enumerate(pairs) if p.split == "dev"]
    test = [i for i, p in enumerate(pairs) if p.split == "test"]
    dev_threshold = threshold_for_recall(support[dev], [pairs[i].label for i in dev], TARGET_RECALL)
    return {
        "dev_threshold_for_recall_0.80": dev_threshold,
        "dev": summarise([pairs[i] for i in dev], support[dev], None),
        "test": summarise([pairs[i] for i in test], support[test], dev_threshold),
    }


PAIRED = ("roc_auc", "precision_at_threshold", "recall_at_threshold")


def paired_by_question(
    qids: Sequence[str],
    labels: Sequence[int],
    a: np.ndarray,
    b: np.ndarray,
    t_a: float,
    t_b: float,
    *,
    resamples: int = 2000,
    seed: int = 13,
) -> dict[str, Any]:
    """B minus A in ROC-AUC, precision and recall (each at its own threshold), with 95% intervals.

    Pairs of one question share a claim and a passage, so they are not independent: the bootstrap
    resamples questions with replacement (a cluster bootstrap), every pair of a drawn question
    coming along, both verifiers' scores kept together.
    """
    y = np.asarray(labels, dtype=np.int64)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(qids):
        groups.setdefault(q, []).append(i)
    members = list(groups.values())

    def stats(rows: np.ndarray) -> np.ndarray:
        pa, pb = precision_recall(a[rows], y[rows], t_a), precision_recall(b[rows], y[rows], t_b)
        return np.array(
            [
                roc_auc(b[rows], y[rows]) - roc_auc(a[rows], y[rows]),
                pb["precision"] - pa["precision"],
                pb["recall"] - pa["recall"],
            ]
        )

    rng = np.random.default_rng(seed)
    draws = np.array(
        [
            stats(np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))]))
            for _ in range(resamples)
        ]
    )
    point = stats(np.arange(len(y)))
    out: dict[str, Any] = {"questions": len(members), "pairs": len(y), "resamples": resamples}
    for k, name in enumerate(PAIRED):
        low, high = np.nanquantile(draws[:, k], [0.025, 0.975])
        out[name] = {"difference": float(point[k]), "ci95": [float(low), float(high)]}
    return out


def _paired(rows: Sequence[dict[str, Any]], report: dict[str, Any]) -> dict[str, Any]:
    """The trained model against the heuristic on the test pairs, at their dev thresholds."""
    test = [r for r in rows if r["split"] == "test"]
    key = "dev_threshold_for_recall_0.80"
    return paired_by_question(
        [r["qid"] for r in test],
        [r["label"] for r in test],
        np.array([r["heuristic"] for r in test]),
        np.array([r["support"] for r in test]),
        report["heuristic"][key],
        report["trained"][key],
    )


def run(paths: Paths, out: Path, *, seed: int, dev_questions: int, model: Path | None) -> dict[str, Any]:
    from indexes.dense.embedder import MiniLmEmbedder

    started = time.perf_counter()
    embedder = MiniLmEmbedder()
    questions = read_questions(paths.source_data, dev_questions=dev_questions, seed=seed)
    pairs = build_pairs(questions, nearest_by_embedding(embedder.embed), seed=seed)
    trained = None
    if model is not None:
        from rag.gate.support_model import TrainedSupport

        trained = TrainedSupport(model)
    what = "verifier (heuristic" + (" and trained model)" if trained else ")")
    heuristic = score_all(SupportVerifier(embedder, model=trained), pairs, what)
    report: dict[str, Any] = {
        "questions": {s: sum(q.split == s for q in questions) for s in ("dev", "test")},
        "heuristic": _verifier_report(pairs, np.array([s.heuristic for s in heuristic])),
    }
    if trained is not None:
        report["trained"] = _verifier_report(pairs, np.array([s.support for s in heuristic]))
        report["trained"]["model"] = {
            "path": str(trained.folder),
            "adapter_sha256": trained.manifest["adapter_sha256"],
            "threshold": trained.threshold,
        }
    report["seconds"] = round(time.perf_counter() - started, 1)
    command = (
        f"medcite study verifier --out {out} --seed {seed}"
        f" --dev-questions {dev_questions} --model {model or 'none'}"
    )
    report["environment"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "command": command,
    }
    rows = [_row(pair, score) for pair, score in zip(pairs, heuristic, strict=True)]
    if trained is not None:
        report["paired_test"] = _paired(rows, report)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "scores.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    _write(out, report)
    return report


def _write(out: Path, report: dict[str, Any]) -> None:
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")


def add_paired(out: Path) -> dict[str, Any]:
    """Add the paired comparison to a finished run's report from its ``scores.jsonl`` (no rescoring)."""
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    if "trained" not in report:
        raise ValueError(f"{out}/report.json has no trained-model scores to compare; rerun with --model")
    with (out / "scores.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    report["paired_test"] = _paired(rows, report)
    _write(out, report)
    return report


def _pr(entry: dict[str, Any]) -> str:
    return f"{entry['precision']:.3f} / {entry['recall']:.3f}"


def _by_kind(test: dict[str, Any], verifiers: list[tuple[str, Any]]) -> list[str]:
    """The per-kind table."""
    lines = [
        "",
        "The dev threshold is the highest score keeping recall 0.80 on the dev split; the last column "
        "picks that threshold on the test split itself (an upper bound, not a result).",
        "",
        "Share of each pair kind on the right side of the threshold (own: accepted; others: caught), "
        "at 0.5 and at the dev threshold:",
        "",
        "| kind | pairs | " + " | ".join(f"{n} (0.5) | {n} (dev t)" for n, _ in verifiers) + " |",
        "|---|---|" + "---|---|" * len(verifiers),
    ]
    for kind, e in test["by_kind"].items():
        row = f"| {kind} | {e['pairs']} |"
        for _, entry in verifiers:
            k = entry["test"]["by_kind"][kind]
            at_dev = k.get("accepted_at_dev_threshold", k.get("caught_at_dev_threshold"))
            row += f" {k.get('accepted', k.get('caught')):.3f} | {at_dev:.3f} |"
        lines.append(row)
    return lines


def markdown(report: dict[str, Any]) -> str:
    test = report["heuristic"]["test"]
    names = (("heuristic", "heuristic"), ("trained model", "trained"))
    verifiers = [(name, report[key]) for name, key in names if key in report]
    lines = [
        "# Support verifier on the BioASQ support set",
        "",
        f"Questions: dev {report['questions']['dev']} (BioASQ 7B-10B sample), "
        f"test {report['questions']['test']} "
        f"(BioASQ 11B). Test pairs: {test['pairs']}, {test['supported']} supported. How the pairs are made: "
        "`evals/datasets/support_set.py`. Command: `" + report["environment"]["command"] + "`.",
        "",
        "| verifier (test split) | pairs | ROC-AUC | P / R at 0.5 | P / R at dev threshold "
        "| P at R 0.80 (oracle) |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in verifiers:
        t = entry["test"]
        lines.append(
            f"| {name} | {t['pairs']} | {t['roc_auc']:.3f} | {_pr(t['at_profile_threshold'])} | "
            f"{_pr(t['at_dev_threshold'])} (t={entry['dev_threshold_for_recall_0.80']:.3f}) | "
            f"{t['precision_at_recall_0.80']['precision']:.3f} |"
        )
    paired = report.get("paired_test")
    if paired:
        diffs = [
            f"{k.replace('_', ' ')} {paired[k]['difference']:+.3f} "
            f"({paired[k]['ci95'][0]:+.3f}..{paired[k]['ci95'][1]:+.3f})"
            for k in PAIRED
        ]
        n, questions = paired["resamples"], paired["questions"]
        lines += [
            "",
            "Trained model minus heuristic on the test pairs, each at its dev threshold (95% "
            f"intervals, {n} bootstrap resamples of the {questions} questions): " + ", ".join(diffs) + ".",
            "",
        ]
    lines += _by_kind(test, verifiers)
    lines += ["", f"Run time {report['seconds']:.0f} s on {report['environment']['machine']}.", ""]
    return "\n".join(lines)


def _model_arg(value: str | None) -> Path | None:
    from rag.gate.support_model import SHIPPED_SUPPORT_MODEL
    from rag.rerank.adapter import MANIFEST_FILE

    if value == "none":
        return None
    if value is None:
        return SHIPPED_SUPPORT_MODEL if (SHIPPED_SUPPORT_MODEL / MANIFEST_FILE).is_file() else None
    return Path(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/support-verifier"))
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--dev-questions", type=int, default=300)
    parser.add_argument(
        "--model", default=None, help="support model folder (default: the shipped one; none: heuristic only)"
    )
    parser.add_argument(
        "--paired-only", action="store_true", help="add the paired comparison to --out's report, no rescoring"
    )
    args = parser.parse_args(argv)
    if args.paired_only:
        print(markdown(add_paired(args.out)))
        return 0
    model = _model_arg(args.model)
    report = run(
        Paths.from_env(),
        args.out,
        seed=args.seed,
        dev_questions=args.dev_questions,
        model=model,
    )
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
