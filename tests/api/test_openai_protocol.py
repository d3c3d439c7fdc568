"""OpenAI's protocol, exactly, over a live server: model retrieval, 400 schema errors with ``param``
and ``code``, ``stop``, and features medcite does not have refused by name. Every chat completion
the official client receives is checked against ``openai.types`` (tests/api/support.py)."""

from __future__ import annotations

import httpx
import openai
import pytest

from api.settings import ApiSettings
from tests.api.support import (
    KEY,
    ScriptedGenerator,
    client,
    conforming_completion,
    conforming_events,
    live_server,
    scripted_assembler,
)

QUESTION = "Which score is used to decide on anticoagulation in atrial fibrillation?"
FIRST = "The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation [1]."
SECOND = "Men with a score of 2 or more should receive oral anticoagulation [2]."
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def server(bm25_paths):
    config = ApiSettings(
        env="production", api_keys=[KEY], profiles=["fast"], max_tokens=300, rate_limit_per_minute=0
    )
    generator = ScriptedGenerator(f"{FIRST} {SECOND}")
    with live_server(config, scripted_assembler(bm25_paths, generator)) as (url, _):
        yield url, generator


def chat(url: str, **fields) -> httpx.Response:
    body = {"model": "fast", "messages": [{"role": "user", "content": QUESTION}], **fields}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers=AUTH, timeout=30)


# -- GET /v1/models/{id} --------------------------------------------------------------------------


def test_a_served_model_is_retrieved_as_in_the_list(server):
    url, _ = server
    listed = client(url).models.list().data
    model = client(url).models.retrieve("fast")
    assert model.id == "fast" and model.object == "model" and model.owned_by == "medcite"
    assert model.model_dump() == listed[0].model_dump()  # the same object as the list's item
    raw = httpx.get(f"{url}/v1/models/fast", headers=AUTH)
    assert raw.json() == httpx.get(f"{url}/v1/models", headers=AUTH).json()["data"][0]


@pytest.mark.parametrize("model_id", ["gpt-4o", "fast/other"])
def test_an_unknown_model_is_a_404_model_not_found(server, model_id):
    url, _ = server
    with pytest.raises(openai.NotFoundError) as caught:
        client(url).models.retrieve(model_id)
    error = caught.value.body
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "model_not_found",
        "model",
    )
    assert "GET /v1/models lists ['fast']" in error["message"]
    assert caught.value.response.headers["x-request-id"]


def test_an_empty_model_id_is_not_the_default_profile(server):
    url, _ = server
    response = httpx.get(f"{url}/v1/models/", headers=AUTH)
    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"


def test_retrieving_a_model_needs_a_key_as_listing_does(server):
    url, _ = server
    with pytest.raises(openai.AuthenticationError):
        client(url, key="wrong-key-0123456789abcdef").models.retrieve("fast")
    assert httpx.get(f"{url}/v1/models/fast").status_code == 401
    assert httpx.get(f"{url}/v1/models/nope").status_code == 401  # no key: nothing said about ids


# -- schema errors: 400 with param and code -------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"model": "fast"}, "messages", "missing_required_parameter"),
        ({"messages": [{"content": "hi"}]}, "messages.0.role", "missing_required_parameter"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages.0.role", "invalid_value"),
        ({"messages": [{"role": "user", "content": 7}]}, "messages.0.content", "invalid_type"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages.0.content.0.type",
            "invalid_value",
        ),
        ({"messages": "hello"}, "messages", "invalid_type"),
        (
            {"messages": [{"role": "user", "content": "hi"}], "max_tokens": "many"},
            "max_tokens",
            "invalid_type",
        ),
        ({"messages": [{"role": "user", "content": "hi"}], "temperature": 3}, "temperature", "invalid_value"),
        ({"messages": [{"role": "user", "content": "hi"}], "stream": "yes please"}, "stream", "invalid_type"),
        (
            {"messages": [{"role": "user", "content": "hi"}], "stop": ["a", "b", "c", "d", "e"]},
            "stop",
            "invalid_value",
        ),
        ({"messages": [{"role": "user", "content": "hi"}], "stop": ["a", 5]}, "stop.1", "invalid_type"),
        ({"messages": [{"role": "user", "content": "hi"}], "stop": [""]}, "stop", "invalid_value"),
        ({"messages": [{"role": "user", "content": "hi"}], "n": 0}, "n", "invalid_value"),
    ],
)
def test_a_body_that_fails_the_schema_is_a_400_naming_the_field(server, body, param, code):
    url, _ = server
    response = httpx.post(f"{url}/v1/chat/completions", json=body, headers=AUTH)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert error["message"].startswith(f"invalid request: {param}: ")
    assert response.headers["x-request-id"]


