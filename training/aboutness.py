"""Fit the aboutness model (``rag/reading/aboutness.py:AboutnessModel``) on the clinician dev part.

    medcite train aboutness            # writes rag/reading/weights/aboutness.json

Pairs: for each dev question of ``clinician-default`` (``evals/datasets/clinician.py``), the
first ``PAIRS_PER_QUESTION`` candidates the default profile retrieves (scored by its relevance
model; cached in ``DATA_DIR/cache/clinician-evidence.json``) that the other checks (subtype,
asked-for, population) leave to this judgement. Label 1: a passage that answers an answerable
question (its answering chunk, or a chunk of its guideline stating the key fact); label 0: any
passage found for a near-corpus or far unanswerable question. Other passages of answerable
questions are left out: they may be about the question without holding the answer.

Features (``aboutness.about_features``): the idf-weighted share of the question's concepts the
passage covers, the same over its specialist concepts, and the relevance model's probability.
A logistic regression with and without the last (``training.calibrate.fit_logistic``). The
threshold is the one that, with the profile's evidence threshold and ``keep``, maximises the
mean of two question-level rates on dev: answerable questions whose answering passage is kept and
judged about, and unanswerable ones none of whose kept passages is (so medcite abstains before
generating). The test part is never read here.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths
from core.types import Chunk
from evals.datasets.clinician import FROZEN_SHA256, ClinicianItem, file_sha256, key_fact_given, load_clinician
from rag.profile import VerifyConfig, default_profile
from rag.reading.aboutness import ABOUTNESS_MODEL, AboutnessModel, Logistic, about_features, missing
from rag.reading.question import ReadQuestion
from rag.reading.terms import Vocabulary, chunk_stems
from training.calibrate import fit_logistic, sigmoid

PAIRS_PER_QUESTION = 8
VARIANTS = {
    "with_relevance": ("coverage", "specialist_coverage", "relevance"),
    "without_relevance": ("coverage", "specialist_coverage"),
}
Candidates = dict[str, list[list[Any]]]  # question -> [[chunk_id, P(relevant)], ...] in retrieval order


@dataclass
class DevPart:
    """The clinician dev part as the fitting scripts read it: its items, every candidate's cached
    relevance, and the profile's assembled pipeline with the corpus vocabulary."""

    items: list[ClinicianItem]
    candidates: Candidates
    profile: Any  # rag.profile.Profile
    assembled: Any  # rag.assemble.Assembled
    vocabulary: Vocabulary

    @classmethod
    def load(cls, profile_name: str, paths: Paths) -> DevPart:
        from rag.assemble import assemble
        from rag.indexing import corpus_vocabulary
        from rag.profile import load_profile

        items = load_clinician(part="dev")
        candidates = scored_candidates(items, profile_name, paths)
        profile = load_profile(profile_name)
        assembled = assemble(profile, paths)
        return cls(items, candidates, profile, assembled, corpus_vocabulary(paths, assembled.index))

    def chunk_of(self, chunk_id: str) -> Chunk:
        return self.assembled.index.chunks.by_id(chunk_id)  # type: ignore[no-any-return]


def evidence_cache(paths: Paths) -> Path:
    return paths.data_dir / "cache" / "clinician-evidence.json"


def scored_candidates(items: Sequence[ClinicianItem], profile_name: str, paths: Paths) -> Candidates:
    """Every candidate the profile's reranker scores, per question, in retrieval order; read from
    the cache file when there, else computed (and saved every 25 questions)."""
    from rag.assemble import assemble
    from rag.profile import load_profile

    path = evidence_cache(paths)
    cache: Candidates = json.loads(path.read_text()) if path.is_file() else {}
    todo = [it for it in items if it.question not in cache]
    if todo:
        profile = load_profile(profile_name)
        assembled = assemble(profile, paths)
        open_ended = assembled.pipeline.with_changes(
            {"rerank": {"threshold": None, "keep": profile.rerank.candidates}}
        )
        start = time.perf_counter()
        for n, item in enumerate(todo, start=1):
            found = open_ended.evidence(item.question)
            cache[item.question] = [[h.chunk.chunk_id, h.score] for h in found.kept]
            if n % 25 == 0 or n == len(todo):
                print(f"scored {n}/{len(todo)} questions ({time.perf_counter() - start:.0f} s)", flush=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(cache))
    return cache


def answering(item: ClinicianItem, chunk: Chunk) -> bool:
    """Whether ``chunk`` answers ``item``: its answering passage, or a passage of an answering
    document that states the key fact."""
    if chunk.chunk_id == item.chunk_id:
        return True
    in_source = any(chunk.doc_id == s or chunk.doc_id.startswith(s + "/") for s in item.sources)
    return in_source and key_fact_given(item, chunk.text)


