"""A live medcite server and a headless Chromium for the chat page, shared by the browser tests,
scripts/screenshots.py and bench/chat_page.py.

The server is tests/api/support.py's: a real BM25 index and a scripted model whose replies,
timing and failures the caller controls. The index holds six open-medicine guideline sections
plus one user document whose title and text carry HTML (an ``<img onerror>`` and a ``<script>``):
the page must show them as text. Chromium is Debian's package, launched by path (playwright
cannot download its own browsers here).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.settings import ApiSettings
from core.paths import Paths
from rag.indexing import build_from_cli
from tests.api.support import ScriptedGenerator, live_server, scripted_assembler
from tests.helpers import ScriptedVerifier

QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"
REPLY = "The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation [1]."
SECOND = "Men with a score of 2 or more should receive oral anticoagulation [1]."
UNSUPPORTED = "The recommended dose is 200 mg every 2 weeks [2]."
HOSTILE_TITLE = 'Warfarin monitoring note <img src=x onerror="window.__pwned=1">'
HOSTILE_DOC = f"""# {HOSTILE_TITLE}

## Warfarin and the INR

Warfarin anticoagulation is monitored with the INR <script>window.__pwned=2</script>, aiming at an
INR of 2 to 3 in atrial fibrillation.
"""
INSTALL = (
    "the chat page's browser tests need Debian's chromium and the playwright package: "
    "`apt-get install chromium` (scripts/setup.sh does it when run as root) and "
    "`pip install -e '.[dev]'`"
)


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright: Any, executable: str) -> Any:
    # --no-sandbox: chromium refuses to start its sandbox as root (CI containers, this machine)
    return playwright.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])


def build_index(folder: Path) -> Paths:
    """Six open-medicine sections and one hostile user document, BM25 only, under ``folder``."""
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "warfarin-note.md").write_text(HOSTILE_DOC, encoding="utf-8")
    paths = Paths.from_env().model_copy(update={"data_dir": folder / "data"})
    build_from_cli(paths, sources=["open-medicine", f"user-docs={docs}"], limit=6, dense=None, progress=False)
    return paths


def server_settings(**changes: Any) -> ApiSettings:
    base = {
        "env": "development",
        "api_keys": [],
        "profiles": ["fast"],
        "rate_limit_per_minute": 0,
        "queue_limit": 2,
        "max_tokens": 300,
    }
    return ApiSettings(**{**base, **changes})


@dataclass
class Served:
    url: str
    generator: ScriptedGenerator
    app: Any

    @property
    def pipeline_holder(self) -> Any:
        """The served profile's assembly; replace its ``pipeline`` to change settings."""
        return self.app.state.medcite.get("fast").assembled


@contextmanager
def serve(paths: Paths, reply: str = REPLY, **changes: Any) -> Iterator[Served]:
    """A live server whose model replies ``reply``; sentences naming "200 mg" are unsupported."""
    generator = ScriptedGenerator(reply)
    assembler = scripted_assembler(paths, generator, ScriptedVerifier(unsupported=["200 mg"]))
    with live_server(server_settings(**changes), assembler) as (url, app):
        yield Served(url, generator, app)


def ask(page: Any, question: str = QUESTION) -> None:
    """Type ``question`` and press Enter, as a user does."""
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")


def wait_for_answer(page: Any, turn: int = 0) -> Any:
    """The ``turn``-th answer once it is complete (no longer aria-busy)."""
    answer = page.locator(".turn .answer").nth(turn)
    answer.and_(page.locator('[aria-busy="false"]')).wait_for()
    return answer