def test_the_official_client_sees_a_bad_request_error(server):
    url, _ = server
    with pytest.raises(openai.BadRequestError) as caught:
        client(url).chat.completions.create(
            model="fast", messages=[{"role": "user", "content": QUESTION}], stop=["a", "b", "c", "d", "e"]
        )
    assert caught.value.code == "invalid_value" and caught.value.param == "stop"
    assert "at most 4 stop sequences" in caught.value.message


def test_malformed_json_is_a_400_invalid_json(server):
    url, _ = server
    for content in (b'{"messages": [', b"not json at all"):
        response = httpx.post(
            f"{url}/v1/chat/completions",
            content=content,
            headers={**AUTH, "Content-Type": "application/json"},
        )
        assert response.status_code == 400
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_json")
        assert "not valid JSON" in error["message"]


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"model=fast&messages=hi", "application/x-www-form-urlencoded"),  # curl -d without -H
        (b'{"model": "fast", "messages": [{"role": "user", "content": "hi"}]}', "text/plain"),
        (b'{"model": "fast", "messages": [{"role": "user", "content": "hi"}]}', None),
    ],
)
def test_a_body_not_sent_as_json_is_a_400_invalid_json(server, content, content_type):
    url, generator = server
    before = len(generator.streams)
    headers = {**AUTH, **({"Content-Type": content_type} if content_type else {})}
    response = httpx.post(f"{url}/v1/chat/completions", content=content, headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "invalid_json", None)
    assert "Content-Type: application/json" in error["message"]
    if content_type:
        assert f"sent as {content_type}" in error["message"]
    assert len(generator.streams) == before
    retrieve = httpx.post(f"{url}/v1/retrieve", content=b"query=af", headers=headers)
    assert (retrieve.status_code, retrieve.json()["error"]["code"]) == (400, "invalid_json")


def test_a_json_array_is_json_of_the_wrong_type_not_invalid_json(server):
    url, _ = server
    response = httpx.post(f"{url}/v1/chat/completions", json=[1, 2], headers=AUTH)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_type")


def test_the_schema_documents_400_and_no_422(server):
    url, _ = server
    schema = httpx.get(f"{url}/openapi.json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert "422" not in operation["responses"], (path, method)
    chat_op = schema["paths"]["/v1/chat/completions"]["post"]
    assert chat_op["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    stop = schema["components"]["schemas"]["ChatRequest"]["properties"]["stop"]
    assert {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 4} in stop["anyOf"]


# -- features medcite does not have ---------------------------------------------------------------

TOOL = {"type": "function", "function": {"name": "dose", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"tools": [TOOL]}, "tools", "unsupported_parameter"),
        ({"tool_choice": "auto"}, "tool_choice", "unsupported_parameter"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "dose"}}},
            "tool_choice",
            "unsupported_parameter",
        ),
        ({"functions": [TOOL["function"]]}, "functions", "unsupported_parameter"),
        ({"function_call": "auto"}, "function_call", "unsupported_parameter"),
        ({"parallel_tool_calls": True}, "parallel_tool_calls", "unsupported_parameter"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls", "unsupported_parameter"),
        ({"response_format": {"type": "json_object"}}, "response_format", "unsupported_value"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}},
            "response_format",
            "unsupported_value",
        ),
        ({"logprobs": True}, "logprobs", "unsupported_value"),
        ({"top_logprobs": 3}, "top_logprobs", "unsupported_value"),
        ({"n": 2}, "n", "unsupported_value"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio", "unsupported_parameter"),
        ({"modalities": ["text", "audio"]}, "modalities", "unsupported_value"),
    ],
)
def test_an_unsupported_feature_is_refused_by_name(server, fields, param, code):
    url, generator = server
    before = len(generator.streams)
    response = chat(url, **fields)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert "medcite" in error["message"] and f"`{param}`" in error["message"]  # what to do instead
    assert len(generator.streams) == before  # refused before anything was generated


