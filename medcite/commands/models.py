"""``medcite models fetch | info | train-reranker | train-support``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.paths import Paths
from medcite.commands import Handler, Sub


def _model_commands(sub: Sub) -> None:
    """``medcite models fetch | info | train-reranker | train-support``."""
    models = sub.add_parser("models", help="local model files").add_subparsers(dest="action", required=True)
    models.add_parser(
        "fetch",
        help="download and verify the default generator; export the MiniLM models for ONNX Runtime (once)",
    )
    models.add_parser("info", help="where the model files are and whether they verify")
    trainer = models.add_parser(
        "train-reranker", help="train the relevance reranker on BioASQ 7B-10B + MedQuAD (CPU, resumable)"
    )
    trainer.add_argument(
        "--out", type=Path, default=None, help="work folder (default: DATA_DIR/models/relevance-minilm)"
    )
    trainer.add_argument("--index", default="bioasq-snippets", help="index used to mine hard negatives")
    trainer.add_argument("--seed", type=int, default=13)
    trainer.add_argument("--epochs", type=int, default=3)
    trainer.add_argument("--medquad-questions", type=int, default=3000)
    trainer.add_argument(
        "--trainable-from",
        type=int,
        default=4,
        help="first of the 6 layers to train, 0-5 (those below are frozen)",
    )
    trainer.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    support = models.add_parser(
        "train-support", help="train the support verifier on BioASQ 7B-10B claims (CPU, resumable)"
    )
    support.add_argument(
        "--out", type=Path, default=None, help="work folder (default: DATA_DIR/models/support-minilm)"
    )
    support.add_argument("--seed", type=int, default=13)
    support.add_argument("--epochs", type=int, default=4)
    support.add_argument("--rank", type=int, default=16, help="adapter rank")
    support.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")


def _cmd_models_fetch(args: argparse.Namespace, paths: Paths) -> int:
    from indexes.dense.embedder import MiniLmEmbedder
    from rag.gate.support_model import TrainedSupport
    from rag.generate.models import DEFAULT_GENERATOR, fetch_model
    from rag.reading.reader import SHIPPED_READER, TrainedReader
    from rag.rerank.adapter import MANIFEST_FILE
    from rag.rerank.trained import TrainedReranker

    path = fetch_model(paths.model_dir, DEFAULT_GENERATOR)
    print(f"{DEFAULT_GENERATOR.name}: {path} (sha256 verified)")
    # The MiniLM models are scored with ONNX Runtime; exporting them here (once per set of
    # weights) spares the first question the torch import and the export.
    models: list[tuple[str, Any]] = [
        ("embedder", MiniLmEmbedder()),
        ("relevance", TrainedReranker()),
        ("support", TrainedSupport()),
    ]
    if (SHIPPED_READER / MANIFEST_FILE).is_file():
        models.append(("reader", TrainedReader()))
    for name, model in models:
        print(f"{name} model for ONNX Runtime: {model.prepare()}")
    return 0


def _cmd_models_info(args: argparse.Namespace, paths: Paths) -> int:
    from rag.generate.models import DEFAULT_GENERATOR, model_path

    print(f"model dir: {paths.model_dir}")
    print(f"{DEFAULT_GENERATOR.name}: {model_path(paths.model_dir, DEFAULT_GENERATOR)} (verified)")
    return 0


def _cmd_models_train_reranker(args: argparse.Namespace, paths: Paths) -> int:
    from training.fit import FitConfig
    from training.pairs import PairConfig
    from training.reranker import train_reranker

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = args.out or paths.data_dir / "models" / "relevance-minilm"
    folder = train_reranker(
        paths,
        out,
        PairConfig(seed=args.seed, medquad_questions=args.medquad_questions),
        FitConfig(seed=args.seed, epochs=args.epochs, trainable_from=args.trainable_from),
        index_name=args.index,
    )
    print(
        f'relevance model written to {folder}; use it with [rerank] backend = "trained", '
        f'model_path = "{folder}", or copy it to rag/rerank/weights/relevance-minilm to ship it'
    )
    return 0


def _cmd_models_train_support(args: argparse.Namespace, paths: Paths) -> int:
    from training.fit import FitConfig
    from training.support import SupportConfig, train_support

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = args.out or paths.data_dir / "models" / "support-minilm"
    config = SupportConfig(seed=args.seed, rank=args.rank)
    fit = FitConfig(seed=args.seed, epochs=args.epochs, lr_layers=5e-4, lr_head=1e-3)
    folder = train_support(paths, out, config, fit)
    print(
        f'support model written to {folder}; use it with [verify] backend = "trained", '
        f'model_path = "{folder}", or copy it to rag/gate/weights/support-minilm to ship it'
    )
    return 0


PARSERS: dict[str, Callable[[Sub], None]] = {"models": _model_commands}
HANDLERS: dict[str, Handler] = {
    "models fetch": _cmd_models_fetch,
    "models info": _cmd_models_info,
    "models train-reranker": _cmd_models_train_reranker,
    "models train-support": _cmd_models_train_support,
}
