"""``medcite serve``'s log: FAISS's loader, which logs each missing AVX-512/AVX2 build as a
``ModuleNotFoundError``, says nothing; the server's own INFO lines still show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("faiss")

REPO = Path(__file__).resolve().parents[3]
START = """
import logging
from api.main import configure_logging
configure_logging()
import faiss
logging.getLogger("medcite.api").info("server log works")
"""


def test_importing_faiss_under_the_server_log_writes_no_loader_line():
    run = subprocess.run(
        [sys.executable, "-c", START], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    assert "INFO medcite.api: server log works" in run.stderr  # the log is on, at INFO
    assert "faiss.loader" not in run.stderr and "ModuleNotFoundError" not in run.stderr, run.stderr
    assert "AVX512" not in run.stderr, run.stderr
