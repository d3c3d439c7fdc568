"""Every ``medcite ...`` line in README.md's code blocks is one the command's parser accepts.

Only the parsing is checked (no command runs): a renamed subcommand or flag fails here, with the
README line in the message. A line is taken from a fenced block when it starts with ``medcite ``
(after indentation); a trailing ``# comment`` is dropped, ``;`` separates commands, a line ending
in ``\\`` continues on the next, and ``[optional parts]`` are checked as if given. Lines with a
``...`` placeholder or shell syntax a parser cannot judge (pipes, ``&``, redirections, ``$(``) are
skipped.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from medcite.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```|~~~)")
SHELL = ("&", "|", "$(", "`", ">", "<")
OPTIONAL = re.compile(r"\[([^\]]*)\]")


def fenced_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks, with ``\\`` continuations joined."""
    lines: list[str] = []
    in_fence = False
    pending = ""
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence, pending = not in_fence, ""
            continue
        if not in_fence:
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        lines.append(line)
    return lines


def _uncommented(line: str) -> str:
    """The line without a trailing ``# comment``; a ``#`` in quotes or inside a word is kept."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def medcite_commands(text: str) -> list[str]:
    """Every checkable ``medcite ...`` command of the fenced blocks of ``text``."""
    found = []
    for line in fenced_lines(text):
        for part in _uncommented(line).split(";"):
            command = part.strip()
            if not command.startswith("medcite "):
                continue
            if "..." in command or any(mark in command for mark in SHELL):
                continue
            found.append(OPTIONAL.sub(r"\1", command))
    return found


def rejection(command: str) -> str | None:
    """None when medcite's parser accepts ``command``; else what it said."""
    try:
        argv = shlex.split(command)[1:]
    except ValueError as exc:
        return f"cannot split: {exc}"
    try:
        _parser().parse_args(argv)
    except SystemExit as exit_:
        return f"the parser exited with {exit_.code}"
    return None


README_COMMANDS = medcite_commands((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_shows_commands():
    assert len(README_COMMANDS) >= 5


@pytest.mark.parametrize("command", README_COMMANDS)
def test_the_parser_accepts_every_readme_command(command: str, capsys):
    problem = rejection(command)
    assert problem is None, f"README.md: `{command}`: {problem}\n{capsys.readouterr().err}"


def test_the_extraction_follows_its_rules():
    text = (
        "medcite outside a block\n```bash\n"
        "medcite ask 'q?' --json   # a comment\n"
        "  medcite eval leakage --index x \\\n    --dataset medqa [--threshold 0.5]\n"
        'medcite ask "..." --profile fast\n'
        "medcite serve &\n"
        "medcite a; medcite b\n"
        "pip install medcite\n```\n"
    )
    assert medcite_commands(text) == [
        "medcite ask 'q?' --json",
        "medcite eval leakage --index x --dataset medqa --threshold 0.5",
        "medcite a",
        "medcite b",
    ]


def test_a_misspelt_command_is_rejected():
    assert rejection("medcite ask 'q?' --json") is None
    assert rejection("medcite aks 'q?'") is not None
    assert rejection("medcite ask 'q?' --no-such-flag") is not None
