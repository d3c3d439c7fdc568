"""Start one of the test servers (serve_index, serve_load) in a process of its own.

Its own process, so that a crash in it (SIGBUS on a damaged mapped file) fails a test instead of
killing pytest, and so that its memory can be read alone. The server prints its URL on the first
line of stdout and serves until its stdin is closed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def server_process(module: str, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``python -m module args...`` from the repository root; yields (base URL, process)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http"):
            pytest.fail(f"the test server {module} did not start (exit {proc.wait(timeout=30)})")
        yield url, proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
