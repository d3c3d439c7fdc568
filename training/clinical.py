"""Fit the medical-question model (``rag/reading/clinical.py``) and choose its threshold on dev.

    medcite train clinical            # writes rag/reading/weights/clinical/

Medical (label 1): the clinician training set (``evals/datasets/clinician_train``, never scored),
BioASQ Task 7B-10B questions and a sample of MedQuAD questions, minus every held-out evaluation
question (``training.leakage``). Not medical (label 0): ``outside_questions_train.jsonl``
(chit-chat, general knowledge, homonyms; no far clinical topic, which is medical). Each class
weighs the same in the loss. Features: the default index's embedder's vector of the question.

On the dev parts only (the clinician dev part, the outside dev part): the L2 penalty of a small
grid and the threshold, the highest that stops no answerable or near-corpus clinician dev
question (those the chain answers or shows closest lines for). The test parts are never read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths
from evals.datasets.clinician import TRAIN_DIR, load_clinician, load_training, training_sha256
from evals.datasets.outside import load_outside, outside_file
from indexes.files import sha256_file
from rag.reading.clinical import SHIPPED, ClinicalModel
from training.calibrate import fit_logistic, sigmoid

L2_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.01, 0.96, 0.01))
BIOASQ_QUESTIONS = 2000
MEDQUAD_QUESTIONS = 2000
SEED = 13


def medical_questions(paths: Paths) -> dict[str, list[str]]:
    """The medical training questions by source (module docstring), held-out ones removed."""
    from corpora.sources.medquad import MedQuADSource
    from evals.datasets.bioasq import normalise
    from training.leakage import held_out_questions
    from training.pairs import PairStats, bioasq_training_questions, medquad_eligible

    held_out, stats, rng = held_out_questions(paths.source_data), PairStats(), random.Random(SEED)
    bioasq = [str(r["body"]) for r in bioasq_training_questions(paths.source_data, held_out, stats)]
    docs = list(MedQuADSource(paths.source_data / "medquad").documents())
    eligible, _ = medquad_eligible(docs, held_out, set(), stats)
    medquad = sorted({str(d.metadata.get("question", "")).strip() for d in eligible} - {""})
    banned = held_out.all()
    return {
        "clinician_train": [it.question for it in load_training()],
        "bioasq_train": rng.sample(bioasq, min(BIOASQ_QUESTIONS, len(bioasq))),
        "medquad": [
            q for q in rng.sample(medquad, min(MEDQUAD_QUESTIONS, len(medquad))) if normalise(q) not in banned
        ],
    }


def text_sha256(questions: list[str]) -> str:
    """The sha256 of the questions, one a line, as fitted on (BioASQ and MedQuAD are samples)."""
    return hashlib.sha256("\n".join(questions).encode("utf-8")).hexdigest()


def stopped(p: np.ndarray, threshold: float) -> int:
    return int((p < threshold).sum())


def choose(dev_medical: np.ndarray, dev_outside: dict[str, np.ndarray]) -> dict[str, Any]:
    """The highest threshold stopping no medical dev question, and what it stops of the outside."""
    safe = [t for t in THRESHOLDS if stopped(dev_medical, t) == 0]
    threshold = max(safe) if safe else THRESHOLDS[0]
    return {
        "threshold": threshold,
        "medical_stopped": stopped(dev_medical, threshold),
        "outside_stopped": {k: f"{stopped(p, threshold)}/{len(p)}" for k, p in dev_outside.items()},
        "outside_stopped_total": sum(stopped(p, threshold) for p in dev_outside.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SHIPPED)
    args = parser.parse_args()
    from rag.indexing import open_index

    paths = Paths.from_env()
    index, embedder = open_index(paths, "default", with_embedder=True)
    index.close()
    medical = medical_questions(paths)
    outside_train = load_outside("train")
    texts = [q for qs in medical.values() for q in qs] + [q.question for q in outside_train]
    y = np.array([1.0] * (len(texts) - len(outside_train)) + [0.0] * len(outside_train))
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    print(f"embedding {len(texts)} training questions", flush=True)
    x = embedder.embed(texts)
    dev_items = [it for it in load_clinician(part="dev") if it.kind in ("answerable", "near")]
    dev_x = embedder.embed([it.question for it in dev_items])
    outside_dev = load_outside("dev")
    kinds = sorted({q.kind for q in outside_dev if q.kind != "far"})
    outside_x = {k: embedder.embed([q.question for q in outside_dev if q.kind == k]) for k in kinds}
    grid = []
    for l2 in L2_GRID:
        w, b = fit_logistic(x, y, l2=l2, sample_weight=weight)
        row = choose(sigmoid(dev_x @ w + b), {k: sigmoid(v @ w + b) for k, v in outside_x.items()})
        grid.append({"l2": l2, **row, "weights": w, "bias": b})
        print(json.dumps({k: v for k, v in grid[-1].items() if k not in ("weights", "bias")}), flush=True)
    best = max(grid, key=lambda r: (r["outside_stopped_total"], r["threshold"]))
    model = ClinicalModel(np.asarray(best["weights"]), float(best["bias"]), embedder.fingerprint())
    train_p = sigmoid(x @ model.weights + model.bias)
    manifest = {
        "threshold": best["threshold"],
        "threshold_why": "the highest P(medical) stopping no answerable or near clinician dev question",
        "l2": best["l2"],
        "data": {
            "clinician_train": training_sha256(TRAIN_DIR),
            "outside_questions_train.jsonl": sha256_file(outside_file("train")),
            "outside_questions_dev.jsonl": sha256_file(outside_file("dev")),
        },
        "questions": {**{k: len(v) for k, v in medical.items()}, "outside_train": len(outside_train)},
        "questions_sha256": {k: text_sha256(v) for k, v in medical.items()},
        "outside_train_kinds": dict(Counter(q.kind for q in outside_train)),
        "train_accuracy": float(((train_p >= 0.5) == (y == 1)).mean()),
        "dev": [{k: v for k, v in r.items() if k not in ("weights", "bias")} for r in grid],
        "command": "medcite train clinical",
    }
    model.write(args.out, manifest)
    print(f"written to {args.out}: threshold {best['threshold']} (l2 {best['l2']})")


if __name__ == "__main__":
    main()
