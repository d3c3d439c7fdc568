"""How far the support verifier can be trusted, measured on the BioASQ support set.

    python -m evals.verifier_eval --out docs/results/support-verifier [--judge-pairs 300]

Scores every pair of ``evals.support_set`` with the product's ``SupportVerifier`` (heuristic:
embedding cosine, lexical coverage, number check) and, on a seeded sample of test pairs
stratified by kind, with the local LLM judge as well (the ``verify.llm_judge`` profile option).
Reports, on the test split (BioASQ 11B): ROC-AUC; precision and recall at the profiles'
threshold (0.5) and at the threshold chosen on dev for recall 0.80; and per pair kind the share
of unsupported pairs caught (scored under the threshold). Writes ``scores.jsonl`` (question
ids, kinds, labels, signals, scores: no text), ``report.json`` and ``report.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from evals.metrics.classification import precision_recall, roc_auc, threshold_for_recall
from evals.support_set import KINDS, SupportPair, build_pairs, nearest_by_embedding, read_questions
from rag.config import Paths
from rag.generate.verify import PairSupport, SupportVerifier

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


def judge_sample(pairs: Sequence[SupportPair], size: int, seed: int) -> list[int]:
    """Indices of ``size`` test pairs, as many of each kind as there are kinds (fewer where short)."""
    rng = random.Random(seed)
    by_kind: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        if p.split == "test":
            by_kind.setdefault(p.kind, []).append(i)
    share = max(1, size // max(1, len(by_kind)))
    picked = [rng.sample(by_kind[kind], min(share, len(by_kind[kind]))) for kind in sorted(by_kind)]
    return sorted(i for indices in picked for i in indices)


def summarise(
    pairs: Sequence[SupportPair], scores: Sequence[float] | np.ndarray, dev_threshold: float | None
) -> dict[str, Any]:
    """ROC-AUC, P/R at the profile threshold (and at the dev one), catch rate per kind."""
    labels = np.array([p.label for p in pairs])
    s = np.array(scores, dtype=np.float64)
    out: dict[str, Any] = {
        "pairs": len(pairs), "supported": int(labels.sum()), "roc_auc": roc_auc(s, labels),
        "at_profile_threshold": precision_recall(s, labels, PROFILE_THRESHOLD),
    }  # fmt: skip
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


def _row(pair: SupportPair, score: PairSupport, judged: PairSupport | None) -> dict[str, Any]:
    row: dict[str, Any] = {"qid": pair.qid, "split": pair.split, "kind": pair.kind, "label": pair.label}
    row.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(score).items()})
    if judged is not None:
        row["judge"] = None if judged.judge is None else round(judged.judge, 4)
        row["support_with_judge"] = round(judged.support, 4)
    return row


def run(paths: Paths, out: Path, *, judge_pairs: int, seed: int, dev_questions: int) -> dict[str, Any]:
    from indexes.embedder import SentenceTransformerEmbedder

    started = time.perf_counter()
    embedder = SentenceTransformerEmbedder()
    questions = read_questions(paths.source_data, dev_questions=dev_questions, seed=seed)
    pairs = build_pairs(questions, nearest_by_embedding(embedder.embed), seed=seed)
    heuristic = score_all(SupportVerifier(embedder), pairs, "verifier (heuristic)")
    split = np.array([p.split for p in pairs])
    support = np.array([s.support for s in heuristic])
    dev = [i for i in range(len(pairs)) if split[i] == "dev"]
    test = [i for i in range(len(pairs)) if split[i] == "test"]
    dev_threshold = threshold_for_recall(support[dev], [pairs[i].label for i in dev], TARGET_RECALL)
    report: dict[str, Any] = {
        "questions": {s: sum(q.split == s for q in questions) for s in ("dev", "test")},
        "dev_threshold_for_recall_0.80": dev_threshold,
        "heuristic": {"dev": summarise([pairs[i] for i in dev], support[dev], None),
                      "test": summarise([pairs[i] for i in test], support[test], dev_threshold)},
    }  # fmt: skip
    judged: dict[int, PairSupport] = {}
    if judge_pairs:
        from rag.assemble import make_generator
        from rag.profile import load_profile

        generator = make_generator(load_profile("default").generator, paths)
        sample = judge_sample(pairs, judge_pairs, seed)
        with_judge = score_all(SupportVerifier(embedder, judge=generator), [pairs[i] for i in sample],
                               "verifier (with LLM judge)")  # fmt: skip
        judged = dict(zip(sample, with_judge, strict=True))
        sampled = [pairs[i] for i in sample]
        report["with_judge_sample"] = {
            "heuristic": summarise(sampled, [heuristic[i].support for i in sample], dev_threshold),
            "with_judge": summarise(sampled, [s.support for s in with_judge], None),
            "judge_alone": summarise(sampled, [s.judge or 0.0 for s in with_judge], None),
        }
    report["seconds"] = round(time.perf_counter() - started, 1)
    command = (f"python -m evals.verifier_eval --out {out} --judge-pairs {judge_pairs} --seed {seed}"
               f" --dev-questions {dev_questions}")  # fmt: skip
    report["environment"] = {"python": platform.python_version(), "machine": platform.machine(),
                             "command": command}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    with (out / "scores.jsonl").open("w", encoding="utf-8") as fh:
        for i, (pair, score) in enumerate(zip(pairs, heuristic, strict=True)):
            fh.write(json.dumps(_row(pair, score, judged.get(i))) + "\n")
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    return report


def _pr(entry: dict[str, Any]) -> str:
    return f"{entry['precision']:.3f} / {entry['recall']:.3f}"


def markdown(report: dict[str, Any]) -> str:
    test = report["heuristic"]["test"]
    lines = [
        "# Support verifier on the BioASQ support set",
        "",
        f"Questions: dev {report['questions']['dev']} (BioASQ 7B-10B sample), "
        f"test {report['questions']['test']} "
        f"(BioASQ 11B). Test pairs: {test['pairs']}, {test['supported']} supported. How the pairs are made: "
        "`evals/support_set.py`. Command: `" + report["environment"]["command"] + "`.",
        "",
        "| verifier (test split) | pairs | ROC-AUC | P / R at 0.5 | P / R at dev threshold |",
        "|---|---|---|---|---|",
        f"| heuristic (default profile) | {test['pairs']} | {test['roc_auc']:.3f} | "
        f"{_pr(test['at_profile_threshold'])} | {_pr(test['at_dev_threshold'])} "
        f"(t={report['dev_threshold_for_recall_0.80']:.3f}) |",
    ]
    sample = report.get("with_judge_sample")
    if sample:
        for name in ("heuristic", "with_judge", "judge_alone"):
            e = sample[name]
            lines.append(f"| {name.replace('_', ' ')} (judge sample) | {e['pairs']} | {e['roc_auc']:.3f} | "
                         f"{_pr(e['at_profile_threshold'])} | |")  # fmt: skip
    lines += [
        "",
        "Share of each pair kind on the right side of the 0.5 threshold (own: accepted; others: caught):",
        "",
        "| kind | pairs | heuristic | " + ("heuristic (sample) | with judge (sample) |" if sample else ""),
        "|---|---|---|" + ("---|---|" if sample else ""),
    ]
    for kind, e in test["by_kind"].items():
        value = e.get("accepted", e.get("caught"))
        row = f"| {kind} | {e['pairs']} | {value:.3f} |"
        if sample and kind in sample["with_judge"]["by_kind"]:
            h, j = sample["heuristic"]["by_kind"][kind], sample["with_judge"]["by_kind"][kind]
            row += f" {h.get('accepted', h.get('caught')):.3f} | {j.get('accepted', j.get('caught')):.3f} |"
        lines.append(row)
    lines += ["", f"Run time {report['seconds']:.0f} s on {report['environment']['machine']}.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/support-verifier"))
    parser.add_argument("--judge-pairs", type=int, default=0, help="test pairs scored with the LLM judge too")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--dev-questions", type=int, default=300)
    args = parser.parse_args(argv)
    report = run(Paths.from_env(), args.out, judge_pairs=args.judge_pairs, seed=args.seed,
                 dev_questions=args.dev_questions)  # fmt: skip
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
