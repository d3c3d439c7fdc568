"""``medcite models train-support``: BioASQ claims -> a support model folder (CPU, resumable).

Questions, split by question and year so nothing evaluated is trained on:

- **train**: BioASQ Task 7B-10B questions minus every held-out evaluation question
  (``training.leakage``: MIRAGE bioasq, BioASQ 11B, LiveQA, PubMedQA PQA-L), minus duplicated
  texts, minus the questions of the support set's dev split (``evals.datasets.support_set``, which
  chooses the threshold). ``tests/unit/training/test_support_training.py`` asserts no overlap.
- **dev**: the support set's dev split; picks the epoch, fits the calibration and the threshold.
  The test split (BioASQ 11B) is never read here; ``medcite study verifier`` reports on it.

Training pairs per claim (an ideal-answer sentence; every ideal answer of a train question, the
first only for dev and test), each against one passage window (``rag.gate.support_model.windows``):
``own`` (1, the best window of its gold passage); ``other`` / ``near`` (0, a random and the most
similar other question's passage); ``number``, ``negation``, ``direction`` (0, edited by rules and
word lists the test split does not use, :data:`TRAIN_DIRECTIONS`, so the test's pairs measure
whether the model learned what the edit means, not which words were edited); ``entity`` (0, the
exact answer swapped for another train question's).

Steps: pairs -> bottom layers cached (``training.fit.cache_bottom``) -> adapters trained
(``training.fit.train``, checkpointed) -> calibration on dev (logistic regression on the best
window's logit and the lexical coverage, ``rag.gate.support_model.calibrated``) -> the threshold
(the highest support, as the verifier computes it, keeping 0.80 of the supported dev pairs) ->
``model/adapter.safetensors`` and ``manifest.json``; copy ``model`` to ``rag/gate/weights/support-minilm``.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import require
from core.paths import Paths
from evals.datasets.bioasq import normalise
from evals.datasets.support_set import (
    Question,
    SupportPair,
    build_pairs,
    change_entity,
    change_negation,
    claims_of,
    exact_answers,
    gold_passage,
    nearest_by_embedding,
    read_questions,
    read_snippets,
)
from evals.metrics.classification import precision_recall, roc_auc, threshold_for_recall
from indexes.files import sha256_file
from indexes.text import tokenize
from training.calibrate import fit_logistic, reliability
from training.fit import FitConfig, cache_bottom, load_finished, logits_of, save_float16, train
from training.leakage import held_out_questions
from training.pairs import PairStats, bioasq_training_questions
from training.provenance import cost, data_hashes, reproduction

if TYPE_CHECKING:
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import PairTokenizer

TRAIN_KINDS = ("own", "other", "near", "number", "negation", "direction", "entity")
_DIRECTION_PAIRS = (
    ("elevated", "reduced"),
    ("elevation", "reduction"),
    ("enhances", "impairs"),
    ("enhanced", "impaired"),
    ("stimulates", "blocks"),
    ("raises", "lowers"),
    ("raised", "lowered"),
    ("rise", "fall"),
    ("excess", "deficiency"),
    ("accelerates", "slows"),
    ("accelerated", "slowed"),
    ("strengthens", "weakens"),
    ("sensitive", "resistant"),
    ("sensitivity", "resistance"),
    ("common", "rare"),
    ("early", "late"),
    ("beneficial", "detrimental"),
    ("protective", "harmful"),
    ("facilitates", "hinders"),
    ("maximum", "minimum"),
    ("above", "below"),
    ("before", "after"),
    ("present", "absent"),
    ("presence", "absence"),
    ("effective", "ineffective"),
    ("safe", "unsafe"),
    ("stable", "unstable"),
    ("frequent", "infrequent"),
    ("acute", "chronic"),
)
TRAIN_DIRECTIONS = {**dict(_DIRECTION_PAIRS), **{b: a for a, b in _DIRECTION_PAIRS}}
_DIRECTION = re.compile(
    r"\b(" + "|".join(sorted(TRAIN_DIRECTIONS, key=len, reverse=True)) + r")\b", re.IGNORECASE
)
DATA_FILES = (
    "bioasq_from_mirage/questions.jsonl",
    "bioasq_from_mirage/snippet_corpus.jsonl",
    "mirage/benchmark.json",
    "pubmedqa/ori_pqal.json",
)
TARGET_RECALL = 0.80


@dataclass(frozen=True)
class SupportConfig:
    seed: int = 13
    claims_per_question: int = 4  # per ideal answer
    dev_questions: int = 300  # the support set's dev sample (evals.studies.verifier's default)
    window_tokens: int = 128
    rank: int = 16
    alpha: float = 32.0


# --- training-only perturbations (the test split's rules are in evals.datasets.support_set) -------------

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
_AUXILIARY = re.compile(r"\b(is|are|was|were|can|could|may|might|should|will|would)\b", re.IGNORECASE)


def vary_number(claim: str, rng: random.Random) -> str | None:
    """A random number of the claim changed by +/-1..3, x10 or /10 (never doubled)."""
    matches = list(_NUMBER.finditer(claim))
    if not matches:
        return None
    match = rng.choice(matches)
    value = float(match.group(1))
    choices = [value + d for d in (1, 2, 3)] + [value - d for d in (1, 2, 3) if value - d > 0]
    choices += [value * 10, value / 10]
    new_value = rng.choice([c for c in choices if c != value * 2])
    new = str(int(new_value)) if new_value == int(new_value) else f"{new_value:.6g}"
    return claim[: match.start(1)] + new + claim[match.end(1) :]


def vary_negation(claim: str, rng: random.Random) -> str | None:
    """A negation removed (the test rule), or one added after a randomly chosen auxiliary."""
    changed = change_negation(claim)
    if changed is None or len(changed) < len(claim):  # nothing to do, or a negation removed
        return changed
    match = rng.choice(list(_AUXILIARY.finditer(claim)))
    return claim[: match.end()] + " not" + claim[match.end() :]


def vary_direction(claim: str, rng: random.Random) -> str | None:
    """A random direction word of the training list flipped (elevated -> reduced, ...)."""
    matches = list(_DIRECTION.finditer(claim))
    if not matches:
        return None
    match = rng.choice(matches)
    word = match.group(1)
    new = TRAIN_DIRECTIONS[word.lower()]
    new = new.capitalize() if word[0].isupper() else new
    return claim[: match.start(1)] + new + claim[match.end(1) :]


def every_claim(ideal: object, limit: int) -> tuple[str, ...]:
    """The claims of every ideal answer (``limit`` each), each once."""
    answers = ideal if isinstance(ideal, list) else [ideal]
    return tuple(dict.fromkeys(c for answer in answers for c in claims_of(answer, limit)))


def best_window(claim: str, windows: Sequence[str]) -> str:
    """The window holding most of the claim's content words (the first on ties)."""
    wanted = set(tokenize(claim))
    return max(windows, key=lambda w: len(wanted & set(tokenize(w))))


