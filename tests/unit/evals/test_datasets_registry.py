"""The dataset registry: names to loaders, unknown names listing the known ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError, SourceError
from core.paths import Paths
from evals.datasets import MCQ_LOADERS, RETRIEVAL_LOADERS, load_mcq, load_retrieval


def test_known_names() -> None:
    assert list(MCQ_LOADERS) == ["mirage", "mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq", "pubmedqa-pqal"]
    assert list(RETRIEVAL_LOADERS) == ["bioasq-snippets", "liveqa-medquad", "pubmedqa-pqal"]


def test_unknown_names_list_the_known_ones() -> None:
    paths = Paths(source_data=Path("/nonexistent"))
    with pytest.raises(ConfigError, match=r"unknown multiple-choice dataset 'usmle'; known: mirage, mmlu"):
        load_mcq("usmle", paths)
    with pytest.raises(
        ConfigError, match=r"known: bioasq-snippets, liveqa-medquad, pubmedqa-pqal, beir:<folder>"
    ):
        load_retrieval("nfcorpus", paths)
    with pytest.raises(ConfigError, match="needs a folder"):
        load_retrieval("beir:", paths)


def test_missing_data_names_the_setting(tmp_path: Path) -> None:
    paths = Paths(source_data=tmp_path)
    for load, name in (
        (load_mcq, "medqa"),
        (load_retrieval, "bioasq-snippets"),
        (load_retrieval, "liveqa-medquad"),
    ):
        with pytest.raises(SourceError, match="MEDCITE_SOURCE_DATA"):
            load(name, paths)  # type: ignore[operator]
