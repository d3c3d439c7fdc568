"""Schema errors in OpenAI's shape: pydantic's errors for a real ChatRequest turned into the 400
body's ``param`` and ``code`` (api/errors.py), and exceptions into ``type``/``code``/``param``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from api.errors import ApiError, code_and_param, error_code, field_path, validation_error_body
from api.schemas import ChatRequest
from api.state import UnknownModelError
from core.errors import GeneratorTimeout

USER = [{"role": "user", "content": "hi"}]


def body_for(request: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ValidationError) as caught:
        ChatRequest.model_validate(request)
    # FastAPI puts the request body's errors under "body"
    errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    return validation_error_body(errors)["error"]


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("body", "messages", 0, "role"), "messages.0.role"),
        (("body", "stop", "list[str]", 2), "stop.2"),
        (("body", "messages", 0, "content", "list[TextPart]", 0, "type"), "messages.0.content.0.type"),
        (("body", "stop", "constrained-str"), "stop"),
        (("body", "temperature", "float"), "temperature"),
        (("body",), ""),
    ],
)
def test_field_path_names_fields_not_union_members(loc, path):
    assert field_path(loc) == path


@pytest.mark.parametrize(
    ("pydantic_type", "code"),
    [
        ("missing", "missing_required_parameter"),
        ("extra_forbidden", "unknown_parameter"),
        ("int_parsing", "invalid_type"),
        ("string_type", "invalid_type"),
        ("model_attributes_type", "invalid_type"),
        ("literal_error", "invalid_value"),
        ("less_than_equal", "invalid_value"),
        ("too_short", "invalid_value"),
        ("unsupported_value", "unsupported_value"),
        ("unsupported_parameter", "unsupported_parameter"),
    ],
)
def test_error_codes_say_what_is_wrong(pydantic_type, code):
    assert error_code(pydantic_type) == code
    assert code != "invalid_request_error"  # the code is more specific than the type


def test_the_deepest_error_of_a_union_decides_param_and_code():
    # stop=["a", 5] fails as a string (the whole value) and as a list (at item 1): item 1 is the news
    error = body_for({"messages": USER, "stop": ["a", 5]})
    assert (error["param"], error["code"]) == ("stop.1", "invalid_type")
    assert error["message"].startswith("invalid request: stop.1: ") and "; stop: " in error["message"]


def test_a_refused_feature_keeps_its_own_message():
    error = body_for({"messages": USER, "response_format": {"type": "json_object"}})
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        "response_format",
        "unsupported_value",
    )
    assert '{"type": "text"}' in error["message"]  # the braces survive pydantic's message template


def test_malformed_json_has_its_own_code():
    error = validation_error_body([{"type": "json_invalid", "loc": ("body", 3), "msg": "JSON decode error"}])
    assert error["error"]["code"] == "invalid_json" and error["error"]["param"] is None


def test_exceptions_carry_code_and_param():
    assert code_and_param(UnknownModelError("no such model")) == ("model_not_found", "model")
    assert code_and_param(GeneratorTimeout("slow")) == ("timeout", None)
    assert code_and_param(ApiError(400, "bad", "invalid_request_error", param="stop")) == (
        "invalid_request_error",
        "stop",
    )
    assert code_and_param(RuntimeError("boom")) == ("server_error", None)
