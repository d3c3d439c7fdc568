"""docs/settings.md is what scripts/settings_reference.py renders, and every setting says what it means."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from api.settings import ApiSettings
from rag.profile import (
    ConversationConfig,
    GeneratorConfig,
    Profile,
    QuoteConfig,
    ReformulationConfig,
    RerankConfig,
    RetrievalConfig,
    VerifyConfig,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = (
    RetrievalConfig,
    ReformulationConfig,
    ConversationConfig,
    RerankConfig,
    GeneratorConfig,
    VerifyConfig,
    QuoteConfig,
    Profile,
    ApiSettings,
)


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "settings_reference", ROOT / "scripts" / "settings_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("settings_reference", module)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_the_rendered_one(reference):
    committed = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == reference.render(), (
        "docs/settings.md is stale: run .venv/bin/python scripts/settings_reference.py"
    )


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_has_a_description(model: type[BaseModel]):
    missing = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert missing == [], f"{model.__name__} fields without a description: {missing}"


def test_the_page_has_a_row_for_every_setting(reference):
    page = reference.render()
    assert list(reference.sections()) == [
        "retrieval",
        "reformulation",
        "conversation",
        "rerank",
        "generator",
        "verify",
        "quote",
    ]
    for section, model in reference.sections().items():
        assert f"## `[{section}]`" in page
        for name in model.model_fields:
            assert f"| `{name}` |" in page, f"[{section}] {name}"
    for name in ApiSettings.model_fields:
        assert f"| `MEDCITE_{name.upper()}` |" in page, name
