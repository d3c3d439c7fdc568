"""``medcite train reader``: the clinician training set -> the line reader (CPU, resumable).

Which line of the passages read answers this patient's question? The reader is the relevance
cross-encoder (``rag/rerank/weights/relevance-minilm``) with low-rank adapters on its top two
layers and its own head (the support model's architecture, ``rag.rerank.minilm.SupportModel``),
trained on (question, line in its context) pairs of ``evals/datasets/clinician_train/`` (dev-part
folders only; ``training/reader_lines.py`` builds the pairs: the answering lines positive, the
sibling lines for other patients, the other lines of the answering chunk and lines of the other
retrieved chunks negative).

Steps: candidate lines per question (cached in ``DATA_DIR/cache/reader/``) -> **cross-fit**: the
21 folders in ``folds`` groups; for each, a model trained without it reads every candidate line
of (a sample of) its questions -> **calibration** on those held-out logits (Platt scaling:
``P(answers) = sigmoid(a * logit + b)``) -> **thresholds** from the held-out questions: the answer
threshold by Learn-then-Test (the lowest threshold, tested from the top down, at which "shown
answers are right >= 95%" is supported with 90% confidence: binomial p-value <= 0.10), the floor
under which nothing is relevant -> the final model trained on every folder (``--fold K``: the
model trained without fold K itself, calibrated on fold K: one training, not four) -> ``model/`` with
``adapter.safetensors`` and ``manifest.json`` (data hashes, metrics, the risk-coverage curve, the
command). Copy ``model`` to ``rag/reading/weights/reader-minilm`` to ship it.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import require
from core.paths import Paths
from evals.datasets.clinician import TRAIN_SHA256, ClinicianItem, load_training, training_sha256
from indexes.files import sha256_file
from training.calibrate import fit_logistic, reliability
from training.fit import FitConfig, cache_bottom, load_finished, logits_of, save_float16, train
from training.provenance import cost, reproduction
from training.reader_lines import Guidelines, ReadLine, read_questions, training_lines

if TYPE_CHECKING:
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import PairTokenizer

TARGET = 0.95  # shown answers right
CONFIDENCE = 0.90
FLOOR_MISS = 0.02  # answerable questions with their answer read told "nothing relevant", at most


# Listwise over each question's candidate lines beside the pairwise loss: on 80 held-out fold-0
# questions it ranked the answering line first for 0.325 (pairwise alone: 0.23, as untrained);
# docs/results/clinician/reader.md.
FIT = FitConfig(
    epochs=1, batch_size=48, lr_layers=1e-3, max_length=160, checkpoint_every=100, listwise_weight=1.0
)


@dataclass(frozen=True)
class ReaderConfig:
    seed: int = 13
    candidates: int = 10  # hybrid chunks whose lines are read, as the chain reads them
    negatives: int = 12  # lines that do not answer, per question, for training
    same_chunk: int = 4  # of them at most, other lines of the answering chunk
    folds: int = 3
    held_out_per_fold: int = 400  # questions of a fold read whole to calibrate and choose thresholds
    validation_share: float = 0.1  # of the training questions, by question, to pick the epoch
    rank: int = 16
    alpha: float = 32.0


def folds_of(items: Sequence[ClinicianItem], folds: int) -> list[set[str]]:
    """The guideline folders in ``folds`` groups, balanced by question count."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.group] = counts.get(item.group, 0) + 1
    groups: list[set[str]] = [set() for _ in range(folds)]
    sizes = [0] * folds
    for name in sorted(counts, key=lambda g: (-counts[g], g)):
        k = sizes.index(min(sizes))
        groups[k].add(name)
        sizes[k] += counts[name]
    return groups


