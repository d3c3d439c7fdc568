"""A live medcite server and a headless Chromium for the chat page, shared by bench/serving/chat_page.py,
scripts/screenshots.py, the browser tests (tests/browser/) and the API tests (tests/api/support.py).

The server is the real app under uvicorn on a free loopback port, with a real BM25 index and a
scripted model (bench/serving/scripted.py) whose replies, timing and failures the caller controls: the
HTTP server, routing, auth, limits, queue, streaming and the page are the subject, not the model.
:func:`build_index` makes an index of six open-medicine guideline sections plus one user document
whose title and text carry HTML (an ``<img onerror>`` and a ``<script>``): the page must show them
as text. Chromium is Debian's package, launched by path (playwright cannot download its own
browsers here).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from api.main import create_app
from api.settings import ApiSettings
from bench.serving.scripted import ScriptedGenerator, ScriptedVerifier
from core.paths import Paths
from rag.assemble import Assembled
from rag.indexing import build_from_cli, open_index
from rag.pipeline import Pipeline
from rag.profile import Profile, with_changes
from rag.rerank.identity import IdentityReranker
from rag.retrieve.lexical import Bm25Retriever

KEY = "test-key-0123456789abcdef"
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


class RecordingRetriever(Bm25Retriever):
    """The real BM25 retriever, remembering the search texts it was given."""

    def __init__(self, index: Any) -> None:
        super().__init__(index)
        self.queries: list[str] = []

    def retrieve(self, query, k, filters=None):
        self.queries.append(query)
        return super().retrieve(query, k, filters)


def scripted_assembler(paths: Paths, generator: ScriptedGenerator, verifier: ScriptedVerifier | None = None):
    """Pipelines over the real BM25 index with the scripted model; the verifier supports every
    cited sentence unless given one that does not (the support gate runs as in production)."""

    def assemble(profile: Profile) -> Assembled:
        index, _ = open_index(paths, profile.index, with_embedder=False)
        # every passage kept, nothing quoted: the identity reranker has no relevance model
        scripted = with_changes(
            profile, {"rerank": {"threshold": None, "keep": 3}, "quote": {"threshold": None}}
        )
        pipeline = Pipeline(
            RecordingRetriever(index),
            IdentityReranker(),
            generator,
            verifier=verifier or ScriptedVerifier(),
            profile=scripted,
        )
        return Assembled(pipeline=pipeline, index=index, profile=profile)

    return assemble


@contextmanager
def live_server(settings: ApiSettings, assembler: Any = None) -> Iterator[tuple[str, Any]]:
    """Run the app under uvicorn on a free loopback port; yields (base_url, app)."""
    app = create_app(settings, assembler=assembler)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=30)


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
