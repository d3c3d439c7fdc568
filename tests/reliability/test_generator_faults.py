"""The generator backend failing under a live API server and under the library pipeline.

The generator is the real OpenAI-compatible client talking HTTP to a scripted server on
127.0.0.1 (tests/unit/generate/fake_openai_server.py) that answers, stalls, returns garbage or is
not there at all. Expected: the API maps each failure to a clear status (503 down or malformed,
504 too slow) while retrieval and health keep working and the next request is served; the
library pipeline (what `medcite ask` runs) returns the evidence labelled "degraded".
"""

from __future__ import annotations

import socket

import httpx
import pytest

from api.settings import ApiSettings
from indexes.store import load_index
from rag.generate.openai_compat import OpenAICompatGenerator
from rag.pipeline import Pipeline
from rag.rerank.identity import IdentityReranker
from rag.retrieve.lexical import Bm25Retriever
from tests.api.support import KEY, live_server, scripted_assembler
from tests.helpers import fake_profile
from tests.unit.generate.fake_openai_server import FakeOpenAIServer

QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"
HEADERS = {"Authorization": f"Bearer {KEY}"}


def closed_port_url() -> str:
    with socket.socket() as sock:  # free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def chat(url: str, stream: bool = False) -> httpx.Response:
    body = {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 16, "stream": stream}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers=HEADERS, timeout=30)


@pytest.fixture(scope="module")
def backend():
    with FakeOpenAIServer(slow_s=2.0) as server:
        yield server


@pytest.fixture(scope="module")
def api(bm25_paths, backend):
    generator = OpenAICompatGenerator(backend.base_url, "qwen", timeout_s=0.5, retries=1, backoff_s=0.01)
    settings = ApiSettings(env="production", api_keys=[KEY], profiles=["fast"], rate_limit_per_minute=0)
    with live_server(settings, scripted_assembler(bm25_paths, generator)) as (url, app):
        yield url, app


@pytest.mark.parametrize(
    ("behaviours", "status", "code", "words"),
    [
        (("slow",), 504, "timeout", "within 0.5 s"),  # a timeout is not retried: it would double the wait
        (("garbage",), 503, "generator_unavailable", "not server-sent events"),
        (("cut",), 503, "generator_unavailable", "ended before"),
        (("500", "500"), 503, "generator_unavailable", "HTTP 500"),  # retried once, then reported
    ],
)
def test_a_failing_backend_is_a_clear_status_and_the_server_keeps_serving(
    api, backend, behaviours, status, code, words
):
    url, _ = api
    backend.then(*behaviours)
    response = chat(url)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"] and QUESTION not in error["message"]
    retrieved = httpx.post(f"{url}/v1/retrieve", json={"query": QUESTION, "k": 3}, headers=HEADERS)
    assert retrieved.status_code == 200 and retrieved.json()["data"]
    assert httpx.get(f"{url}/health").status_code == 200
    recovered = chat(url)  # the backend answers again: so does the server
    assert recovered.status_code == 200 and recovered.json()["choices"][0]["message"]["content"]


def test_a_stream_that_breaks_inside_its_first_sentence_is_a_clear_status(api, backend):
    # Content goes out a verified sentence at a time, and the backend breaks before its one
    # sentence is complete: nothing has been sent, so the client gets the status, not a 200 with
    # an error event (that case, a break after a sentence went out, is in tests/api/test_server.py).
    url, _ = api
    backend.then("bad_event")
    response = chat(url, stream=True)
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "generator_unavailable" and "streamed an event" in error["message"]
    assert chat(url, stream=True).status_code == 200  # and the next stream is served


def test_a_backend_that_is_down_is_503_and_the_library_pipeline_degrades(bm25_paths):
    down = OpenAICompatGenerator(closed_port_url(), "qwen", timeout_s=1, retries=1, backoff_s=0.01)
    settings = ApiSettings(env="production", api_keys=[KEY], profiles=["fast"], rate_limit_per_minute=0)
    with live_server(settings, scripted_assembler(bm25_paths, down)) as (url, _):
        response = chat(url)
        assert response.status_code == 503 and response.json()["error"]["code"] == "generator_unavailable"
        assert httpx.get(f"{url}/ready").status_code == 200  # the index is fine; /ready says so

    index = load_index(bm25_paths.indexes_dir / "default")
    try:
        pipeline = Pipeline(Bm25Retriever(index), IdentityReranker(), down, profile=fake_profile())
        answer = pipeline.answer(QUESTION)
    finally:
        index.close()
    assert answer.mode == "degraded" and answer.evidence and answer.citations == ()
    assert any(note.startswith("generator error") and "127.0.0.1" in note for note in answer.notes), (
        answer.notes
    )
