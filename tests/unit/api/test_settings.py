from __future__ import annotations

import pytest

from api.settings import load_settings
from core.errors import ConfigError

KEY = "k" * 16


def test_production_refuses_to_start_without_keys(monkeypatch):
    monkeypatch.delenv("MEDCITE_API_KEYS", raising=False)
    with pytest.raises(ConfigError, match="MEDCITE_API_KEYS is empty"):
        load_settings(env="production")


def test_keys_and_origins_come_comma_separated_from_the_environment(monkeypatch):
    monkeypatch.setenv("MEDCITE_API_KEYS", f"{KEY}, {'z' * 20} ,")
    monkeypatch.setenv("MEDCITE_CORS_ORIGINS", "https://a.example,https://b.example")
    monkeypatch.setenv("MEDCITE_PROFILES", "fast,default")
    monkeypatch.setenv("MEDCITE_MAX_K", "25")
    settings = load_settings()
    assert settings.api_keys == [KEY, "z" * 20]
    assert settings.cors_origins == ["https://a.example", "https://b.example"]
    assert settings.profiles == ["fast", "default"]
    assert settings.max_k == 25 and settings.auth_required


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"env": "production", "api_keys": ["short"]}, "at least 16 characters"),
        ({"env": "development", "generator_backend": "openai"}, "needs MEDCITE_GENERATOR_URL"),
        ({"env": "development", "max_k": 0}, "MEDCITE_MAX_K"),
        ({"env": "staging"}, "MEDCITE_ENV"),
        ({"env": "development", "queue_timeout_s": float("inf")}, "MEDCITE_QUEUE_TIMEOUT_S"),
    ],
)
def test_unsafe_or_invalid_settings_are_named(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(**overrides)


def test_development_runs_without_keys_and_cors_is_closed_by_default():
    settings = load_settings(env="development", api_keys=[])
    assert not settings.auth_required and settings.cors_origins == []
