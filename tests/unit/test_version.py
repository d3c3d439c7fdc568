"""One version source: pyproject.toml, read back by the package, the API and index manifests."""

from __future__ import annotations

import tomllib
from pathlib import Path

import core


def test_package_version_is_pyprojects() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert core.__version__ == pyproject["project"]["version"]


def test_the_api_reports_the_package_version() -> None:
    from api.main import create_app
    from api.settings import load_settings

    app = create_app(load_settings(api_keys="k" * 20))  # a factory: no model is loaded here
    assert app.openapi()["info"]["version"] == core.__version__