# --- questions ------------------------------------------------------------------------------------


def training_questions(
    paths: Paths, config: SupportConfig, stats: PairStats
) -> tuple[list[Question], list[Question]]:
    """(train, dev) questions; train excludes held-out, duplicated and dev questions (counted)."""
    held_out = held_out_questions(paths.source_data)
    dev = [
        q
        for q in read_questions(paths.source_data, dev_questions=config.dev_questions, seed=config.seed)
        if q.split == "dev"
    ]
    dev_ids, dev_texts = {q.qid for q in dev}, {normalise(q.body) for q in dev}
    snippets = read_snippets(paths.source_data)
    train: list[Question] = []
    for row in bioasq_training_questions(paths.source_data, held_out, stats):
        if str(row["id"]) in dev_ids or normalise(str(row["body"])) in dev_texts:
            stats.dropped["bioasq_support_dev"] = stats.dropped.get("bioasq_support_dev", 0) + 1
            continue
        claims = every_claim(row.get("ideal_answer"), config.claims_per_question)
        passage = gold_passage(str(row["id"]), [str(s) for s in row.get("snippet_ids", [])], snippets)
        if claims and passage is not None:
            train.append(
                Question(
                    str(row["id"]),
                    "train",
                    str(row["body"]),
                    claims,
                    exact_answers(row),
                    frozenset(str(p) for p in row.get("pmids", [])),
                    passage,
                )
            )
    stats.questions.update({"train": len(train), "dev": len(dev)})
    return train, dev


def training_pairs(
    questions: Sequence[Question], windows_of: Callable[[str], list[str]], nearest: dict[str, str], seed: int
) -> list[dict[str, Any]]:
    """Every ``TRAIN_KINDS`` pair for every claim (see the module docstring)."""
    rng = random.Random(seed)
    by_id = {q.qid: q for q in questions}
    entities = sorted({e for q in questions for e in q.exact if len(e) >= 3})
    out: list[dict[str, Any]] = []
    for q in questions:
        own = windows_of(q.passage.text)
        others = [o for o in questions if o.qid != q.qid and not (o.pmids & q.pmids)]
        for claim in q.claims:
            window = best_window(claim, own)
            candidates = [e for e in entities if e.lower() not in q.passage.text.lower()]
            entity = change_entity(claim, q.exact, rng.choice(candidates)) if q.exact and candidates else None
            other = rng.choice(others).passage.text
            near = by_id[nearest[q.qid]].passage.text if q.qid in nearest else None
            made = [
                ("own", claim, window),
                ("other", claim, best_window(claim, windows_of(other))),
                ("near", claim, None if near is None else best_window(claim, windows_of(near))),
                ("number", vary_number(claim, rng), window),
                ("negation", vary_negation(claim, rng), window),
                ("direction", vary_direction(claim, rng), window),
                ("entity", entity, window),
            ]
            for kind, text, passage in made:
                perturbed = kind not in ("own", "other", "near")
                if text is not None and passage is not None and not (perturbed and text == claim):
                    out.append(
                        {
                            "qid": q.qid,
                            "kind": kind,
                            "label": int(kind == "own"),
                            "claim": text,
                            "window": passage,
                        }
                    )
    return out


