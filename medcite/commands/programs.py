"""``medcite bench | train | study NAME [ARGS...]``: the benchmarks, fitting scripts and eval
studies the docs tell you to run, by name, each with its own flags (``NAME --help``).

Each name runs one module's ``main()`` (its flags parsed from ``ARGS``); the table below is the
one place a name becomes a module, and a test checks that every runnable module of ``bench/``,
``training/`` and ``evals/studies/`` has a name here.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from core.paths import Paths
from medcite.commands import Handler, Sub

PROGRAMS: dict[str, dict[str, str]] = {
    "bench": {
        "aboutness-literature": "bench.answers.aboutness_literature",
        "abstention-paired": "bench.answers.abstention_paired",
        "ask-compare": "bench.answers.ask_compare",
        "ask-questions": "bench.answers.ask_questions",
        "clinician": "bench.answers.clinician",
        "clinician-passages": "bench.answers.clinician_passages",
        "clinician-stages": "bench.retrieval.clinician_stages",
        "embedding-paths": "bench.retrieval.embedding_paths",
        "closest-about": "bench.answers.closest_about",
        "followups": "bench.answers.followups",
        "closest-pool": "bench.answers.closest_pool",
        "condition-reader": "bench.answers.condition_reader",
        "evidence-threshold": "bench.answers.evidence_threshold",
        "judge-prompts": "bench.answers.judge_prompts",
        "line-choice": "bench.answers.line_choice",
        "outcomes": "bench.answers.outcomes",
        "medical-scope": "bench.answers.medical_scope",
        "outside-outcomes": "bench.answers.outside_outcomes",
        "quote-reach": "bench.answers.quote_reach",
        "ivfpq-rescore": "bench.retrieval.ivfpq_rescore",
        "materialize": "bench.retrieval.materialize",
        "onnx-runtime": "bench.retrieval.onnx_runtime",
        "query-latency": "bench.retrieval.query_latency",
        "reranker-blends": "bench.retrieval.reranker_blends",
        "reranker-heldout": "bench.retrieval.reranker_heldout",
        "reranker-speed": "bench.retrieval.reranker_speed",
        "retrieval-sanity": "bench.retrieval.retrieval_sanity",
        "shard-latency": "bench.retrieval.shard_latency",
        "api-latency": "bench.serving.api_latency",
        "chat-page": "bench.serving.chat_page",
        "load-test": "bench.serving.load_test",
        "soak": "bench.serving.soak",
        "ray-build": "bench.scale.ray_build",
        "ray-eval": "bench.scale.ray_eval",
        "stream-build": "bench.scale.stream_build",
        "report": "bench.report",
        "run-all": "bench.run_all",
    },
    "train": {
        "aboutness": "training.aboutness",
        "clinical": "training.clinical",
        "quotes": "training.quotes",
        "reader": "training.reader",
    },
    "study": {
        "verifier": "evals.studies.verifier",
        "faithfulness-separation": "evals.studies.faithfulness.separation",
        "ragas-compare": "evals.studies.ragas.compare",
    },
}
HELP = {
    "bench": "benchmarks: retrieval, answers, serving, scale (docs/benchmarks.md)",
    "train": "fit the small models and settings chosen on dev parts (committed weights)",
    "study": "one-off eval studies (docs/results/)",
}


def _add(command: str) -> Callable[[Sub], None]:
    def add(sub: Sub) -> None:
        parser = sub.add_parser(command, help=HELP[command], description=HELP[command])
        parser.add_argument(
            "program", choices=sorted(PROGRAMS[command]), metavar="NAME", help="one of: %(choices)s"
        )
        parser.add_argument("args", nargs=argparse.REMAINDER, help="its own flags (NAME --help lists them)")

    return add


def run_program(args: argparse.Namespace, paths: Paths) -> int:
    """Run the named module's ``main()`` with ``args.args`` as its command line."""
    module = importlib.import_module(PROGRAMS[args.command][args.program])
    saved = sys.argv
    sys.argv = [f"medcite {args.command} {args.program}", *args.args]
    try:
        result = module.main()
    finally:
        sys.argv = saved
    return result if isinstance(result, int) else 0


PARSERS: dict[str, Callable[[Sub], None]] = {command: _add(command) for command in PROGRAMS}
HANDLERS: dict[str, Handler] = dict.fromkeys(PROGRAMS, run_program)
