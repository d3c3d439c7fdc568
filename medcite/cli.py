"""The ``medcite`` command. Thin: each subcommand parses flags and makes one library call."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import MedciteError
from core.paths import Paths
from core.types import Filters, Hit
from corpora.chunking import ChunkerConfig

DEMO_QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"


def _add_index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="default", help="index name under $MEDCITE_DATA_DIR/indexes")


Sub = argparse._SubParsersAction  # what add_subparsers returns


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medcite", description="Cited answers from clinical sources.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_index_commands, _query_commands, _model_commands, _eval_commands, _serve_command):
        add(sub)
    sub.add_parser("profiles", help="list the packaged pipeline profiles")
    sub.add_parser("sources", help="list the corpus sources")
    return parser


def _index_commands(sub: Sub) -> None:
    """``medcite index build | info | seed-cache``."""
    index = sub.add_parser("index", help="build and inspect indexes").add_subparsers(
        dest="action", required=True
    )
    build = index.add_parser("build", help="build an index from one or more sources")
    _index_build_args(build)
    _add_index_args(build)

    info = index.add_parser("info", help="show an index's manifest summary")
    info.add_argument("--verify", action="store_true", help="also check every file's sha256")
    info.add_argument("--json", action="store_true")
    _add_index_args(info)

    seed = index.add_parser(
        "seed-cache", help="copy built indexes' vectors into the embedding cache, so new builds reuse them"
    )
    seed.add_argument("--name", action="append", help="an index to copy from (repeatable; default: all)")


def _index_build_args(build: argparse.ArgumentParser) -> None:
    """The options of ``medcite index build``: sources, index kinds, chunking and the Ray engine."""
    build.add_argument(
        "--source",
        action="append",
        metavar="NAME[=PATH]",
        help="a source (repeatable); default: the embedded corpus open-medicine + hpo",
    )
    build.add_argument("--path", type=Path, help="local copy of the data, when one source is given")
    build.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SOURCE.KEY=VALUE",
        help="a source option, e.g. hpo.databases=ORPHA,OMIM",
    )
    build.add_argument("--fetch", action="store_true", help="download public sources first (needs a network)")
    build.add_argument("--no-dense", action="store_true", help="BM25 only (no embedder needed)")
    build.add_argument(
        "--dense-kind",
        choices=["flat", "hnsw", "ivfpq"],
        default="flat",
        help="flat: exact; hnsw: graph, in RAM; ivfpq: compressed codes on disk, re-scored exactly",
    )
    build.add_argument("--lexical", choices=["bm25s", "rank-bm25"], default="bm25s")
    build.add_argument(
        "--max-tokens", type=int, default=ChunkerConfig.max_tokens, help="wordpieces per chunk"
    )
    build.add_argument(
        "--overlap", type=int, default=ChunkerConfig.overlap, help="wordpieces shared by adjacent chunks"
    )
    build.add_argument("--limit", type=int, help="at most this many documents per source")
    build.add_argument(
        "--skip-existing",
        action="store_true",
        help="do nothing if an index of this name was built from the same sources and settings",
    )
    build.add_argument("--quiet", action="store_true", help="no progress bars")
    build.add_argument(
        "--engine", choices=["local", "ray"], default="local", help="run the build here or on Ray"
    )
    build.add_argument(
        "--address", metavar="HOST:PORT", help="Ray cluster (default: RAY_ADDRESS, else local)"
    )
    build.add_argument("--workers", type=int, help="embedder actors with --engine ray (default 1)")
    build.add_argument("--shards", type=int, default=1, help="BM25 and dense shards (default 1: unsharded)")


def _query_commands(sub: Sub) -> None:
    """``medcite retrieve`` and ``medcite ask``."""
    retrieve = sub.add_parser("retrieve", help="print the chunks that best match a question")
    retrieve.add_argument("query")
    retrieve.add_argument("--k", type=int, default=10)
    retrieve.add_argument("--mode", choices=["bm25", "dense", "hybrid"], default="hybrid")
    retrieve.add_argument("--filter-source", action="append", default=[], metavar="SOURCE")
    retrieve.add_argument("--filter-section", action="append", default=[], metavar="SECTION")
    retrieve.add_argument("--json", action="store_true")
    _add_index_args(retrieve)

    ask = sub.add_parser("ask", help="answer a clinical question with cited sources")
    ask.add_argument("question")
    ask.add_argument("--profile", default="default", help="a packaged profile name or a .toml path")
    ask.add_argument("--closed-book", action="store_true", help="answer from model memory only (labelled)")
    ask.add_argument("--json", action="store_true")


def _model_commands(sub: Sub) -> None:
    """``medcite models fetch | info | train-reranker | train-support``."""
    models = sub.add_parser("models", help="local model files").add_subparsers(dest="action", required=True)
    models.add_parser("fetch", help="download, assemble and verify the default generator (once)")
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


def _eval_commands(sub: Sub) -> None:
    """``medcite eval run | validate | compare | report | leakage | import-mirage``."""
    evaluate = sub.add_parser(
        "eval", help="benchmark runs, comparisons, published predictions"
    ).add_subparsers(dest="action", required=True)
    run = evaluate.add_parser("run", help="run (or resume) an evaluation config: datasets x ablation grid")
    run.add_argument(
        "config", type=Path, nargs="?", help="a .toml or .yaml eval config (see evals/configs/); or --dataset"
    )
    _dataset_run_args(run)
    run.add_argument("--out", type=Path, help="run directory (default: $MEDCITE_DATA_DIR/runs/<name>)")
    run.add_argument("--restart", action="store_true", help="discard a previous run of this name")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    _eval_engine_args(run)
    compare = evaluate.add_parser("compare", help="paired comparison of two runs (or two conditions)")
    compare.add_argument("run_a", help="run directory, or DIR#CONDITION to pick one of its conditions")
    compare.add_argument("run_b", help="run directory, or DIR#CONDITION")
    compare.add_argument("--markdown", action="store_true")
    report = evaluate.add_parser("report", help="summarise a run directory (also one stopped part-way)")
    report.add_argument("run_dir", type=Path)
    validate = evaluate.add_parser(
        "validate", help="read a benchmark set or file without a model and list every problem by row"
    )
    validate.add_argument("dataset", help="mcq:FILE, qa:FILE or a built-in name (medqa, bioasq-ideal, ..)")
    _columns_arg(validate)
    _leakage_command(evaluate)
    mirage = evaluate.add_parser("import-mirage", help="MIRAGE's published GPT-3.5/GPT-4 predictions as runs")
    mirage.add_argument(
        "--out", type=Path, help="folder for the runs (default: $MEDCITE_DATA_DIR/runs/mirage)"
    )


def _eval_engine_args(run: argparse.ArgumentParser) -> None:
    """``medcite eval run --engine ray [--workers N] [--address HOST:PORT] [--server URL ..]``."""
    run.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process answers every item (default); ray: items fan out to Ray workers",
    )
    run.add_argument("--workers", type=int, default=2, help="with --engine ray: worker actors (default 2)")
    run.add_argument(
        "--address", help="with --engine ray: a running cluster (default: RAY_ADDRESS, else local)"
    )
    run.add_argument(
        "--server",
        action="append",
        metavar="URL",
        help="with --engine ray and an OpenAI-compatible profile: a server of the pool (repeatable), "
        "e.g. http://10.0.0.5:8080/v1",
    )
    run.add_argument("--per-server", type=int, default=1, help="with --server: items in flight per server")


def _eval_engine(args: argparse.Namespace) -> Any:
    """The ``--engine`` flags as an ``evals.engine.engine_ray.RayEngine`` (None: the local engine)."""
    from core.errors import ConfigError
    from evals.engine.engine_ray import RayEngine

    if args.engine == "local":
        if args.server or args.address:
            raise ConfigError("--server and --address go with --engine ray")
        return None
    return RayEngine(
        workers=args.workers,
        address=args.address,
        servers=tuple(args.server or ()),
        per_server=args.per_server,
    )


def _columns_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--columns",
        action="append",
        metavar="NAME=COLUMN,..",
        help="mcq:/qa: files: the file's column for each standard name, e.g. question=stem,answer=key "
        "(also split=NAME, answer_base=0|1)",
    )


def _dataset_run_args(run: argparse.ArgumentParser) -> None:
    """``medcite eval run --dataset SPEC ..``: a run without a config file."""
    run.add_argument(
        "--dataset",
        action="append",
        metavar="SPEC",
        help="instead of a config: mcq:FILE, qa:FILE or a built-in set (repeatable); closed-book vs the "
        "profile's RAG",
    )
    run.add_argument("--n", type=int, help="with --dataset: a seeded sample of this many items per set")
    run.add_argument("--profile", help="with --dataset: the pipeline profile (default: default)")
    run.add_argument("--name", help="with --dataset: the run name (default: the file stems)")
    _columns_arg(run)


def _leakage_command(evaluate: Sub) -> None:
    """``medcite eval leakage``."""
    leakage = evaluate.add_parser(
        "leakage", help="which benchmark items an index holds near-verbatim (question or gold passage)"
    )
    leakage.add_argument("--index", required=True, help="a built index (under $MEDCITE_DATA_DIR/indexes)")
    leakage.add_argument("--dataset", action="append", required=True, help="a multiple-choice set (repeat)")
    leakage.add_argument("--threshold", type=float, default=0.5, help="containment that counts as leaked")
    leakage.add_argument("--ngram", type=int, default=8, help="words per shingle")
    leakage.add_argument("--n", type=int, help="a seeded sample of this many items per set (default: all)")
    leakage.add_argument("--seed", type=int, default=0)
    leakage.add_argument("--out", type=Path, help="write the per-item rows as JSON")
    leakage.add_argument("--leaked-only", action="store_true", help="in --out, keep only the leaked items")
    leakage.add_argument("--quiet", action="store_true", help="no progress bar")


def _serve_command(sub: Sub) -> None:
    """``medcite serve``."""
    serve = sub.add_parser("serve", help="run the HTTP API (settings from MEDCITE_* variables)")
    serve.add_argument("--host", help="interface to listen on (default MEDCITE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default MEDCITE_PORT or 8000)")
    serve.add_argument("--profile", action="append", help="a profile to serve (repeatable; default: default)")


def _cmd_build(args: argparse.Namespace, paths: Paths) -> int:
    from rag import indexing

    report = indexing.build_from_cli(
        paths,
        sources=args.source,
        path=args.path,
        options=args.set,
        fetch=args.fetch,
        name=args.name,
        dense=None if args.no_dense else args.dense_kind,
        lexical=args.lexical,
        max_tokens=args.max_tokens,
        overlap=args.overlap,
        limit=args.limit,
        skip_existing=args.skip_existing,
        progress=not args.quiet,
        engine=args.engine,
        address=args.address,
        workers=args.workers,
        shards=args.shards,
    )
    print(report)
    return 0


def _cmd_info(args: argparse.Namespace, paths: Paths) -> int:
    from rag import indexing

    manifest = indexing.index_info(paths, args.name, verify=args.verify)
    if args.json:
        print(json.dumps(manifest, indent=2))
        return 0
    counts = manifest["counts"]
    print(f"index {args.name}: {counts['chunks']} chunks from {counts['documents']} documents")
    for name, per in counts["per_source"].items():
        print(f"  {name}: {per['documents']} documents, {per['chunks']} chunks")
    print(f"  built {manifest['created']} in {manifest['build']['seconds']['total']:.1f}s")
    print(
        f"  lexical: {manifest['lexical']['backend']}; dense: "
        f"{(manifest['dense'] or {}).get('kind', 'none')}; embedder: "
        f"{(manifest['embedder'] or {}).get('name', 'none')}"
    )
    engine = manifest["build"].get("engine") or {"name": "local"}
    workers = f", {engine['workers']} worker(s)" if "workers" in engine else ""
    shards = (manifest.get("shards") or {}).get("count", 1)
    print(f"  shards: {shards}; built by the {engine['name']} engine{workers}")
    print(
        f"  corpus fingerprint {manifest['corpus_fingerprint'][:16]}; files "
        f"{'verified' if args.verify else 'sizes checked'}"
    )
    return 0


def _print_hits(hits: list[Hit]) -> None:
    for hit in hits:
        c = hit.chunk
        section = " > ".join(c.section[-2:])
        print(f"{hit.rank:>2}. [{hit.score:.4f}] {c.title}" + (f" — {section}" if section else ""))
        print(f"    {c.chunk_id} | {c.source} | {c.url or 'no url'} | chars {c.start}-{c.end}")
        print(f"    licence: {c.license}")
        snippet = " ".join(c.text.split())
        print(
            textwrap.indent(textwrap.fill(snippet[:400] + ("…" if len(snippet) > 400 else ""), 96), "    | ")
        )


def _cmd_seed_cache(args: argparse.Namespace, paths: Paths) -> int:
    from indexes.embedder import MiniLmEmbedder
    from indexes.embedding_cache import seed_from_index

    names = args.name or sorted(p.name for p in paths.indexes_dir.iterdir() if p.is_symlink())
    embedder = MiniLmEmbedder()
    for name in names:
        added = seed_from_index(paths.indexes_dir / name, embedder, paths.cache_dir / "embeddings")
        print(f"{name}: {added} vectors" if added else f"{name}: skipped (no vectors from this embedder)")
    return 0


def _cmd_retrieve(args: argparse.Namespace, paths: Paths) -> int:
    from rag import indexing

    filters = Filters(sources=frozenset(args.filter_source), sections=frozenset(args.filter_section))
    hits = indexing.retrieve(paths, args.name, args.query, k=args.k, mode=args.mode, filters=filters)
    if args.json:
        from rag.render import hit_to_dict

        print(json.dumps([hit_to_dict(h) for h in hits], indent=2, ensure_ascii=False))
    elif not hits:
        print("no matching chunks")
    else:
        _print_hits(hits)
    return 0


def _cmd_ask(args: argparse.Namespace, paths: Paths) -> int:
    from rag.assemble import assemble
    from rag.profile import load_profile
    from rag.render import answer_to_dict, answer_to_text

    assembled = assemble(load_profile(args.profile), paths)
    try:
        answer = assembled.pipeline.answer(args.question, closed_book=args.closed_book)
    finally:
        assembled.close()
    if args.json:
        print(json.dumps(answer_to_dict(answer), indent=2, ensure_ascii=False))
    else:
        print(answer_to_text(answer), end="")
    return 0


def _cmd_models_fetch(args: argparse.Namespace, paths: Paths) -> int:
    from rag.generate.models import DEFAULT_GENERATOR, fetch_model

    path = fetch_model(paths.model_dir, DEFAULT_GENERATOR)
    print(f"{DEFAULT_GENERATOR.name}: {path} (sha256 verified)")
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
        f'model_path = "{folder}", or copy it to rag/check/weights/support-minilm to ship it'
    )
    return 0


def _cmd_profiles(args: argparse.Namespace, paths: Paths) -> int:
    from rag.profile import available_profiles, load_profile

    for name in available_profiles():
        print(f"{name}: {load_profile(name).description}")
    return 0


def _cmd_sources(args: argparse.Namespace, paths: Paths) -> int:
    from corpora.catalog import DEFAULT_CORPUS, known_sources

    for name in known_sources():
        print(name + ("  (default corpus)" if name in DEFAULT_CORPUS else ""))
    return 0


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _cmd_eval_run(args: argparse.Namespace, paths: Paths) -> int:
    import signal

    from evals.engine.runner import run_eval

    # A scheduler or `kill` stops a run with SIGTERM (and a background job ignores SIGINT): end it
    # like Ctrl-C, so the manifest records the session; finished items are on disk either way.
    signal.signal(signal.SIGTERM, _raise_interrupt)

    config, engine = _run_config(args), _eval_engine(args)
    summary = run_eval(
        config, paths, out=args.out, restart=args.restart, progress=not args.quiet, engine=engine
    )
    print(summary.text())
    print(f"report: {summary.folder / 'report.md'}")
    return 0


def _run_config(args: argparse.Namespace) -> Any:
    """The config file, or the one ``--dataset`` flags describe (exactly one of the two)."""
    from core.errors import ConfigError
    from evals.datasets.user_files import parse_columns
    from evals.engine.config import load_config
    from evals.engine.quick_config import config_for_datasets

    if (args.config is None) == (not args.dataset):
        raise ConfigError("give either a config file or --dataset SPEC (one or more), not both or neither")
    columns = parse_columns(",".join(args.columns or []))
    if args.config is not None:
        if args.columns or args.n or args.name or args.profile:
            raise ConfigError("--columns, --n, --name and --profile go with --dataset, not a config file")
        return load_config(args.config)
    profile = args.profile or "default"
    return config_for_datasets(args.dataset, n=args.n, profile=profile, name=args.name, columns=columns)


def _cmd_eval_validate(args: argparse.Namespace, paths: Paths) -> int:
    from evals.datasets.user_files import parse_columns
    from evals.engine.validate import validate_dataset

    result = validate_dataset(args.dataset, paths, parse_columns(",".join(args.columns or [])))
    print(result.text)
    return 1 if result.problems else 0


def _cmd_eval_report(args: argparse.Namespace, paths: Paths) -> int:
    from evals.engine.runner import report_run

    print(f"report: {report_run(args.run_dir, paths)}")
    return 0


def _cmd_eval_leakage(args: argparse.Namespace, paths: Paths) -> int:
    from evals.leakage.run import format_report, leakage_report

    report = leakage_report(
        paths,
        args.index,
        args.dataset,
        threshold=args.threshold,
        ngram=args.ngram,
        n=args.n,
        seed=args.seed,
        progress=not args.quiet,
    )
    print(format_report(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        data = report.to_json(leaked_only=args.leaked_only)
        args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"items: {args.out}")
    return 0


def _cmd_eval_compare(args: argparse.Namespace, paths: Paths) -> int:
    from evals.engine.compare import compare_runs

    print(compare_runs(args.run_a, args.run_b, markdown=args.markdown))
    return 0


def _cmd_eval_import(args: argparse.Namespace, paths: Paths) -> int:
    from evals.studies.reference.predictions import import_reference

    for folder in import_reference(paths, args.out or paths.data_dir / "runs" / "mirage"):
        print(folder)
    return 0


def _cmd_serve(args: argparse.Namespace, paths: Paths) -> int:
    # The CLI is the composition root: the one package that reaches into api/ (lazily).
    from api.main import serve
    from api.settings import load_settings

    given = {"host": args.host, "port": args.port, "profiles": args.profile}
    serve(load_settings(**{key: value for key, value in given.items() if value}))  # only the flags given
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    paths = Paths.from_env()
    handlers: dict[str, Any] = {
        "index build": _cmd_build,
        "index info": _cmd_info,
        "index seed-cache": _cmd_seed_cache,
        "retrieve": _cmd_retrieve,
        "ask": _cmd_ask,
        "models fetch": _cmd_models_fetch,
        "models info": _cmd_models_info,
        "models train-reranker": _cmd_models_train_reranker,
        "models train-support": _cmd_models_train_support,
        "profiles": _cmd_profiles,
        "sources": _cmd_sources,
        "serve": _cmd_serve,
        "eval run": _cmd_eval_run,
        "eval validate": _cmd_eval_validate,
        "eval compare": _cmd_eval_compare,
        "eval report": _cmd_eval_report,
        "eval leakage": _cmd_eval_leakage,
        "eval import-mirage": _cmd_eval_import,
    }
    key = f"{args.command} {args.action}" if getattr(args, "action", None) else args.command
    try:
        return int(handlers[key](args, paths))
    except MedciteError as exc:
        print(f"medcite: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "medcite: interrupted; finished work is kept (embedding batches, eval items): run the same "
            "command again to resume, or `medcite eval report RUN_DIR` to summarise a stopped run",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error of medcite's
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
