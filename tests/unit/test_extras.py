"""A missing optional dependency raises an error that names the extra to install."""

import sys

import numpy as np
import pytest

from core.errors import MissingExtraError
from indexes.bm25 import Bm25Params, RankBm25Index
from indexes.dense.embedder import MiniLmEmbedder
from indexes.dense.index import DenseIndex, DenseParams


@pytest.fixture
def without(monkeypatch):
    def hide(*modules):
        for name in modules:
            monkeypatch.setitem(sys.modules, name, None)  # import now raises ImportError

    return hide


def test_faiss_missing_names_the_dense_extra(without):
    without("faiss")
    with pytest.raises(MissingExtraError, match=r"medcite\[dense\]") as err:
        DenseIndex.build(np.eye(3, dtype=np.float32), DenseParams())
    assert err.value.package == "faiss-cpu"


def test_torch_missing_names_the_dense_extra_when_a_model_must_be_exported(without, tmp_path, monkeypatch):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path))  # nothing exported there yet
    without("torch")
    with pytest.raises(MissingExtraError, match=r"medcite\[dense\]"):
        MiniLmEmbedder().embed(["text"])


def test_onnxruntime_missing_names_the_dense_extra(without):
    without("onnxruntime")
    with pytest.raises(MissingExtraError, match=r"medcite\[dense\]") as err:
        MiniLmEmbedder().embed(["text"])
    assert err.value.package == "onnxruntime"


def test_rank_bm25_missing_names_the_lexical_extra(without):
    without("rank_bm25")
    with pytest.raises(MissingExtraError, match=r"medcite\[lexical\]"):
        RankBm25Index.build([["a"]], Bm25Params())