def precision_at_recall(scores: np.ndarray, labels: np.ndarray, recall: float = TARGET_RECALL) -> float:
    """Precision at the highest threshold that keeps ``recall`` of the supported pairs."""
    return float(precision_recall(scores, labels, threshold_for_recall(scores, labels, recall))["precision"])


def _best_per_pair(logits: np.ndarray, owner: np.ndarray, pairs: int) -> np.ndarray:
    best = np.full(pairs, -np.inf)
    np.maximum.at(best, owner, logits)
    return best


def train_support(paths: Paths, out: Path, config: SupportConfig, fit_config: FitConfig) -> Path:
    """Run every step; return the model folder."""
    from indexes.dense.embedder import MiniLmEmbedder
    from rag.rerank.adapter import ADAPTER_FILE, MANIFEST_FILE
    from rag.rerank.trained import SHIPPED_MODEL, read_manifest

    started = time.perf_counter()
    stats = PairStats()
    train_questions, dev_questions = training_questions(paths, config, stats)
    embedder = MiniLmEmbedder()
    relevance = read_manifest(SHIPPED_MODEL)
    model, tokenizer = _support_model(config, fit_config, relevance)
    windows_of = _windows_cache(tokenizer, config.window_tokens)
    nearest = nearest_by_embedding(embedder.embed)(train_questions)
    rows = training_pairs(train_questions, windows_of, nearest, config.seed)
    dev_pairs = [
        p
        for p in build_pairs(dev_questions, nearest_by_embedding(embedder.embed), seed=config.seed)
        if p.split == "dev"
    ]
    stats.pairs = {kind: sum(r["kind"] == kind for r in rows) for kind in TRAIN_KINDS}
    stats.pairs["dev"] = len(dev_pairs)
    dev = _dev_set(model, tokenizer, dev_pairs, windows_of)
    state, trained_here = _fit(model, tokenizer, rows, dev, fit_config, out / "checkpoint")
    fitted = _calibrate(dev.pairs, dev.logits(model), dev.labels)
    model_dir = out / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    adapter = model_dir / ADAPTER_FILE
    save_float16(model, adapter)
    manifest = _manifest(
        paths, relevance, adapter, config, fit_config, stats, fitted, state, trained_here, started
    )
    (model_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return model_dir


def _support_model(
    config: SupportConfig, fit_config: FitConfig, relevance: dict[str, Any]
) -> tuple[SupportModel, PairTokenizer]:
    """The shipped relevance model with new, seeded adapters, and its pair tokenizer."""
    torch = require("torch", package="torch", extra="dense")
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import SHIPPED_MODEL, PairTokenizer, load_relevance

    torch.manual_seed(fit_config.seed)
    model = SupportModel(fit_config.trainable_from, config.rank, config.alpha)
    base = load_relevance(model, SHIPPED_MODEL, relevance)
    model.adapt()
    model.eval()
    return model, PairTokenizer(base.parent / "tokenizer.json", fit_config.max_length)


def _windows_cache(tokenizer: PairTokenizer, window_tokens: int) -> Callable[[str], list[str]]:
    """A passage's windows (``rag.gate.support_model.passage_windows``), each passage cut once."""
    from rag.gate.support_model import passage_windows

    cache: dict[str, list[str]] = {}

    def windows_of(text: str) -> list[str]:
        if text not in cache:
            cache[text] = passage_windows(tokenizer, "", text, window_tokens)
        return cache[text]

    return windows_of


@dataclass(frozen=True)
class _Dev:
    """The dev pairs, each read as every window of its passage: a pair's logit is its best window's."""

    pairs: list[SupportPair]
    labels: np.ndarray
    owner: np.ndarray  # the pair of each window
    hidden: list[Any]  # the bottom layers' output of each (claim, window)

    def logits(self, model: SupportModel) -> np.ndarray:
        return _best_per_pair(logits_of(model, self.hidden), self.owner, len(self.pairs))


def _dev_set(
    model: SupportModel,
    tokenizer: PairTokenizer,
    pairs: list[SupportPair],
    windows_of: Callable[[str], list[str]],
) -> _Dev:
    dev_windows = [(i, w) for i, p in enumerate(pairs) for w in windows_of(p.passage.text)]
    owner = np.array([i for i, _ in dev_windows], dtype=np.int64)
    labels = np.array([p.label for p in pairs], dtype=np.float64)
    hidden = cache_bottom(
        model, [tokenizer.encode(pairs[i].claim, [w])[0] for i, w in dev_windows], "caching dev windows"
    )
    return _Dev(pairs, labels, owner, hidden)


def _fit(
    model: SupportModel,
    tokenizer: PairTokenizer,
    rows: list[dict[str, Any]],
    dev: _Dev,
    fit_config: FitConfig,
    folder: Path,
) -> tuple[dict[str, Any], bool]:
    """(the progress record, whether this call trained): a finished run in ``folder`` is loaded,
    without caching the train pairs again; otherwise training starts or resumes."""
    state = load_finished(model, fit_config, folder)
    if state is not None:
        return state, False
    train_hidden = cache_bottom(
        model, [tokenizer.encode(r["claim"], [r["window"]])[0] for r in rows], "caching train pairs"
    )
    state = train(
        model,
        train_hidden,
        [r["label"] for r in rows],
        fit_config,
        folder,
        validate=lambda m: precision_at_recall(dev.logits(m), dev.labels),
    )
    return state, True


@dataclass(frozen=True)
class _Calibration:
    calibration: dict[str, Any]  # the manifest's: features, weights, bias
    threshold: float
    metrics: dict[str, Any]  # on dev; without "training", which the manifest adds


def _calibrate(pairs: list[SupportPair], logits: np.ndarray, labels: np.ndarray) -> _Calibration:
    """The calibration fitted on dev, the threshold chosen there, and the dev metrics."""
    from rag.gate.support_model import FEATURES, calibrated
    from rag.gate.support_signals import lexical_coverage
    from rag.gate.verify import CHECK_PENALTY, rule_checks

    lexical = np.array([lexical_coverage(p.claim, p.passage) for p in pairs])
    weights, bias = fit_logistic(np.column_stack([logits, lexical]), labels)
    calibration = {"features": list(FEATURES), "weights": [float(w) for w in weights], "bias": float(bias)}
    probabilities = calibrated(logits, lexical, calibration)
    checks_ok = np.array([all(rule_checks(p.claim, p.passage)) for p in pairs])
    support = probabilities * np.where(checks_ok, 1.0, CHECK_PENALTY)  # as the verifier computes it
    threshold = threshold_for_recall(support, labels, TARGET_RECALL)
    kinds = np.array([p.kind for p in pairs])
    metrics: dict[str, Any] = {
        "dev_roc_auc_logit": roc_auc(logits, labels),
        "dev_roc_auc": roc_auc(support, labels),
        "dev_at_threshold": precision_recall(support, labels, threshold),
        "dev_reliability": reliability(probabilities, labels),
        "dev_caught_by_kind": {
            k: float(np.mean(support[kinds == k] < threshold)) for k in sorted(set(kinds)) if k != "own"
        },
    }
    return _Calibration(calibration, threshold, metrics)


def _manifest(
    paths: Paths,
    relevance: dict[str, Any],
    adapter: Path,
    config: SupportConfig,
    fit_config: FitConfig,
    stats: PairStats,
    fitted: _Calibration,
    state: dict[str, Any],
    trained_here: bool,
    started: float,
) -> dict[str, Any]:
    torch = require("torch", package="torch", extra="dense")
    from rag.gate.support_model import FORMAT

    metrics = {**fitted.metrics, "training": state}
    return {
        "format": FORMAT,
        "base_sha256": relevance["base_sha256"],
        "relevance_overlay_sha256": relevance["overlay_sha256"],
        "adapter_sha256": sha256_file(adapter),
        "rank": config.rank,
        "alpha": config.alpha,
        "window_tokens": config.window_tokens,
        "max_length": fit_config.max_length,
        "calibration": fitted.calibration,
        "threshold": fitted.threshold,  # not rounded: rounding up would drop the dev pair it was chosen at
        "threshold_why": "the highest support (P(supported) x number and name checks) keeping "
        f"{TARGET_RECALL} of the supported dev pairs "
        f"(dev precision {metrics['dev_at_threshold']['precision']:.3f})",
        "data": data_hashes(paths.source_data, DATA_FILES),
        "questions": stats.questions,
        "dropped": stats.dropped,
        "pairs": stats.pairs,
        "held_out_questions": held_out_questions(paths.source_data).counts(),
        "support_config": asdict(config),
        "fit_config": asdict(fit_config),
        "metrics": metrics,
        **reproduction(torch),
        # this process; when it found the training finished (trained_here false), the training's
        # own time is metrics.training.seconds, and its peak memory was that of an earlier process
        "trained_here": trained_here,
        **cost(started),
    }