def pairs(
    items: Sequence[ClinicianItem],
    candidates: Candidates,
    chunk_of: Callable[[str], Chunk],
    vocabulary: Vocabulary,
) -> tuple[list[dict[str, float]], np.ndarray]:
    """Features (``about_features``, by name) and labels (module docstring)."""
    rows, labels = [], []
    for item in items:
        question = ReadQuestion.read(item.question, lambda: vocabulary)
        for chunk_id, relevance in candidates[item.question][:PAIRS_PER_QUESTION]:
            chunk = chunk_of(chunk_id)
            if missing(question, chunk, _checks("off")):  # another check decides this passage
                continue
            if item.answerable and not answering(item, chunk):
                continue
            rows.append(about_features(question.concepts, chunk_stems(chunk), relevance))
            labels.append(1.0 if item.answerable else 0.0)
    return rows, np.asarray(labels, dtype=np.float64)


def question_rates(
    items: Sequence[ClinicianItem],
    candidates: Candidates,
    chunk_of: Callable[[str], Chunk],
    read: Judgement,
    threshold: float,
    keep: int,
) -> dict[str, float]:
    """Reachable (answerable: an answering passage kept and about) and stopped (unanswerable: no
    kept passage about) as shares of each half, with the judgement ``read`` makes."""
    reachable = stopped = answerable = unanswerable = 0
    for item in items:
        lacks = read(item.question)
        kept = [(chunk_of(c), p) for c, p in candidates[item.question] if p >= threshold][:keep]
        about = [not lacks(c, p) for c, p in kept]
        if item.answerable:
            answerable += 1
            reachable += any(a and answering(item, c) for (c, _), a in zip(kept, about, strict=True))
        else:
            unanswerable += 1
            stopped += not any(about)
    return {"reachable": reachable / max(answerable, 1), "stopped": stopped / max(unanswerable, 1)}


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve: the chance a positive outranks a negative (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=ABOUTNESS_MODEL)
    args = parser.parse_args()
    paths = Paths.from_env()
    dev = DevPart.load(args.profile, paths)
    items, candidates, profile, chunk_of, vocabulary = (
        dev.items,
        dev.candidates,
        dev.profile,
        dev.chunk_of,
        dev.vocabulary,
    )
    rows, y = pairs(items, candidates, chunk_of, vocabulary)
    fitted: dict[str, dict[str, Any]] = {}
    variants: dict[str, Logistic] = {}
    for name, features in VARIANTS.items():
        x = np.asarray([[row[f] for f in features] for row in rows], dtype=np.float64)
        weights, bias = fit_logistic(x, y)
        variants[name] = Logistic(features, tuple(round(float(w), 6) for w in weights), round(float(bias), 6))
        fitted[name] = {
            "features": list(features),
            "weights": list(variants[name].weights),
            "bias": variants[name].bias,
            "pair_auc": round(auc(sigmoid(x @ weights + bias), y), 4),
        }
    evidence, keep = profile.rerank.threshold or 0.0, profile.rerank.keep
    curve = []
    for theta in np.round(np.arange(0.05, 0.96, 0.05), 2):
        model = AboutnessModel(
            variants["with_relevance"], variants["without_relevance"], threshold=float(theta)
        )
        read = _reader(vocabulary, model)
        rates = question_rates(items, candidates, chunk_of, read, evidence, keep)
        curve.append({"threshold": float(theta), **{k: round(v, 4) for k, v in rates.items()}})
    best = max(curve, key=lambda row: (row["reachable"] + row["stopped"], row["threshold"]))
    out = {
        **fitted,
        "threshold": best["threshold"],
        "manifest": {
            "data": "evals/datasets/clinician_questions.jsonl, dev part only",
            "data_sha256": file_sha256(),
            "frozen_sha256": FROZEN_SHA256,
            "pairs": len(y),
            "positives": int(y.sum()),
            "evidence_threshold": evidence,
            "keep": keep,
            "dev_curve": curve,
            "command": "python -m training.aboutness",
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "manifest"}, indent=1))
    print(
        f"threshold {best['threshold']}: reachable {best['reachable']:.3f}, "
        f"stopped {best['stopped']:.3f} (dev)"
    )


# a question -> what a passage (with its relevance) lacks to be about it
Judgement = Callable[[str], Callable[[Chunk, float | None], tuple[str, ...]]]


def _checks(about: str) -> VerifyConfig:
    """The default profile's checks with the aboutness rule ``about``, at the model's own threshold."""
    return default_profile().verify.model_copy(update={"about": about, "min_about": None})


def _reader(vocabulary: Vocabulary, model: AboutnessModel) -> Judgement:
    """Questions read with the judged rule and ``model`` in place of the shipped one."""
    judged = _checks("judged")

    def read(text: str) -> Callable[[Chunk, float | None], tuple[str, ...]]:
        question = ReadQuestion.read(text, lambda: vocabulary)
        return lambda chunk, relevance: missing(question, chunk, judged, relevance, model=model)

    return read


if __name__ == "__main__":
    main()