def candidates(
    paths: Paths, config: ReaderConfig, items: Sequence[ClinicianItem]
) -> dict[str, list[ReadLine]]:
    """Every item's candidate lines, read once and cached (``DATA_DIR/cache/reader``)."""
    from corpora.sources.base import packaged_source_dir
    from rag.indexing import make_retriever, open_index

    path = paths.cache_dir / "reader" / f"lines-{TRAIN_SHA256[:12]}-k{config.candidates}.jsonl"
    if path.is_file():
        out: dict[str, list[ReadLine]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out[row["qid"]] = [ReadLine(row["qid"], t, k, tuple(s), r) for t, k, s, r in row["lines"]]  # type: ignore[arg-type]
        if set(out) == {i.qid for i in items}:
            return out
    index, embedder = open_index(paths, "default", with_embedder=True)
    retriever = make_retriever(index, embedder, "hybrid")
    by_doc: dict[str, list[Any]] = {}
    for chunk in index.chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    guidelines = Guidelines(
        packaged_source_dir("open_medicine", "open-medicine", "guidelines/content", "training")
    )
    out = {}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".tmp").open("w", encoding="utf-8") as fh:
        found = read_questions(
            items, lambda q: retriever.retrieve(q, config.candidates), guidelines, lambda d: by_doc.get(d, [])
        )
        for n, (item, lines) in enumerate(found, start=1):
            out[item.qid] = lines
            row = {"qid": item.qid, "lines": [(r.text, r.kind, list(r.span), r.rank) for r in lines]}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            if n % 500 == 0:
                print(f"read the candidate lines of {n}/{len(items)} questions", flush=True)
    path.with_suffix(".tmp").replace(path)
    index.close()
    return out


def _reader_model(config: ReaderConfig, fit_config: FitConfig) -> tuple[SupportModel, PairTokenizer]:
    """The shipped relevance model with new, seeded adapters, and its pair tokenizer."""
    torch = require("torch", package="torch", extra="dense")
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import SHIPPED_MODEL, PairTokenizer, load_relevance, read_manifest

    torch.manual_seed(fit_config.seed)
    model = SupportModel(fit_config.trainable_from, config.rank, config.alpha)
    base = load_relevance(model, SHIPPED_MODEL, read_manifest(SHIPPED_MODEL))
    model.adapt()
    model.eval()
    return model, PairTokenizer(base.parent / "tokenizer.json", fit_config.max_length)


def read_logits(
    model: SupportModel, tokenizer: PairTokenizer, question: str, texts: Sequence[str]
) -> np.ndarray:
    """The model's logit for each line of one question (bottom and top layers, no cache)."""
    torch = require("torch", package="torch", extra="dense")
    from indexes.dense.minilm import padded

    out = np.zeros(len(texts))
    with torch.inference_mode():
        for start in range(0, len(texts), 64):
            ids, types, mask = padded(tokenizer.encode(question, list(texts[start : start + 64])))
            out[start : start + 64] = model(ids, types, mask).double().numpy()
    return out


@dataclass
class _Pairs:
    """The training pairs of some questions, their bottom layers cached, and their question."""

    owner: list[str]
    labels: list[int]
    hidden: list[Any]


def _pairs(
    model: SupportModel,
    tokenizer: PairTokenizer,
    items: Sequence[ClinicianItem],
    lines: dict[str, list[ReadLine]],
    config: ReaderConfig,
) -> _Pairs:
    rng = random.Random(config.seed)
    owner, labels, encoded = [], [], []
    for item in items:
        for line in training_lines(lines[item.qid], config.negatives, rng, config.same_chunk):
            owner.append(item.qid)
            labels.append(line.label)
            encoded.append(tokenizer.encode(item.question, [line.text])[0])
    return _Pairs(owner, labels, cache_bottom(model, encoded, "caching the training pairs"))


def _top1(model: SupportModel, pairs: _Pairs, rows: Sequence[int]) -> float:
    """The share of the questions among ``rows`` with an answer whose best-scored line answers."""
    logits = logits_of(model, [pairs.hidden[i] for i in rows])
    best: dict[str, tuple[float, int]] = {}
    answerable = {pairs.owner[i] for i in rows if pairs.labels[i]}
    for logit, i in zip(logits, rows, strict=True):
        qid = pairs.owner[i]
        if qid in answerable and (qid not in best or logit > best[qid][0]):
            best[qid] = (float(logit), pairs.labels[i])
    return float(np.mean([label for _, label in best.values()])) if best else 0.0


