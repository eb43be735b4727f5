"""An MCP tool call resolves its caller once: the in-process REST call reuses the endpoint's caller.

The reuse is scoped to that one inner call (the caller rides in its ASGI scope), so revocation stays
exact: a token removed, a user deactivated or a permission revoked between two requests fails the very
next one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH
from ai_search_server.settings import Settings
from ai_search_server.store.base import Store

from .conftest import Workspace

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
ROOMS_TOOL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_rooms_get", "arguments": {}}}


@pytest.fixture
def resolutions(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The user ids whose tokens the store was asked to resolve, in order."""
    seen: list[str] = []
    original = store.resolve_token

    def counting(user_id: str, plain: str, **options: Any) -> Any:
        seen.append(user_id)
        return original(user_id, plain, **options)

    monkeypatch.setattr(store, "resolve_token", counting)
    yield seen


def _client(app: Starlette) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def _call(http: httpx.AsyncClient, headers: dict[str, str]) -> tuple[int, Any]:
    response = await http.post(MCP_PATH, json=ROOMS_TOOL, headers={**headers, **MCP_HEADERS})
    return response.status_code, response.json()


async def test_a_tool_call_resolves_the_token_once(
    settings: Settings, store: Store, workspace: Workspace, resolutions: list[str]
) -> None:
    alice = workspace["alice"]
    async with _client(create_app(settings, store)) as http:
        status, body = await _call(http, alice.pat_headers)
    assert status == 200 and body["result"]["isError"] is False
    assert resolutions == [alice.user.id]


async def test_a_batch_resolves_the_token_once_for_all_entries(
    settings: Settings, store: Store, workspace: Workspace, resolutions: list[str]
) -> None:
    alice = workspace["alice"]
    batch = [{**ROOMS_TOOL, "id": n} for n in range(5)]
    headers = {**alice.pat_headers, **MCP_HEADERS, "MCP-Protocol-Version": "2025-03-26"}
    async with _client(create_app(settings, store)) as http:
        response = await http.post(MCP_PATH, json=batch, headers=headers)
    assert response.status_code == 200 and [e["result"]["isError"] for e in response.json()] == [False] * 5
    assert resolutions == [alice.user.id]


@pytest.mark.parametrize("revoke", ["token-removed", "user-deactivated", "mcp-permission-revoked"])
async def test_a_revoked_caller_fails_the_very_next_call(
    settings: Settings, store: Store, workspace: Workspace, revoke: str
) -> None:
    alice = workspace["alice"]
    async with _client(create_app(settings, store)) as http:
        before, _ = await _call(http, alice.pat_headers)
        if revoke == "token-removed":
            assert store.delete_token_by_label(alice.user.id, "tests")
        elif revoke == "user-deactivated":
            store.set_active(alice.user.id, False)
        else:
            store.revoke_permission("user", "access-mcp")
        after, body = await _call(http, alice.pat_headers)
    assert before == 200
    assert after in (401, 403), body
    assert "result" not in body


async def test_the_reused_caller_is_only_the_one_the_endpoint_resolved(
    settings: Settings, store: Store, workspace: Workspace, resolutions: list[str]
) -> None:
    """Outside a tool call nothing is reused: plain REST calls resolve their credentials each time."""
    alice = workspace["alice"]
    async with _client(create_app(settings, store)) as http:
        for _ in range(2):
            assert (await http.get("/api/v1/me", headers=alice.pat_headers)).status_code == 200
        await _call(http, alice.pat_headers)
        assert (await http.get("/api/v1/me", headers=alice.pat_headers)).status_code == 200
    assert resolutions == [alice.user.id] * 4