def test_fields_that_ask_for_no_tool_are_accepted_as_documented(server):
    """docs/api.md: tools and functions are refused unless empty, tool_choice and function_call
    unless "none"; an empty list asks for nothing, so the request is answered as without it."""
    url, generator = server
    before = len(generator.streams)
    response = chat(url, tools=[], functions=[], tool_choice="none", function_call="none")
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == f"{FIRST} {SECOND}"
    assert len(generator.streams) == before + 1
    for asked in ({"tools": [TOOL]}, {"functions": [TOOL["function"]]}):
        assert chat(url, **asked).json()["error"]["code"] == "unsupported_parameter"


def test_the_official_client_is_told_tools_are_not_supported(server):
    url, _ = server
    with pytest.raises(openai.BadRequestError) as caught:
        client(url).chat.completions.create(
            model="fast", messages=[{"role": "user", "content": QUESTION}], tools=[TOOL]
        )
    assert (caught.value.code, caught.value.param) == ("unsupported_parameter", "tools")
    assert "citations" in caught.value.message


def test_sampling_and_bookkeeping_fields_of_stock_clients_are_accepted(server):
    url, _ = server
    reply = client(url).chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": QUESTION}],
        temperature=0.2,
        top_p=0.9,
        presence_penalty=0.1,
        frequency_penalty=0.1,
        seed=7,
        user="clinic-7",
        metadata={"ward": "4b"},
        store=False,
        response_format={"type": "text"},
        tool_choice="none",
        logprobs=False,
        n=1,
        modalities=["text"],
        max_completion_tokens=64,
    )
    assert reply.choices[0].message.content == f"{FIRST} {SECOND}"
    assert chat(url, tools=[], unknown_future_field={"a": 1}).status_code == 200


# -- stop ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stop", ["Men with", ["zzz", "Men with"]])
def test_the_answer_ends_before_the_stop_sequence_streamed_or_not(server, stop):
    url, generator = server
    messages = [{"role": "user", "content": QUESTION}]
    reply = client(url).chat.completions.create(model="fast", messages=messages, stop=stop)
    assert generator.stops[-1] == ((stop,) if isinstance(stop, str) else tuple(stop))  # via the settings
    chunks = list(
        client(url).chat.completions.create(model="fast", messages=messages, stop=stop, stream=True)
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert reply.choices[0].message.content == streamed == FIRST
    final = next(c for c in chunks if c.model_extra.get("medcite"))
    assert reply.choices[0].finish_reason == final.choices[0].finish_reason == "stop"
    for extra in (reply.model_extra, final.model_extra):
        # the citations and the support record are those of the text shown, not of the cut text
        assert [c["marker"] for c in extra["citations"]] == [1]
        assert [s["status"] for s in extra["medcite"]["sentences"]] == ["shown"]
        assert extra["medcite"]["text"] == FIRST


def test_a_stop_inside_a_sentence_leaves_no_unverified_fragment(server):
    # Cut before its citation, the sentence cites nothing: the support gate removes it, and with
    # nothing left to present the answer abstains; the fragment is recorded, never shown.
    url, _ = server
    body = conforming_completion(chat(url, stop=["[1]"]).json())
    assert body["choices"][0]["finish_reason"] == "stop"
    content = body["choices"][0]["message"]["content"]
    assert "score guides anticoagulation" not in content and "[1]" not in content  # cut at the stop too
    assert body["medcite"]["mode"] == "abstained" and body["medcite"]["outcome"] != "answer"
    assert [(s["text"], s["status"]) for s in body["medcite"]["sentences"] if s["status"] != "closest"] == [
        ("The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation", "removed")
    ]
    events = conforming_events(chat(url, stop=["[1]"], stream=True).text)
    pieces = [
        e["choices"][0]["delta"].get("content") or "" for e in events if isinstance(e, dict) and e["choices"]
    ]
    assert "score guides anticoagulation" not in "".join(pieces) and events[-1] == "[DONE]"


def test_without_stop_the_generator_gets_none_and_the_whole_answer_is_shown(server):
    url, generator = server
    body = conforming_completion(chat(url).json())
    assert generator.stops[-1] == ()
    assert body["choices"][0]["message"]["content"] == f"{FIRST} {SECOND}"
    assert [c["marker"] for c in body["citations"]] == [1, 2]
