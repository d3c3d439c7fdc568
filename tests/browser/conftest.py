"""Fixtures for the chat page's browser tests: a real headless Chromium against a live server
(bench/serving/live_chat.py). Without chromium or playwright the tests skip, saying how to install them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.serving.live_chat import (
    INSTALL,
    REPLY,
    Served,
    build_index,
    find_chromium,
    launch_chromium,
    serve,
)
from core.paths import Paths


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module: Playwright's sync API keeps an asyncio loop running in this
    thread while it is open, and a later test's ``asyncio.run()`` would refuse to start."""
    executable = find_chromium()
    if executable is None:
        pytest.skip(f"chromium not found: {INSTALL}")
    sync_api = pytest.importorskip("playwright.sync_api", reason=f"playwright is not installed: {INSTALL}")
    with sync_api.sync_playwright() as p:
        launched = launch_chromium(p, executable)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def browser_paths(tmp_path_factory) -> Paths:
    return build_index(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="session")
def open_server(browser_paths) -> Iterator[Served]:
    """A server without API keys, shared by the tests; ``chat`` resets its model after each."""
    with serve(browser_paths) as served:
        yield served


@pytest.fixture
def chat(open_server) -> Iterator[Served]:
    holder = open_server.pipeline_holder
    pipeline = holder.pipeline
    yield open_server
    generator = open_server.generator
    generator.reply, generator.delay_s, generator.timeout_after, generator.gate = REPLY, 0.0, None, None
    vars(generator).pop("stream", None)  # a test may replace the model's stream
    holder.pipeline = pipeline


@pytest.fixture
def page(browser) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()
    assert errors == [], f"the page raised: {errors}"
