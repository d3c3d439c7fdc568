"""A small real index (6 open-medicine guideline sections: atrial fibrillation and CKD), built once
per test session with the real embedder and shared by the end-to-end tests."""

from __future__ import annotations

import pytest

from core.paths import Paths
from rag.indexing import build_from_cli


@pytest.fixture(scope="session")
def small_index_paths(tmp_path_factory) -> Paths:
    data = tmp_path_factory.mktemp("e2e-data")
    paths = Paths.from_env().model_copy(update={"data_dir": data})
    summary = build_from_cli(paths, sources=["open-medicine"], limit=6, progress=False)
    assert "6 documents" in summary
    return paths
