"""Property tests of the config loaders: any file or environment gives a valid object or a
ConfigError naming the problem, never another exception."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from api.settings import ApiSettings, load_settings
from core.errors import ConfigError
from evals.engine.config import EvalConfig, load_config
from rag.profile import Profile, load_profile

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
SCALAR = (
    st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.booleans()
    | TEXT
    | st.sampled_from(["hybrid", "bm25", "rrf", "weighted", "none", "llm", "medqa", "openai", "fast"])
)
VALUE = st.recursive(
    SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8
)


def table(known: dict[str, list[str]]) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping mostly of the schema's own keys (so validation, not only parsing, is exercised)."""
    keys = st.sampled_from([*known, *(f"{t}.{k}" for t, ks in known.items() for k in ks)]) | TEXT

    def nest(flat: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in flat.items():
            head, _, tail = key.partition(".")
            if tail and head in known:
                sub = out.setdefault(head, {})
                if isinstance(sub, dict):
                    sub[tail] = value
            else:
                out[key] = value
        return out

    return st.dictionaries(keys, VALUE, max_size=6).map(nest)


PROFILE_KEYS = {
    name: list(field.annotation.model_fields) if hasattr(field.annotation, "model_fields") else []
    for name, field in Profile.model_fields.items()
}
EVAL_KEYS = {
    "name": [],
    "profile": [],
    "seed": [],
    "mcq": [],
    "grid": ["index", "mode", "rerank", "k", "closed_book"],
    "retrieval": [],
    "retrieval_grid": ["depth", "mode", "rerank_n"],
    "answers": [],
    "answer_metrics": [],
    "max_tokens": [],
}


def _toml_string(text: str) -> str:
    escaped = "".join(f"\\u{ord(ch):04x}" if ord(ch) < 0x20 or ch in '"\\\x7f' else ch for ch in text)
    return f'"{escaped}"'


def to_toml(value: Any) -> str:
    """A tiny TOML writer (inline tables only) for the generated values."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if math.isinf(value)
            else repr(value)
        )
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(to_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_toml_string(k)} = {to_toml(v)}" for k, v in value.items()) + "}"


def toml_document(raw: dict[str, Any]) -> str:
    return "".join(f"{_toml_string(k)} = {to_toml(v)}\n" for k, v in raw.items())


@contextmanager
def written(name: str, content: str | bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        yield path


def outcome(load: Callable[[Path], Any], path: Path) -> Any:
    try:
        return load(path)
    except ConfigError as exc:
        assert str(exc)
        return exc


MALFORMED = (
    st.binary(max_size=60)
    | st.text(max_size=60)
    | st.sampled_from(
        [
            "\xff",
            "a = [1, 2",
            "[[[",
            "a: [1, 2",
            "? [1, 2]\n: 3",
            "- 1\n- 2",
            "x = 1\nx = 2",
            "*a",
            "!!python/object:os.system x",
        ]
    )
)


# -- pipeline profiles ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(table(PROFILE_KEYS))
def test_random_profile_files_load_or_raise_config_error(raw):
    with written("p.toml", toml_document(raw)) as path:
        result = outcome(load_profile, path)
    if isinstance(result, Profile):
        # what a pipeline would compute with: no NaN or infinite fusion weights or constants
        assert all(math.isfinite(w) for w in result.retrieval.weights)
        assert math.isfinite(result.retrieval.rrf_k)


@settings(max_examples=100, deadline=None)
@given(MALFORMED)
def test_malformed_profile_files_raise_config_error(content):
    with written("p.toml", content) as path:
        assert isinstance(outcome(load_profile, path), Profile | ConfigError)


@pytest.mark.parametrize("weights", ["[nan, 0.5]", "[inf, 0.5]", "[0.5, -inf]"])
def test_non_finite_fusion_weights_are_refused(weights):
    with written("p.toml", f"[retrieval]\nweights = {weights}\n") as path, pytest.raises(ConfigError):
        load_profile(path)


@settings(max_examples=50, deadline=None)
@given(TEXT)
def test_unknown_profile_names_raise_config_error(name):
    try:
        assert isinstance(load_profile(name), Profile)  # a packaged profile, or a path that exists
    except ConfigError as exc:
        assert "profile" in str(exc)


# -- evaluation configs -----------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(table(EVAL_KEYS), st.sampled_from(["c.toml", "c.yaml", "c.yml"]))
def test_random_eval_configs_load_or_raise_config_error(raw, name):
    content = toml_document(raw) if name.endswith(".toml") else yaml.safe_dump(raw, allow_unicode=True)
    with written(name, content) as path:
        result = outcome(load_config, path)
    assert isinstance(result, EvalConfig | ConfigError)


@settings(max_examples=150, deadline=None)
@given(MALFORMED, st.sampled_from(["c.toml", "c.yaml", "c.yml", "c.json", "c"]))
def test_malformed_eval_configs_raise_config_error(content, name):
    with written(name, content) as path:
        assert isinstance(outcome(load_config, path), EvalConfig | ConfigError)


def test_invalid_utf8_and_broken_yaml_are_config_errors():
    for name, content in [("c.toml", b"\xff\xfe"), ("c.yaml", b"\xff"), ("c.yaml", b"a: [1, 2\n")]:
        with written(name, content) as path, pytest.raises(ConfigError, match="cannot"):
            load_config(path)


# -- server settings --------------------------------------------------------------------------

ENV_NAMES = [name.upper() for name in ApiSettings.model_fields]
ENV_VALUE = (
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20)
    | st.sampled_from(["", "0", "-1", "1e999", "nan", "inf", "true", "none", "null", "[]", "{}", "65536"])
    | st.sampled_from(["development", "production", "openai", "k" * 16 + "," + "z" * 20, "fast,default"])
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(ENV_NAMES) | TEXT.map(str.upper), ENV_VALUE, max_size=6))
def test_any_environment_gives_settings_or_config_error(env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEDCITE_")}
    names = {f"MEDCITE_{k}": v for k, v in env.items() if "\x00" not in k and "=" not in k and k}
    with mock.patch.dict(os.environ, {**clean, **names}, clear=True):
        try:
            result = load_settings()
        except ConfigError as exc:
            assert str(exc).startswith("invalid server settings")
            return
    assert isinstance(result, ApiSettings)
    assert result.env == "development" or (
        bool(result.api_keys) and all(len(k) >= 16 for k in result.api_keys)
    )
