"""Contract tests: schemathesis generates requests from the served OpenAPI schema and checks the
responses against it (no 5xx, documented status codes, content types and bodies) on the
endpoints that do not generate text, over a live server."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from api.settings import ApiSettings
from tests.api.support import KEY, ScriptedGenerator, live_server, scripted_assembler

OPERATIONS = [("/health", "GET"), ("/ready", "GET"), ("/v1/models", "GET"), ("/v1/retrieve", "POST")]


@pytest.fixture(scope="module")
def api_schema(bm25_paths):
    config = ApiSettings(
        env="production", api_keys=[KEY], profiles=["fast"], max_k=50, rate_limit_per_minute=0
    )
    with live_server(config, scripted_assembler(bm25_paths, ScriptedGenerator("unused [1]"))) as (url, _):
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def test_schema_lists_every_endpoint(api_schema):
    paths = set(api_schema.raw_schema["paths"])
    assert paths == {"/health", "/ready", "/v1/models", "/v1/retrieve", "/v1/chat/completions"}
    security = api_schema.raw_schema["components"]["securitySchemes"]
    assert any(s.get("scheme") == "bearer" for s in security.values())


@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_non_generating_endpoints_honour_their_schema(api_schema, path, method):
    operation = api_schema[path][method]

    @given(case=operation.as_strategy())
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(case):
        # A schema-valid query may still hold no searchable word ("?!"); it is refused with a
        # documented 400, so the "schema-valid data must be accepted" check does not apply.
        excluded = [positive_data_acceptance] if path == "/v1/retrieve" else []
        case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"}, excluded_checks=excluded)

    check()
