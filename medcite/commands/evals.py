"""``medcite eval run | validate | compare | report | leakage | import-mirage``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.paths import Paths
from medcite.commands import Handler, Sub


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
    validate.add_argument(
        "dataset", help="mcq:FILE, qa:FILE, rubric:FILE, clinician-rubric:PART or a built-in name (medqa, ..)"
    )
    _columns_arg(validate)
    _leakage_command(evaluate)
    mirage = evaluate.add_parser("import-mirage", help="MIRAGE's published GPT-3.5/GPT-4 predictions as runs")
    mirage.add_argument(
        "--out", type=Path, help="folder for the runs (default: $MEDCITE_DATA_DIR/runs/mirage)"
    )


def _eval_engine_args(run: argparse.ArgumentParser) -> None:
    """``medcite eval run --engine ray [--workers N] [--address HOST:PORT] [--server URL ..]
    [--max-restarts N]``."""
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
    run.add_argument(
        "--max-restarts",
        type=int,
        help="with --engine ray: times Ray restarts each worker that dies (default 3; 0: never)",
    )


def _eval_engine(args: argparse.Namespace) -> Any:
    """The ``--engine`` flags as an ``evals.engine.engine_ray.RayEngine`` (None: the local engine)."""
    from core.errors import ConfigError
    from evals.engine.engine_ray import RayEngine

    if args.engine == "local":
        if args.server or args.address or args.max_restarts is not None:
            raise ConfigError("--server, --address and --max-restarts go with --engine ray")
        return None
    restarts = {} if args.max_restarts is None else {"max_restarts": args.max_restarts}
    return RayEngine(
        workers=args.workers,
        address=args.address,
        servers=tuple(args.server or ()),
        per_server=args.per_server,
        **restarts,
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
        help="instead of a config: mcq:FILE, qa:FILE, rubric:FILE or a built-in set (repeatable); "
        "closed-book vs the profile's RAG",
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
    from evals.datasets.files.user_sets import parse_columns
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
    from evals.datasets.files.user_sets import parse_columns
    from evals.engine.validate import validate_dataset

    result = validate_dataset(args.dataset, paths, parse_columns(",".join(args.columns or [])))
    print(result.text)
    return 1 if result.problems else 0


def _cmd_eval_report(args: argparse.Namespace, paths: Paths) -> int:
    from evals.engine.runner import report_run

    report = report_run(args.run_dir, paths)
    print(_headline(report.read_text(encoding="utf-8")))
    print(f"report: {report}")
    return 0


def _headline(report: str) -> str:
    """A report.md's first section (its headline table, with the notes under it), and the names of
    the sections the file goes on with."""
    sections = report.split("\n## ")[1:]
    if not sections:
        return report.strip()
    rest = [s.splitlines()[0] for s in sections[1:]]
    more = f"\nthe report goes on with: {'; '.join(rest)}" if rest else ""
    return f"## {sections[0].strip()}{more}"


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
    from evals.engine.report.compare import compare_runs

    print(compare_runs(args.run_a, args.run_b, markdown=args.markdown))
    return 0


def _cmd_eval_import(args: argparse.Namespace, paths: Paths) -> int:
    from evals.studies.reference.predictions import import_reference

    for folder in import_reference(paths, args.out or paths.data_dir / "runs" / "mirage"):
        print(folder)
    return 0


PARSERS: dict[str, Callable[[Sub], None]] = {"eval": _eval_commands}
HANDLERS: dict[str, Handler] = {
    "eval run": _cmd_eval_run,
    "eval validate": _cmd_eval_validate,
    "eval compare": _cmd_eval_compare,
    "eval report": _cmd_eval_report,
    "eval leakage": _cmd_eval_leakage,
    "eval import-mirage": _cmd_eval_import,
}
