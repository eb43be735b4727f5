"""MCP prompts and server instructions: each prompt is filled by the server's own tools, as the caller.

Alice and Bob read different rooms; what a prompt holds is what its caller's tool calls return, so a
room or a message outside the caller's reach never appears in it.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from ai_search import SEARCH_FILTER_OPERATORS, parse_search_filter_text
from ai_search_server.mcp import build_catalog
from ai_search_server.mcp.guide import server_instructions
from ai_search_server.routes import all_routes

from ._mcp_fixtures import (
    INIT_PARAMS,
    MODERN,
    REVISIONS,
    mcp_headers,
    modern_headers,
    modern_request,
    post,
    request,
    schema_errors,
)
from .conftest import Workspace

pytestmark = pytest.mark.anyio

PROMPTS = ["summarise_room", "find_decision", "what_did_i_miss"]


async def call_at(
    client: httpx.AsyncClient, headers: dict[str, str], method: str, params: dict[str, Any], revision: str
) -> httpx.Response:
    """``method`` at ``revision``: with the 2026-07-28 fields, or the handshake revision's header."""
    if revision == MODERN:
        message = modern_request(method, params)
        return await post(client, message, modern_headers(headers, message))
    return await post(
        client, request(method, params), mcp_headers(headers, **{"MCP-Protocol-Version": revision})
    )


async def get_prompt(
    client: httpx.AsyncClient, headers: dict[str, str], name: str, arguments: dict[str, Any], revision: str
) -> httpx.Response:
    return await call_at(client, headers, "prompts/get", {"name": name, "arguments": arguments}, revision)


def material(response: httpx.Response, revision: str) -> str:
    """The prompt's second message (what its tools returned), after checking the result's schema."""
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert schema_errors(revision, "GetPromptResult", result) == [], result
    task, found = (m["content"]["text"] for m in result["messages"])
    assert "Cite every point by the message's id" in task
    return found


@pytest.mark.parametrize("revision", [*REVISIONS, MODERN])
async def test_prompts_are_listed_at_every_revision(
    client: httpx.AsyncClient, workspace: Workspace, revision: str
) -> None:
    r = await call_at(client, workspace["alice"].pat_headers, "prompts/list", {}, revision)
    result = r.json()["result"]
    assert schema_errors(revision, "ListPromptsResult", result) == [], result
    assert [p["name"] for p in result["prompts"]] == PROMPTS
    assert all(("title" in p) is (revision != "2025-03-26") for p in result["prompts"])
    assert ("ttlMs" in result) is (revision == MODERN)


@pytest.mark.parametrize("revision", ["2025-03-26", "2025-11-25", MODERN])
async def test_summarise_room_holds_the_rooms_messages(
    client: httpx.AsyncClient, workspace: Workspace, revision: str
) -> None:
    r = await get_prompt(
        client,
        workspace["alice"].pat_headers,
        "summarise_room",
        {"room": "#ops", "since": "2026-11-01"},
        revision,
    )
    found = material(r, revision)
    ops = [m for key, m in workspace.messages.items() if key.startswith("ops")]
    assert all(f"[{m.id}]" in found for m in ops)
    # oldest first, each line naming the room and the author
    assert found.index(ops[0].id) < found.index(ops[1].id)
    assert f"[{ops[0].id}] 2026-11-01T09:03:00.000Z #ops @alice: deploy failed" in found


