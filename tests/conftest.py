"""Shared fixtures. Real benchmark data is read from ../shared/data (or MEDCITE_SOURCE_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from core.paths import Paths
from tests.helpers import guideline_bm25

REPO = Path(__file__).resolve().parent.parent

# CI draws the same hypothesis examples on every run, so a red CI is a change's doing, never the
# luck of the draw; a developer's run draws new ones (and keeps failures in .hypothesis/) to find
# what CI would not. HYPOTHESIS_PROFILE=ci reproduces CI's draw locally.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def source_data() -> Path:
    """The folder of local copies of the public sources (``../shared/data`` by default)."""
    root = Path(os.environ.get("MEDCITE_SOURCE_DATA", REPO.parent / "shared" / "data"))
    if not root.is_dir():
        pytest.fail(f"source data not found at {root}; set MEDCITE_SOURCE_DATA")
    return root


@pytest.fixture(scope="session")
def bm25_paths(tmp_path_factory) -> Paths:
    """A real BM25-only index of six open-medicine guideline sections (no embedder needed)."""
    return guideline_bm25(tmp_path_factory.mktemp("api-data"), 6)
