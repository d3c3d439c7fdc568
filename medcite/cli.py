"""The ``medcite`` command. Thin: each subcommand parses flags and makes one library call.

The subcommands live in ``medcite/commands/`` (index, ask, models, evals); this module assembles
their parsers, picks the handler and turns errors into exit codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from core.errors import MedciteError
from core.paths import Paths
from medcite.commands import Handler, Sub, ask, evals, index, models, programs

DEMO_QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"

GROUPS = (index, ask, models, evals, programs)
# The top-level commands in the order ``medcite --help`` lists them.
ORDER = (
    "index",
    "retrieve",
    "ask",
    "models",
    "eval",
    "bench",
    "train",
    "study",
    "serve",
    "profiles",
    "sources",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medcite", description="Cited answers from clinical sources.")
    sub = parser.add_subparsers(dest="command", required=True)
    adders: dict[str, Callable[[Sub], None]] = {}
    for group in GROUPS:
        adders.update(group.PARSERS)
    for name in ORDER:
        adders[name](sub)
    return parser


def _handlers() -> dict[str, Handler]:
    """``"command"`` or ``"command action"`` -> the function that runs it, from every group."""
    handlers: dict[str, Handler] = {}
    for group in GROUPS:
        handlers.update(group.HANDLERS)
    return handlers


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    paths = Paths.from_env()
    key = f"{args.command} {args.action}" if getattr(args, "action", None) else args.command
    try:
        return int(_handlers()[key](args, paths))
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
