from __future__ import annotations

import pytest

from rag.config import Paths
from rag.indexing import build_from_cli


@pytest.fixture(scope="session")
def bm25_paths(tmp_path_factory) -> Paths:
    """A real BM25-only index of six open-medicine guideline sections (no embedder needed)."""
    data = tmp_path_factory.mktemp("api-data")
    paths = Paths.from_env().model_copy(update={"data_dir": data})
    build_from_cli(paths, sources=["open-medicine"], limit=6, dense=None, progress=False)
    return paths
