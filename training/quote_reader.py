"""Train the quote reader (``rag/rerank/quote_reader.py``) on the clinician benchmark's dev part.

Run by ``medcite train quotes`` (``training/quotes.py``), which hands it every dev question's
quotable lines as the quote path scores them (question, line with its headings) and their labels
(1: the line states the key fact and comes from a passage that answers). Two things come out:

- the **out-of-fold logits**: the dev guideline folders in the quote model's five folds (all
  of them, also those of questions with no line to quote), each fold's lines scored by adapters
  trained without that fold. The quote model is fitted on these,
  so it learns how far to trust the reader on lines the reader never saw;
- the **reader**: adapters trained on every dev line, written with a manifest into the model
  folder (``rag/rerank/weights/quote-reader``). The test part is never read.

The settings were fixed before any run (``READER``, ``FIT``: rank 16, three epochs, the last
kept; no dev split is spent choosing an epoch). Each training run resumes from its checkpoints
in ``DATA_DIR/cache/quote-reader/`` when killed; the bottom layers' outputs are computed once.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import require
from indexes.files import sha256_file
from training.fit import FitConfig, cache_bottom, logits_of, save_float16, train

if TYPE_CHECKING:
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import PairTokenizer


@dataclass(frozen=True)
class ReaderConfig:
    rank: int = 16
    alpha: float = 32.0


READER = ReaderConfig()
FIT = FitConfig(seed=13, epochs=3, batch_size=16, lr_layers=5e-4, lr_head=1e-4, max_length=192)


@dataclass(frozen=True)
class ReaderPairs:
    """One row per (question, line): the question, the line as scored, its label, its folder."""

    questions: list[str]
    texts: list[str]
    labels: np.ndarray
    groups: list[str]

    def digest(self) -> str:
        rows = list(zip(self.questions, self.texts, self.labels.tolist(), self.groups, strict=True))
        return hashlib.sha256(json.dumps(rows).encode("utf-8")).hexdigest()


def fresh_model(reader: ReaderConfig, fit: FitConfig) -> tuple[SupportModel, PairTokenizer]:
    """The shipped relevance model with new, seeded adapters, and its pair tokenizer."""
    torch = require("torch", package="torch", extra="dense")
    from rag.rerank.minilm import SupportModel
    from rag.rerank.trained import SHIPPED_MODEL, PairTokenizer, load_relevance, read_manifest

    torch.manual_seed(fit.seed)
    model = SupportModel(fit.trainable_from, reader.rank, reader.alpha)
    base = load_relevance(model, SHIPPED_MODEL, read_manifest(SHIPPED_MODEL))
    model.adapt()
    model.eval()
    return model, PairTokenizer(base.parent / "tokenizer.json", fit.max_length)


def _trained(pairs: ReaderPairs, hidden: Sequence[Any], rows: Sequence[int], folder: Path) -> SupportModel:
    """A fresh model's adapters trained on ``rows`` for ``FIT.epochs`` epochs (the last kept)."""
    model, _ = fresh_model(READER, FIT)
    train(model, [hidden[i] for i in rows], [int(pairs.labels[i]) for i in rows], FIT, folder, validate=None)
    return model


def out_of_fold(
    pairs: ReaderPairs, hidden: Sequence[Any], folds: Sequence[set[str]], work: Path
) -> np.ndarray:
    """Each line's logit from adapters trained without its fold (``folds``: sets of folders, the
    quote model's own, so a folder the quote model holds out was never seen by its reader)."""
    out = np.zeros(len(pairs.texts))
    for n, held in enumerate(folds, start=1):
        seen = [i for i, g in enumerate(pairs.groups) if g not in held]
        unseen = [i for i, g in enumerate(pairs.groups) if g in held]
        name = hashlib.sha256(json.dumps(sorted(held)).encode("utf-8")).hexdigest()[:12]
        model = _trained(pairs, hidden, seen, work / f"fold-{name}")
        out[unseen] = logits_of(model, [hidden[i] for i in unseen])
        print(f"quote reader: fold {n}/{len(folds)} scored {len(unseen)} lines", flush=True)
    return out


def line_metrics(pairs: ReaderPairs, logits: np.ndarray, owner: Sequence[int]) -> dict[str, Any]:
    """ROC AUC over every line, and for how many questions with a positive line the best-scored
    line is one (``owner``: the question of each line)."""
    from sklearn.metrics import roc_auc_score

    by_question: dict[int, list[int]] = {}
    for i, q in enumerate(owner):
        by_question.setdefault(q, []).append(i)
    with_positive = [rows for rows in by_question.values() if pairs.labels[rows].any()]
    first = sum(int(pairs.labels[rows[int(np.argmax(logits[rows]))]]) for rows in with_positive)
    return {
        "roc_auc": round(float(roc_auc_score(pairs.labels, logits)), 4),
        "best_line_first": first,
        "questions_with_a_positive_line": len(with_positive),
    }


def train_reader(
    pairs: ReaderPairs,
    owner: Sequence[int],
    folds: Sequence[set[str]],
    out: Path,
    cache: Path,
    data: dict[str, str],
) -> np.ndarray:
    """Train the reader, write it to ``out`` (adapter + manifest); return the out-of-fold logits."""
    from rag.rerank.quote_reader import FORMAT
    from rag.rerank.trained import ADAPTER_FILE, MANIFEST_FILE, SHIPPED_MODEL, read_manifest

    started = time.perf_counter()
    work = cache / pairs.digest()[:16]
    model, tokenizer = fresh_model(READER, FIT)
    encoded = [tokenizer.encode(q, [t])[0] for q, t in zip(pairs.questions, pairs.texts, strict=True)]
    hidden = cache_bottom(model, encoded, "quote reader: caching dev lines")
    base_logits = logits_of(model, hidden)  # adapters start at zero: the relevance model's logits
    oof = out_of_fold(pairs, hidden, folds, work)
    final = _trained(pairs, hidden, list(range(len(pairs.texts))), work / "all")
    out.mkdir(parents=True, exist_ok=True)
    save_float16(final, out / ADAPTER_FILE)
    manifest = {
        "format": FORMAT,
        "relevance_overlay_sha256": read_manifest(SHIPPED_MODEL)["overlay_sha256"],
        "adapter_sha256": sha256_file(out / ADAPTER_FILE),
        "rank": READER.rank,
        "alpha": READER.alpha,
        "max_length": FIT.max_length,
        "trainable_from": FIT.trainable_from,
        "fit": asdict(FIT),
        "data": {**data, "pairs_sha256": pairs.digest()},
        "lines": len(pairs.texts),
        "positives": int(pairs.labels.sum()),
        "dev_lines_out_of_fold": {
            "relevance_model": line_metrics(pairs, base_logits, owner),
            "reader": line_metrics(pairs, oof, owner),
        },
        "seconds": round(time.perf_counter() - started, 1),
        "command": "medcite train quotes",
    }
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return oof
