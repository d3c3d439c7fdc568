"""`medcite models train-reranker` passes its options to the training run."""

from __future__ import annotations

from pathlib import Path

import pytest

import training.reranker
from medcite.cli import main


def test_train_reranker_options_reach_the_configs(monkeypatch, tmp_path: Path, capsys) -> None:
    seen = {}

    def fake_train(paths, out, pair_config, fit_config, index_name="bioasq-snippets"):
        seen.update(out=out, pairs=pair_config, fit=fit_config, index=index_name)
        return out / "model"

    monkeypatch.setattr(training.reranker, "train_reranker", fake_train)
    argv = [
        "models",
        "train-reranker",
        "--out",
        str(tmp_path),
        "--epochs",
        "1",
        "--trainable-from",
        "3",
        "--medquad-questions",
        "20",
        "--seed",
        "5",
    ]
    assert main(argv) == 0
    assert (seen["fit"].epochs, seen["fit"].trainable_from, seen["fit"].seed) == (1, 3, 5)
    assert (seen["pairs"].medquad_questions, seen["pairs"].seed, seen["out"]) == (20, 5, tmp_path)
    assert "relevance model written to" in capsys.readouterr().out
    assert main(["models", "train-reranker", "--out", str(tmp_path)]) == 0
    assert seen["fit"].trainable_from == 4  # the shipped model's setting stays the default
    with pytest.raises(SystemExit):
        main(["models", "train-reranker", "--trainable-from", "two"])
