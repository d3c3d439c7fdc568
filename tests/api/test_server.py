"""The HTTP API over a live uvicorn server, called with the official openai client and httpx."""

from __future__ import annotations

import threading
import time

import httpx
import openai
import pytest

from api.settings import ApiSettings
from core.types import Filters
from indexes.store import load_index
from rag.answer.outcomes import CLOSEST_LEAD, NOTHING_RELEVANT
from rag.indexing import retrieve
from tests.api.support import (
    KEY,
    ScriptedGenerator,
    client,
    conforming_events,
    live_server,
    scripted_assembler,
)
from tests.helpers import ScriptedVerifier

QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"
REPLY = "The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation [1]."
SECOND = "Men with a score of 2 or more should receive oral anticoagulation [1]."


def settings(**changes) -> ApiSettings:
    base = {
        "env": "production",
        "api_keys": [KEY],
        "profiles": ["fast"],
        "max_body_bytes": 8192,
        "max_question_chars": 500,
        "max_k": 20,
        "max_tokens": 300,
        "queue_limit": 1,
        "rate_limit_per_minute": 0,
    }
    return ApiSettings(**{**base, **changes})


@pytest.fixture(scope="module")
def server(bm25_paths):
    generator = ScriptedGenerator(REPLY)
    with live_server(settings(), scripted_assembler(bm25_paths, generator)) as (url, app):
        yield url, generator, app


def resolve(citation: dict, index_folder) -> None:
    """A citation resolves when its quote is exactly the indexed chunk's text and span."""
    index = load_index(index_folder)
    try:
        row = next(
            i for i in range(len(index.chunks)) if index.chunks.get(i).chunk_id == citation["chunk_id"]
        )
        chunk = index.chunks.get(row)
    finally:
        index.close()
    assert chunk.text == citation["quote"]
    assert (chunk.start, chunk.end, chunk.doc_id) == (citation["start"], citation["end"], citation["doc_id"])
    assert citation["end"] - citation["start"] == len(citation["quote"])


def test_chat_completion_carries_citations_that_resolve(server, bm25_paths):
    url, _, _ = server
    result = client(url).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": QUESTION}], max_tokens=64
    )
    assert result.object == "chat.completion"
    assert result.choices[0].message.content == REPLY
    assert result.choices[0].finish_reason == "stop"
    assert result.usage.completion_tokens == len(REPLY.split(" "))
    extra = result.model_extra
    assert extra["medcite"]["mode"] == "rag"
    assert [c["marker"] for c in extra["citations"]] == [1]
    assert extra["citations"][0]["chunk_id"] == extra["evidence"][0]["chunk_id"]
    resolve(extra["citations"][0], bm25_paths.indexes_dir / "default")


