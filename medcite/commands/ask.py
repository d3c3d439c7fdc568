"""``medcite ask``, ``medcite serve`` and ``medcite profiles``: the pipeline, asked here or over HTTP."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from core.paths import Paths
from medcite.commands import Handler, Sub


def _ask_command(sub: Sub) -> None:
    """``medcite ask``."""
    ask = sub.add_parser("ask", help="answer a clinical question with cited sources")
    ask.add_argument("question")
    ask.add_argument(
        "--follow-up",
        action="append",
        default=[],
        metavar="TEXT",
        help="a later turn of the same conversation (repeatable): the last one is answered, read "
        "with the turns before it, as the chat API reads a follow-up",
    )
    ask.add_argument("--profile", default="default", help="a packaged profile name or a .toml path")
    ask.add_argument("--closed-book", action="store_true", help="answer from model memory only (labelled)")
    ask.add_argument("--json", action="store_true")


def _serve_command(sub: Sub) -> None:
    """``medcite serve``."""
    serve = sub.add_parser("serve", help="run the HTTP API (settings from MEDCITE_* variables)")
    serve.add_argument("--host", help="interface to listen on (default MEDCITE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default MEDCITE_PORT or 8000)")
    serve.add_argument("--profile", action="append", help="a profile to serve (repeatable; default: default)")


def _profiles_command(sub: Sub) -> None:
    """``medcite profiles``."""
    sub.add_parser("profiles", help="list the packaged pipeline profiles")


def _cmd_ask(args: argparse.Namespace, paths: Paths) -> int:
    from core.types import Message
    from rag.assemble import assemble
    from rag.profile import load_profile
    from rag.render import answer_to_dict, answer_to_text

    turns: list[str] = [args.question, *args.follow_up]
    *earlier, question = turns
    history = [Message("user", text) for text in earlier]
    assembled = assemble(load_profile(args.profile), paths)
    try:
        answer = assembled.pipeline.answer(question, closed_book=args.closed_book, history=history)
    finally:
        assembled.close()
    if args.json:
        print(json.dumps(answer_to_dict(answer), indent=2, ensure_ascii=False))
    else:
        print(answer_to_text(answer), end="")
    return 0


def _cmd_serve(args: argparse.Namespace, paths: Paths) -> int:
    # The CLI is the composition root: the one package that reaches into api/ (lazily).
    from api.main import serve
    from api.settings import load_settings

    given = {"host": args.host, "port": args.port, "profiles": args.profile}
    serve(load_settings(**{key: value for key, value in given.items() if value}))  # only the flags given
    return 0


def _cmd_profiles(args: argparse.Namespace, paths: Paths) -> int:
    from rag.profile import available_profiles, load_profile

    for name in available_profiles():
        print(f"{name}: {load_profile(name).description}")
    return 0


PARSERS: dict[str, Callable[[Sub], None]] = {
    "ask": _ask_command,
    "serve": _serve_command,
    "profiles": _profiles_command,
}
HANDLERS: dict[str, Handler] = {
    "ask": _cmd_ask,
    "serve": _cmd_serve,
    "profiles": _cmd_profiles,
}