def _fit_on(
    model: SupportModel,
    pairs: _Pairs,
    qids: set[str],
    config: ReaderConfig,
    fit_config: FitConfig,
    folder: Path,
) -> dict[str, Any]:
    """Train ``model`` on the pairs of ``qids`` (less a validation share, which picks the epoch)."""
    rng = random.Random(config.seed)
    validation = {q for q in sorted(qids) if rng.random() < config.validation_share}
    rows = [i for i, q in enumerate(pairs.owner) if q in qids and q not in validation]
    held = [i for i, q in enumerate(pairs.owner) if q in validation]
    state = load_finished(model, fit_config, folder)
    if state is not None:
        return state
    return train(
        model,
        [pairs.hidden[i] for i in rows],
        [pairs.labels[i] for i in rows],
        fit_config,
        folder,
        validate=lambda m: _top1(m, pairs, held),
        groups=[pairs.owner[i] for i in rows],
    )


def held_out(
    model: SupportModel,
    tokenizer: PairTokenizer,
    items: Sequence[ClinicianItem],
    lines: dict[str, list[ReadLine]],
) -> list[dict[str, Any]]:
    """Each item's candidate lines with the model's logits: what calibration and thresholds read."""
    out = []
    for n, item in enumerate(items, start=1):
        candidates = lines[item.qid]
        logits = read_logits(model, tokenizer, item.question, [line.text for line in candidates])
        out.append(
            {
                "qid": item.qid,
                "group": item.group,
                "answerable": item.answerable,
                "kinds": [line.kind for line in candidates],
                "spans": [list(line.span) for line in candidates],
                "logits": logits.tolist(),
            }
        )
        if n % 100 == 0:
            print(f"read the held-out lines of {n}/{len(items)} questions", flush=True)
    return out


