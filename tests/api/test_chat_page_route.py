"""The chat page's routes over HTTP (no browser): the page and its assets need no key and carry
a strict CSP, nothing outside api/static is served, and /ui/config reports the served index."""

from __future__ import annotations

import re

import httpx
import pytest

from api.routes.page import STATIC
from api.settings import ApiSettings
from tests.api.support import KEY, ScriptedGenerator, live_server, scripted_assembler


@pytest.fixture(scope="module")
def keyed(bm25_paths):
    settings = ApiSettings(
        env="production", api_keys=[KEY], profiles=["fast", "default"], rate_limit_per_minute=0
    )
    with live_server(settings, scripted_assembler(bm25_paths, ScriptedGenerator("unused"))) as (url, _):
        yield url


def test_the_page_and_every_asset_it_loads_are_served_without_a_key(keyed):
    page = httpx.get(f"{keyed}/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    loaded = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    imported = {
        m
        for f in STATIC.glob("*.js")
        for m in re.findall(r'from "\./([\w.]+)"', f.read_text(encoding="utf-8"))
    }
    assert "/static/app.js" in loaded and "/static/app.css" in loaded and imported
    for path in [*loaded, *(f"/static/{name}" for name in imported)]:
        asset = httpx.get(f"{keyed}{path}")
        assert asset.status_code == 200, path
        expected = "text/javascript" if path.endswith(".js") else "text/css"
        assert asset.headers["content-type"].startswith(expected), path


@pytest.mark.parametrize(
    "path",
    [
        "/static/missing.js",
        "/static/..%2Fmain.py",
        "/static/.hidden.js",
        "/static/page.py",
        "/static/%2E%2E%2Froutes%2Fpage.py",
    ],
)
def test_nothing_outside_the_static_files_is_served(keyed, path):
    response = httpx.get(f"{keyed}{path}")
    assert response.status_code == 404
    assert "def " not in response.text and response.json()["error"]["type"] == "not_found"


def test_ui_config_needs_the_key_and_names_each_profiles_index_and_sources(keyed, bm25_paths):
    assert httpx.get(f"{keyed}/ui/config").status_code == 401
    config = httpx.get(f"{keyed}/ui/config", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert config["auth_required"] is True
    assert [p["id"] for p in config["profiles"]] == ["fast", "default"]
    assert {p["index"] for p in config["profiles"]} == {"default"}
    assert all(p["sources"] == ["open-medicine"] for p in config["profiles"])
    assert config["profiles"][0]["description"].startswith("No reranking")
