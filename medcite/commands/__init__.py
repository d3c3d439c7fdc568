"""The ``medcite`` subcommands, one module per group; ``medcite/cli.py`` assembles them.

Each module has ``PARSERS`` (a top-level command -> the function that adds its parser, and its
subparsers, to ``medcite``'s) and ``HANDLERS`` (``"command"`` or ``"command action"`` -> the function
that runs it). Heavy libraries are imported inside the handlers only, so parsing stays cheap.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from core.paths import Paths

Sub = argparse._SubParsersAction  # what add_subparsers returns
Handler = Callable[[argparse.Namespace, Paths], int]