def test_streamed_completion_ends_with_citations_then_done(server, bm25_paths):
    url, _, _ = server
    stream = client(url).chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == REPLY
    final = [c for c in chunks if c.model_extra.get("citations") is not None]
    assert len(final) == 1 and final[0].choices[0].finish_reason == "stop"
    resolve(final[0].model_extra["citations"][0], bm25_paths.indexes_dir / "default")
    assert chunks[-1].usage.completion_tokens == len(REPLY.split(" "))
    # On the wire: the citations chunk, then the usage chunk, then [DONE] closes the stream.
    body = {"model": "fast", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    raw = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"})
    events = conforming_events(raw.text)
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert events[-1] == "[DONE]" and "citations" in events[-2]


def test_follow_up_turn_searches_with_the_previous_question(server):
    url, _, app = server
    retriever = app.state.medcite.get("fast").assembled.pipeline.retriever
    messages = [
        {"role": "user", "content": "How is atrial fibrillation anticoagulation decided?"},
        {"role": "assistant", "content": "With the CHA2DS2-VASc score [1]."},
        {"role": "user", "content": "And what about bleeding risk?"},
    ]
    client(url).chat.completions.create(model="fast", messages=messages)
    assert (
        retriever.queries[-1]
        == "How is atrial fibrillation anticoagulation decided?\nAnd what about bleeding risk?"
    )


def test_retrieve_returns_ranked_chunks_with_provenance(server, bm25_paths):
    url, _, _ = server
    response = httpx.post(
        f"{url}/v1/retrieve",
        json={"query": "anticoagulation atrial fibrillation", "k": 3, "mode": "bm25"},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert [h["rank"] for h in data] == [1, 2, 3]
    assert data[0]["score"] >= data[1]["score"] >= data[2]["score"]
    assert all(h["url"] and h["license"] and h["end"] - h["start"] == len(h["text"]) for h in data)
    assert "anticoagulation" in data[0]["text"].lower()
    direct = retrieve(
        bm25_paths, "default", "anticoagulation atrial fibrillation", k=3, mode="bm25", filters=Filters()
    )
    assert [h["chunk_id"] for h in data] == [h.chunk.chunk_id for h in direct]


def test_models_lists_served_profiles_and_health_needs_no_key(server):
    url, _, _ = server
    assert [m.id for m in client(url).models.list().data] == ["fast"]
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}
    ready = httpx.get(f"{url}/ready").json()
    assert ready["status"] == "ready" and ready["profiles"]["fast"]["chunks"] > 0


def test_missing_or_wrong_key_is_refused(server):
    url, _, _ = server
    with pytest.raises(openai.AuthenticationError):
        client(url, key="wrong-key-0123456789abcdef").models.list()
    response = httpx.post(f"{url}/v1/retrieve", json={"query": "af"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["type"] == "invalid_api_key"


@pytest.mark.parametrize(
    ("body", "status", "kind", "code", "param"),
    [
        (
            {"model": "fast", "messages": [{"role": "user", "content": "x" * 9000}]},
            413,
            "request_too_large",
            "request_too_large",
            None,
        ),
        (
            {"model": "fast", "messages": [{"role": "user", "content": "q" * 600}]},
            413,
            "request_too_large",
            "request_too_large",
            None,
        ),
        ({"model": "fast", "messages": []}, 400, "invalid_request_error", "invalid_value", "messages"),
        (
            {"model": "fast", "messages": [{"role": "wizard", "content": "hi"}]},
            400,
            "invalid_request_error",
            "invalid_value",
            "messages.0.role",
        ),
        (
            {"model": "fast", "messages": [{"role": "assistant", "content": "hi"}]},
            400,
            "invalid_request_error",
            "invalid_value",
            "messages.0.role",
        ),
        (
            {"model": "nope", "messages": [{"role": "user", "content": QUESTION}]},
            404,
            "invalid_request_error",
            "model_not_found",
            "model",
        ),
        (
            {"model": "fast", "messages": [{"role": "user", "content": "?!"}]},
            400,
            "invalid_request_error",
            "invalid_request_error",
            None,
        ),
        (
            {"model": "fast", "max_tokens": 5000, "messages": [{"role": "user", "content": "q"}]},
            400,
            "invalid_request_error",
            "invalid_value",
            "max_tokens",
        ),
    ],
)
def test_bad_chat_requests_get_openai_style_errors(server, body, status, kind, code, param):
    url, _, _ = server
    response = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (kind, code, param) and error["message"]
    assert "Traceback" not in response.text and response.headers["x-request-id"]


def test_malformed_json_and_bad_retrieval_parameters(server):
    url, _, _ = server
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    not_json = httpx.post(f"{url}/v1/chat/completions", content=b"{not json", headers=auth)
    assert not_json.status_code == 400
    assert not_json.json()["error"] == {
        "message": not_json.json()["error"]["message"],
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_json",
    }
    assert httpx.post(f"{url}/v1/retrieve", json={"query": "af", "k": 21}, headers=auth).status_code == 400
    typo = httpx.post(f"{url}/v1/retrieve", json={"query": "af", "kk": 1}, headers=auth)
    assert typo.status_code == 400
    assert (typo.json()["error"]["code"], typo.json()["error"]["param"]) == ("unknown_parameter", "kk")
    dense = httpx.post(f"{url}/v1/retrieve", json={"query": "af", "mode": "dense"}, headers=auth)
    assert dense.status_code == 400 and "--mode bm25" in dense.json()["error"]["message"]


def test_an_oversize_body_is_refused_by_its_length_or_by_counting_a_chunked_one(server):
    url, generator, _ = server
    body = b'{"model": "fast", "messages": [{"role": "user", "content": "' + b"x" * 9000 + b'"}]}'

    def chunked():  # no Content-Length: the limit must count what arrives
        yield from (body[i : i + 1000] for i in range(0, len(body), 1000))

    before = len(generator.streams)
    for content in (body, chunked()):
        response = httpx.post(
            f"{url}/v1/chat/completions",
            content=content,
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        )
        assert ("content-length" in response.request.headers) == (content is body)
        assert response.status_code == 413
        assert response.headers["content-type"] == "application/json" and response.headers["x-request-id"]
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("request_too_large", "request_too_large")
        assert "limit of 8192 bytes" in error["message"]
    assert len(generator.streams) == before


def test_full_queue_answers_429_with_retry_after_and_recovers(server):
    url, generator, _ = server
    generator.gate = threading.Event()  # hold the model busy
    body = {"model": "fast", "messages": [{"role": "user", "content": QUESTION}]}
    auth = {"Authorization": f"Bearer {KEY}"}
    results: list[int] = []

    def call() -> None:
        results.append(
            httpx.post(f"{url}/v1/chat/completions", json=body, headers=auth, timeout=30).status_code
        )

    running, waiting = threading.Thread(target=call), threading.Thread(target=call)
    try:
        running.start()
        time.sleep(0.5)
        waiting.start()  # queue_limit=1: this one waits
        time.sleep(0.5)
        refused = httpx.post(f"{url}/v1/chat/completions", json=body, headers=auth)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) > 0
        assert refused.json()["error"]["type"] == "rate_limit_exceeded"
        # Retrieval does not queue behind generation.
        assert httpx.post(f"{url}/v1/retrieve", json={"query": "af"}, headers=auth).status_code == 200
    finally:
        generator.gate.set()
        running.join(30)
        waiting.join(30)
        generator.gate = None
    assert results == [200, 200]


def test_generator_timeout_is_504_before_streaming_and_an_error_event_after(server):
    url, generator, _ = server
    messages = [{"role": "user", "content": QUESTION}]
    generator.timeout_after = 0
    try:
        with pytest.raises(openai.APIStatusError) as caught:
            client(url).chat.completions.create(model="fast", messages=messages)
        assert caught.value.status_code == 504
        assert caught.value.body["type"] == "timeout"
        # Content streams a verified sentence at a time: a timeout inside the first sentence comes
        # before anything was sent, so it is still a proper 504.
        generator.timeout_after = 3
        with pytest.raises(openai.APIStatusError) as caught:
            client(url).chat.completions.create(model="fast", messages=messages, stream=True)
        assert caught.value.status_code == 504
        # Once the first sentence has gone out, a timeout arrives as an error event.
        generator.reply = f"{REPLY} {SECOND}"
        generator.timeout_after = len(REPLY.split(" ")) + 2
        stream = client(url).chat.completions.create(model="fast", messages=messages, stream=True)
        received = []
        with pytest.raises(openai.APIError, match="longer than"):
            for chunk in stream:
                received.append(chunk.choices[0].delta.content or "")
        assert "".join(received) == REPLY
    finally:
        generator.timeout_after = None
        generator.reply = REPLY
    # The model slot was released: the next request is answered.
    assert client(url).chat.completions.create(model="fast", messages=messages).choices[0].message.content


def wait_until_stopped(generator: ScriptedGenerator, app) -> dict:
    """The last stream's record once the model has let go of it and the slot is free again."""
    deadline = time.monotonic() + 10
    while not generator.streams[-1]["closed_early"] and time.monotonic() < deadline:
        time.sleep(0.05)
    while app.state.medcite.gate.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert app.state.medcite.gate.snapshot()["running"] == 0
    return generator.streams[-1]


def test_client_disconnect_stops_generation_and_frees_the_model(server):
    url, generator, app = server
    generator.delay_s = 0.2  # 11 + 10 words: about 4 s to stream in full
    generator.reply = f"{REPLY} {SECOND}"
    body = {"model": "fast", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    try:
        with httpx.stream(
            "POST", f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}
        ) as response:
            lines = response.iter_lines()
            next(line for line in lines if '"content": "The CHA2DS2-VASc' in line)
        record = wait_until_stopped(generator, app)
        assert record["closed_early"] and not record["finished"]
        assert record["pieces"] < len(generator.reply.split(" "))
    finally:
        generator.delay_s = 0.0
        generator.reply = REPLY


def test_client_leaving_while_a_sentence_is_held_back_still_stops_generation(server):
    # The one sentence of the reply is held back until generation ends, so nothing reaches the
    # client before it gives up; the pipeline still sees the cancel at the next token.
    url, generator, app = server
    generator.delay_s = 0.3  # 11 words: about 3.3 s
    body = {"model": "fast", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                f"{url}/v1/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {KEY}"},
                timeout=httpx.Timeout(30, read=1.0),
            )
        record = wait_until_stopped(generator, app)
        assert record["closed_early"] and not record["finished"]
        assert record["pieces"] < len(REPLY.split(" "))
    finally:
        generator.delay_s = 0.0


def test_abstention_token_never_reaches_a_streaming_client(bm25_paths):
    generator = ScriptedGenerator("INSUFFICIENT the passages do not say")
    with live_server(settings(env="development", api_keys=[]), scripted_assembler(bm25_paths, generator)) as (
        url,
        _,
    ):
        stream = client(url, key="unused").chat.completions.create(
            model="fast", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "INSUFFICIENT" not in text and text.startswith(CLOSEST_LEAD)
    final = next(c for c in chunks if c.model_extra.get("medcite"))
    assert final.model_extra["medcite"]["mode"] == "abstained"
    assert final.model_extra["medcite"]["outcome"] == "closest_lines"  # passages about it, no line confirmed
    assert all(c["support"] is None for c in final.model_extra["citations"])


def test_each_key_has_its_own_rate_limit_and_health_is_never_limited(bm25_paths):
    other = "sk-medcite-second-client-key"
    limited = settings(api_keys=[KEY, other], rate_limit_per_minute=6, rate_limit_burst=2)
    with live_server(limited, scripted_assembler(bm25_paths, ScriptedGenerator(REPLY))) as (url, _):
        body = {"query": QUESTION, "k": 3}

        def post(key: str) -> httpx.Response:
            return httpx.post(f"{url}/v1/retrieve", json=body, headers={"Authorization": f"Bearer {key}"})

        assert [post(KEY).status_code for _ in range(2)] == [200, 200]
        refused = post(KEY)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "rate_limit_exceeded"
        assert 1 <= int(refused.headers["Retry-After"]) <= 10  # a token every 10 s
        assert post(other).status_code == 200  # another client is not held back
        assert httpx.get(f"{url}/health").status_code == 200
        with pytest.raises(openai.RateLimitError):
            client(url).models.list()


UNSUPPORTED = "The recommended dose is 200 mg every 2 weeks [2]."


def test_an_unsupported_sentence_never_reaches_an_openai_client(bm25_paths):
    generator = ScriptedGenerator(f"{REPLY} {UNSUPPORTED}")
    verifier = ScriptedVerifier(unsupported=["200 mg"])  # the verifier scores that sentence 0.1
    dev = settings(env="development", api_keys=[])
    with live_server(dev, scripted_assembler(bm25_paths, generator, verifier)) as (url, _):
        messages = [{"role": "user", "content": QUESTION}]
        reply = client(url, key="unused").chat.completions.create(model="fast", messages=messages)
        chunks = list(
            client(url, key="unused").chat.completions.create(model="fast", messages=messages, stream=True)
        )
    content = reply.choices[0].message.content
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert content == "".join(pieces) == REPLY  # both ways: the supported sentence only
    assert not any("200 mg" in piece for piece in pieces)
    final = next(c.model_extra for c in chunks if c.model_extra.get("medcite"))
    for extra in (reply.model_extra, final):
        assert extra["medcite"]["mode"] == "rag" and extra["medcite"]["text"] == REPLY
        assert [c["marker"] for c in extra["citations"]] == [1]  # [2] was cited by the removed one only
        sentences = extra["medcite"]["sentences"]
        assert [(s["status"], s["supported"]) for s in sentences] == [("shown", True), ("removed", False)]
        assert "200 mg" in sentences[1]["text"]  # the record says what was removed, and why
        assert any("removed from the answer: 1 of 2 sentences" in n for n in extra["medcite"]["notes"])


def test_a_sentence_citing_a_passage_not_about_the_question_is_not_presented(bm25_paths):
    # The scripted verifier would support the sentence, but no passage of the index names the drug
    # asked about: nothing the model could cite would be shown, so it is not asked, and the
    # answer abstains with the passages found.
    generator = ScriptedGenerator(REPLY)
    dev = settings(env="development", api_keys=[])
    with live_server(dev, scripted_assembler(bm25_paths, generator)) as (url, _):
        question = "What is the dose of pembrolizumab in atrial fibrillation?"
        chunks = list(
            client(url, key="unused").chat.completions.create(
                model="fast", messages=[{"role": "user", "content": question}], stream=True
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == NOTHING_RELEVANT
    final = next(c.model_extra for c in chunks if c.model_extra.get("medcite"))
    assert final["medcite"]["mode"] == "abstained" and final["medcite"]["outcome"] == "nothing_relevant"
    assert final["citations"] == [] and final["evidence"]  # the passages read are listed
    read = final["medcite"]["read"]  # ... every one scored, kept or not, with its score
    assert {h["chunk_id"] for h in final["evidence"]} <= {h["chunk_id"] for h in read}
    assert all(isinstance(h["score"], float) for h in read)
    assert final["medcite"]["sentences"] == [] and generator.streams == []
    assert any("lacks a word asked (pembrolizumab" in n for n in final["medcite"]["notes"])
