"""The OpenAPI document lists every status each operation can answer, from the route declarations."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from ai_search_server.mcp import build_catalog
from ai_search_server.rest import COMMON_REFUSALS
from ai_search_server.routes import all_routes

from .conftest import Workspace

pytestmark = pytest.mark.anyio

ROUTES = {route.name: route for route in all_routes()}


@pytest.fixture
async def doc(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def _responses(doc: dict[str, Any], name: str) -> dict[str, Any]:
    route = ROUTES[name]
    responses: dict[str, Any] = doc["paths"][route.path][route.method.lower()]["responses"]
    return responses


async def test_every_operation_lists_success_and_each_refusal_of_its_route(doc: dict[str, Any]) -> None:
    for name, route in ROUTES.items():
        responses = _responses(doc, name)
        assert sorted(responses, key=int) == ["200", *map(str, route.refusals())], name
        for status, answer in responses.items():
            if status != "200":
                schema = answer["content"]["application/json"]["schema"]
                assert schema["required"] == ["success", "error", "errorType"], (name, status)
                assert answer["description"], (name, status)


@pytest.mark.parametrize(
    ("name", "status", "reason"),
    [
        pytest.param("chat.getMessage", 404, "Message not found or not accessible", id="own-404"),
        pytest.param("login", 401, "Incorrect username or password", id="own-reason-beside-the-common-one"),
        pytest.param(
            "ai.search.answer", 504, "The AI provider did not answer in time", id="provider-timeout"
        ),
        pytest.param("ai.search.answer", 502, "The AI provider failed", id="provider-failure"),
        pytest.param("channels.create", 403, "permission", id="route-with-permissions"),
        pytest.param("chat.postMessage", 413, "size cap", id="body-cap-everywhere"),
        pytest.param("ai.search", 429, "Rate limit", id="rate-limited-route"),
    ],
)
async def test_a_declared_refusal_is_documented_with_its_reason(
    doc: dict[str, Any], name: str, status: int, reason: str
) -> None:
    assert reason in _responses(doc, name)[str(status)]["description"]


async def test_common_refusals_apply_only_where_they_can_happen(doc: dict[str, Any]) -> None:
    # `me` has no rate limit of its own: its 429 is the failed-authentication budget only.
    assert "Rate limit reached" not in _responses(doc, "me")["429"]["description"]
    assert "failed authentications" in _responses(doc, "me")["429"]["description"]
    # A GET reads no body: its 408 is the request head's deadline only.
    assert "body" not in _responses(doc, "ai.search")["408"]["description"]
    assert "body" in _responses(doc, "chat.postMessage")["408"]["description"]
    assert "431" in _responses(doc, "me")
    assert "404" not in _responses(doc, "me")
    permission = next(r for r, _applies in COMMON_REFUSALS if "permission" in r.reason)
    assert permission.reason not in _responses(doc, "ai.search")["403"]["description"]


async def test_only_the_streaming_route_documents_an_event_stream(doc: dict[str, Any]) -> None:
    streaming = {name for name in ROUTES if "text/event-stream" in _responses(doc, name)["200"]["content"]}
    assert streaming == {"ai.search.answer"}


@pytest.mark.parametrize(
    ("method", "name", "body", "user"),
    [
        pytest.param("GET", "chat.getMessage", {"msgId": "no-such-message"}, "alice", id="404"),
        pytest.param("GET", "ai.llm.models", None, "alice", id="403-no-permission"),
        pytest.param(
            "POST", "users.removePersonalAccessToken", {"tokenName": "nope"}, "alice", id="404-token"
        ),
        pytest.param("POST", "chat.postMessage", {"text": "x" * (6 * 1024 * 1024)}, "alice", id="413"),
        pytest.param("GET", "me", None, None, id="401"),
    ],
)
async def test_a_real_refusal_is_one_the_document_lists(
    client: httpx.AsyncClient,
    workspace: Workspace,
    doc: dict[str, Any],
    method: str,
    name: str,
    body: dict[str, Any] | None,
    user: str | None,
) -> None:
    headers = workspace[user].pat_headers if user else {}
    path = ROUTES[name].path
    if method == "GET":
        response = await client.get(path, params=body, headers=headers)
    else:
        response = await client.post(path, json=body, headers=headers)
    assert response.status_code >= 400
    assert str(response.status_code) in _responses(doc, name), response.text


async def test_a_declared_reply_is_the_mcp_tools_output_schema(doc: dict[str, Any]) -> None:
    """One declaration, two readers: the 200 body's schema here is the outputSchema of the route's MCP
    tool(s); a route without a reply declaration documents a bare object."""
    tools = build_catalog(all_routes(), extended=True).tools
    declared = {tool.route.name: tool.output_schema for tool in tools if tool.output_schema is not None}
    assert {"ai.search", "ai.search.answer", "chat.getMessage", "chat.getThreadMessages", "rooms.get"} <= set(
        declared
    )
    for name, route in ROUTES.items():
        schema = _responses(doc, name)["200"]["content"]["application/json"]["schema"]
        if route.reply is None:
            assert schema == {"type": "object"}, name
        else:
            assert schema == route.reply_schema() and schema["type"] == "object", name
            if name in declared:
                assert schema == declared[name], name
            Draft202012Validator.check_schema(schema)