def calibrate(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """Platt scaling of the held-out line logits: ``(a, b)`` of ``sigmoid(a * logit + b)``."""
    x = np.concatenate([np.asarray(r["logits"]) for r in rows])[:, None]
    y = np.concatenate([[int(k == "answer") for k in r["kinds"]] for r in rows]).astype(np.float64)
    weights, bias = fit_logistic(x, y, l2=1e-4)
    return float(weights[0]), float(bias)


def calibrated(row: dict[str, Any], a: float, b: float) -> np.ndarray:
    """A held-out row's line probabilities under the calibration ``(a, b)``."""
    return np.asarray(1.0 / (1.0 + np.exp(-(a * np.asarray(row["logits"]) + b))))


def shown(p: np.ndarray, kinds: Sequence[str], threshold: float, count: int = 3) -> str:
    """What one question is told at ``threshold``: ``right`` (the best line answers and no sibling
    is shown), ``wrong``, or ``none`` (no line reaches it)."""
    order = [i for i in np.argsort(-p, kind="stable") if p[i] >= threshold][:count]
    if not order:
        return "none"
    return (
        "right" if kinds[order[0]] == "answer" and not any(kinds[i] == "sibling" for i in order) else "wrong"
    )


def binomial_tail(k: int, n: int, risk: float) -> float:
    """P(Bin(n, risk) <= k): the p-value of "the error rate exceeds ``risk``" given k of n wrong."""
    return float(sum(math.comb(n, j) * risk**j * (1 - risk) ** (n - j) for j in range(k + 1)))


def risk_curve(
    rows: Sequence[dict[str, Any]], a: float, b: float, grid: Sequence[float]
) -> list[dict[str, Any]]:
    """Per threshold: how many questions are answered, how many of those wrongly, the p-value."""
    probabilities = [calibrated(r, a, b) for r in rows]
    curve = []
    for t in grid:
        told = [shown(p, r["kinds"], t) for p, r in zip(probabilities, rows, strict=True)]
        n, wrong = sum(o != "none" for o in told), sum(o == "wrong" for o in told)
        answerable = sum(r["answerable"] for r in rows)
        right = sum(o == "right" for o in told)
        curve.append(
            {
                "threshold": round(float(t), 4),
                "answered": n,
                "wrong": wrong,
                "right_among_shown": right / n if n else None,
                "coverage": n / len(rows),
                "answerable_right": right / max(1, answerable),
                "p_value": binomial_tail(wrong, n, 1 - TARGET) if n else 1.0,
            }
        )
    return curve


def learn_then_test(curve: Sequence[dict[str, Any]]) -> float:
    """The lowest threshold reached testing from the highest down while each p-value <= 1 - CONFIDENCE."""
    chosen = 1.0
    for row in sorted(curve, key=lambda r: -r["threshold"]):
        if row["answered"] and row["p_value"] > 1 - CONFIDENCE:
            break
        chosen = row["threshold"]
    return chosen


def floor_of(rows: Sequence[dict[str, Any]], a: float, b: float) -> float:
    """The highest floor telling at most ``FLOOR_MISS`` of the answerable questions whose answer
    was read "nothing relevant" (their best line under it)."""
    best = []
    for r in rows:
        if "answer" in r["kinds"]:
            best.append(float(np.max(calibrated(r, a, b))))
    return float(np.quantile(np.asarray(best), FLOOR_MISS)) if best else 0.0


def cross_fit(
    paths: Paths, out: Path, config: ReaderConfig, fit_config: FitConfig, only: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The held-out rows of every fold (each read by a model trained without its folders); with
    ``only``, of that fold alone (its model in ``out/fold<only>``)."""
    items = load_training()
    lines = candidates(paths, config, items)
    rows_file = out / "held_out.jsonl"
    done = (
        {json.loads(x)["qid"]: json.loads(x) for x in rows_file.read_text().splitlines()}
        if rows_file.is_file()
        else {}
    )
    groups = folds_of(items, config.folds)
    states: dict[str, Any] = {}
    pairs: _Pairs | None = None
    for k, held in enumerate(groups):
        if only is not None and k != only:
            continue
        fold_items = [i for i in items if i.group in held]
        sample = random.Random(config.seed + k).sample(
            fold_items, min(config.held_out_per_fold, len(fold_items))
        )
        if all(i.qid in done for i in sample):
            continue
        model, tokenizer = _reader_model(config, fit_config)
        if pairs is None:
            pairs = _pairs(model, tokenizer, items, lines, config)
        training = {i.qid for i in items if i.group not in held}
        states[f"fold{k}"] = _fit_on(model, pairs, training, config, fit_config, out / f"fold{k}")
        for row in held_out(model, tokenizer, [i for i in sample if i.qid not in done], lines):
            done[row["qid"]] = row
        rows_file.write_text("".join(json.dumps(r) + "\n" for r in done.values()), encoding="utf-8")
    return list(done.values()), {"folds": [sorted(g) for g in groups], "fits": states}


def train_reader(
    paths: Paths, out: Path, config: ReaderConfig, fit_config: FitConfig, fold: int | None = None
) -> Path:
    """Every step (module docstring); the model folder. With ``fold``: the model trained without
    that fold's folders, calibrated and thresholded on its held-out questions (no final model)."""
    from rag.rerank.adapter import ADAPTER_FILE, MANIFEST_FILE

    started = time.perf_counter()
    if training_sha256() != TRAIN_SHA256:
        raise SystemExit("the training set is not the frozen one (evals/datasets/clinician.py: TRAIN_SHA256)")
    rows, folds = cross_fit(paths, out, config, fit_config, only=fold)
    a, b = calibrate(rows)
    grid = [round(t, 3) for t in np.arange(0.3, 0.991, 0.01)]
    curve = risk_curve(rows, a, b, grid)
    answer = learn_then_test(curve)
    floor = floor_of(rows, a, b)
    model, tokenizer = _reader_model(config, fit_config)
    final: dict[str, Any] | None
    if fold is None:
        items = load_training()
        pairs = _pairs(model, tokenizer, items, candidates(paths, config, items), config)
        final = _fit_on(model, pairs, {i.qid for i in items}, config, fit_config, out / "final")
    else:
        final = load_finished(model, fit_config, out / f"fold{fold}")
        if final is None:
            raise SystemExit(
                f"fold {fold}'s model in {out} is unfinished; run the command again to resume it"
            )
    model_dir = out / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    save_float16(model, model_dir / ADAPTER_FILE)
    thresholds = {"answer": answer, "floor": floor, "calibration": (a, b), "curve": curve}
    fits = {"folds": folds, "final": final, "shipped": "final" if fold is None else f"fold{fold}"}
    manifest = _manifest(model_dir / ADAPTER_FILE, rows, thresholds, fits, config, fit_config)
    manifest["command"] = "medcite train reader" + ("" if fold is None else f" --fold {fold}")
    (model_dir / MANIFEST_FILE).write_text(
        json.dumps({**manifest, **cost(started)}, indent=1), encoding="utf-8"
    )
    return model_dir


def _manifest(
    adapter: Path,
    rows: Sequence[dict[str, Any]],
    thresholds: dict[str, Any],
    fits: dict[str, Any],
    config: ReaderConfig,
    fit_config: FitConfig,
) -> dict[str, Any]:
    """The model folder's manifest: hashes, architecture, calibration and thresholds, the data's
    hash, the held-out metrics and the risk-coverage curve, the command."""
    from rag.reading.reader import FORMAT
    from rag.rerank.trained import SHIPPED_MODEL, read_manifest

    torch = require("torch", package="torch", extra="dense")
    a, b = thresholds["calibration"]
    held_p = np.concatenate([calibrated(r, a, b) for r in rows])
    held_y = np.concatenate([[int(k == "answer") for k in r["kinds"]] for r in rows])
    relevance = read_manifest(SHIPPED_MODEL)
    return {
        "format": FORMAT,
        "base_sha256": relevance["base_sha256"],
        "relevance_overlay_sha256": relevance["overlay_sha256"],
        "adapter_sha256": sha256_file(adapter),
        "rank": config.rank,
        "alpha": config.alpha,
        "max_length": fit_config.max_length,
        "calibration": {"features": ["logit"], "weights": [a], "bias": b},
        "answer_threshold": thresholds["answer"],
        "answer_threshold_why": f"Learn-then-Test on {len(rows)} held-out training questions: the lowest "
        f"threshold at which shown answers right >= {TARGET} holds with {CONFIDENCE} confidence",
        "floor": thresholds["floor"],
        "floor_why": f"the highest floor under which at most {FLOOR_MISS} of the held-out answerable "
        "questions whose answering line was read fall",
        "data": {"evals/datasets/clinician_train": training_sha256()},
        "reader_config": asdict(config),
        "fit_config": asdict(fit_config),
        "metrics": {
            "held_out_questions": len(rows),
            "held_out_reliability": reliability(held_p, held_y),
            "held_out_top1": float(
                np.mean([_best_kind(r) == "answer" for r in rows if "answer" in r["kinds"]])
            ),
            "risk_coverage": thresholds["curve"],
            **fits,
        },
        "command": "medcite train reader",
        **reproduction(torch),
    }


def _best_kind(row: dict[str, Any]) -> str:
    return str(row["kinds"][int(np.argmax(row["logits"]))])


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="default: DATA_DIR/training/reader")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument(
        "--fold",
        type=int,
        default=None,
        help="ship the model trained without this fold, calibrated on it (one training, not four)",
    )
    args = parser.parse_args(argv)
    paths = Paths.from_env()
    out = args.out or paths.data_dir / "training" / "reader"
    config = ReaderConfig()
    if args.fold is not None and not 0 <= args.fold < config.folds:
        parser.error(f"--fold must be 0..{config.folds - 1}")
    fit_config = FitConfig(**{**asdict(FIT), "epochs": args.epochs})
    folder = train_reader(paths, out, config, fit_config, args.fold)
    print(f"wrote {folder}; copy it to rag/reading/weights/reader-minilm to ship it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
