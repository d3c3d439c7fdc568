"""The quote reader: the shipped weights, loading with hash checks, and that the quote model is
refused when it was fitted on another reader."""

from __future__ import annotations

import json
import shutil

import pytest

from core.errors import ConfigError, ModelError
from rag.assemble import make_quote_reader
from rag.check.quotes import QuoteModel
from rag.rerank.quote_reader import SHIPPED_QUOTE_READER, QuoteReader

ASPIRIN = "How much aspirin should be chewed for suspected ACS chest pain?"


def test_shipped_reader_is_a_small_adapter_with_a_manifest() -> None:
    assert sorted(p.name for p in SHIPPED_QUOTE_READER.iterdir()) == ["adapter.safetensors", "manifest.json"]
    assert sum(p.stat().st_size for p in SHIPPED_QUOTE_READER.iterdir()) <= 1024 * 1024
    manifest = json.loads((SHIPPED_QUOTE_READER / "manifest.json").read_text())
    assert manifest["command"] == "medcite train quotes" and manifest["data"]["part"] == "dev"
    lines = manifest["dev_lines_out_of_fold"]
    assert lines["reader"]["roc_auc"] > lines["relevance_model"]["roc_auc"]


def test_the_shipped_quote_model_was_fitted_on_the_shipped_reader() -> None:
    assert QuoteModel.shipped().reader_adapter_sha256 == QuoteReader().manifest["adapter_sha256"]
    assert make_quote_reader(None) is None
    assert isinstance(make_quote_reader(0.5), QuoteReader)


def test_the_reader_puts_the_answering_line_above_a_line_beside_it() -> None:
    logits = QuoteReader().logits(
        ASPIRIN,
        [
            "Chest pain > Initial management\nAspirin 162-325 mg chewed, unless contraindicated.",
            "Chest pain > Initial management\nOxygen only if SpO2 < 90%.",
        ],
    )
    assert logits[0] > logits[1]
    assert QuoteReader().logits(ASPIRIN, []).shape == (0,)


def reader_copy(tmp_path, **manifest_changes):
    folder = tmp_path / "reader"
    shutil.copytree(SHIPPED_QUOTE_READER, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, **manifest_changes}))
    return folder


def test_a_changed_adapter_is_refused(tmp_path) -> None:
    folder = reader_copy(tmp_path)
    data = bytearray((folder / "adapter.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (folder / "adapter.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="does not match"):
        QuoteReader(folder).logits(ASPIRIN, ["line"])


def test_a_reader_over_another_relevance_model_is_refused(tmp_path) -> None:
    with pytest.raises(ModelError, match="another relevance model"):
        QuoteReader(reader_copy(tmp_path, relevance_overlay_sha256="0" * 64)).logits(ASPIRIN, ["line"])


def test_a_missing_reader_says_how_to_get_one(tmp_path) -> None:
    with pytest.raises(ModelError, match="medcite train quotes"):
        QuoteReader(tmp_path)
    with pytest.raises(ConfigError, match="batch_size"):
        QuoteReader(batch_size=0)


def test_a_quote_model_fitted_on_another_reader_is_refused(monkeypatch) -> None:
    other = QuoteModel((0.0,), 0.0, (0.0,), (1.0,), reader_adapter_sha256="0" * 64)
    monkeypatch.setattr(QuoteModel, "shipped", classmethod(lambda cls: other))
    with pytest.raises(ConfigError, match="another quote reader"):
        make_quote_reader(0.5)