@pytest.mark.parametrize(
    ("username", "room", "since", "text"),
    [
        pytest.param(
            "bob", "ops", "2026-11-01", "no room named 'ops' that you can read", id="a-room-bob-cannot-read"
        ),
        pytest.param(
            "alice", "secret", "2026-11-01", "no room named 'secret' that you can read", id="alice-and-secret"
        ),
        pytest.param("alice", "ops", "last week", "since must be a date, YYYY-MM-DD", id="not-a-date"),
        pytest.param("alice", "", "2026-11-01", "summarise_room needs room", id="no-room"),
    ],
)
async def test_summarise_room_refuses(
    client: httpx.AsyncClient, workspace: Workspace, username: str, room: str, since: str, text: str
) -> None:
    r = await get_prompt(
        client, workspace[username].pat_headers, "summarise_room", {"room": room, "since": since}, MODERN
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == -32602 and text in error["message"]


async def test_a_later_date_leaves_earlier_messages_out(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    r = await get_prompt(
        client,
        workspace["alice"].pat_headers,
        "summarise_room",
        {"room": "ops", "since": "2026-11-02"},
        MODERN,
    )
    assert material(r, MODERN) == "No messages in #ops since 2026-11-02."


@pytest.mark.parametrize(
    ("username", "seen", "unseen"),
    [
        pytest.param("alice", {"general-2", "ops-3"}, {"secret-5"}, id="alice"),
        pytest.param("bob", {"general-2"}, {"ops-3"}, id="bob"),
    ],
)
async def test_find_decision_searches_as_the_caller(
    client: httpx.AsyncClient, workspace: Workspace, username: str, seen: set[str], unseen: set[str]
) -> None:
    r = await get_prompt(
        client, workspace[username].pat_headers, "find_decision", {"topic": "deploy"}, "2025-06-18"
    )
    found = material(r, "2025-06-18")
    assert all(f"[{workspace.messages[key].id}]" in found for key in seen), found
    assert not any(workspace.messages[key].id in found for key in unseen), found


@pytest.mark.parametrize(
    ("username", "rooms"),
    [
        pytest.param("alice", {"general", "ops", "alice__bob"}, id="alice"),
        pytest.param("bob", {"general", "secret", "alice__bob"}, id="bob"),
    ],
)
async def test_what_did_i_miss_reads_each_of_the_callers_rooms(
    client: httpx.AsyncClient, workspace: Workspace, username: str, rooms: set[str]
) -> None:
    r = await get_prompt(
        client, workspace[username].pat_headers, "what_did_i_miss", {"since": "2026-10-31"}, MODERN
    )
    found = material(r, MODERN)
    assert set(re.findall(r"^#(\S+) \(the latest", found, flags=re.MULTILINE)) == rooms


@pytest.mark.parametrize(
    ("name", "arguments", "text"),
    [
        pytest.param("nope", {}, "Unknown prompt: nope", id="unknown-prompt"),
        pytest.param("find_decision", {}, "find_decision needs topic", id="missing-argument"),
        pytest.param("find_decision", {"topic": 7}, "prompt arguments are strings", id="not-a-string"),
    ],
)
async def test_bad_prompt_requests(
    client: httpx.AsyncClient, workspace: Workspace, name: str, arguments: dict[str, Any], text: str
) -> None:
    r = await get_prompt(client, workspace["alice"].pat_headers, name, arguments, "2025-11-25")
    assert r.status_code == 200 and r.json()["error"] == {
        "code": -32602,
        "message": text if text.startswith("Unknown") else f"Invalid params: {text}",
    }


@pytest.mark.parametrize("revision", [*REVISIONS, MODERN])
async def test_instructions_come_with_initialize_and_discover(
    client: httpx.AsyncClient, workspace: Workspace, revision: str
) -> None:
    if revision == MODERN:
        r = await call_at(client, workspace["alice"].pat_headers, "server/discover", {}, MODERN)
    else:
        init = {"protocolVersion": revision, **INIT_PARAMS}
        r = await call_at(client, workspace["alice"].pat_headers, "initialize", init, revision)
    result = r.json()["result"]
    assert result["instructions"] == server_instructions()
    assert result["capabilities"]["prompts"] == {"listChanged": False}


def test_the_instructions_describe_the_real_grammar_and_tools() -> None:
    text = server_instructions()
    for op in SEARCH_FILTER_OPERATORS:
        assert f"- {op.prefix}{op.sigil}" in text, op.key  # as typed: in:#, -from:@, -word
    example = re.search(r'q="([^"]+)"', text)
    assert example is not None
    parsed = parse_search_filter_text(example.group(1))
    assert parsed.search_text == "deploy failed" and parsed.filters.room_names == ("ops",)
    curated = set(build_catalog(all_routes()).by_name)
    named = set(re.findall(r"\b(?:get|post)_[A-Za-z_]+", text))
    assert named and named <= curated, named - curated
