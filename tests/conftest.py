"""Shared fixtures. Real benchmark data is read from ../shared/data (or MEDCITE_SOURCE_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def source_data() -> Path:
    """The folder of local copies of the public sources (``../shared/data`` by default)."""
    root = Path(os.environ.get("MEDCITE_SOURCE_DATA", REPO.parent / "shared" / "data"))
    if not root.is_dir():
        pytest.fail(f"source data not found at {root}; set MEDCITE_SOURCE_DATA")
    return root
