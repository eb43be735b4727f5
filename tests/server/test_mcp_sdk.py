"""The official MCP Python SDK client against the real server on loopback (Streamable HTTP, PAT headers).

Two people with different rooms connect as themselves at every revision the server speaks: at
2026-07-28 the client's ``auto`` mode discovers and stays there (no ``initialize`` on the wire), at
each handshake revision it initializes. Each lists the tools, calls them and sees only their own
rooms. The conformance probe (``tests/tools/mcp_probe.py --wire``) runs against the same server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client import session as sdk_session
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ai_search_server.mcp import SUPPORTED_PROTOCOL_VERSIONS
from ai_search_server.store.base import Store

from ._mcp_fixtures import SCHEMA_ROOT, TESTS_ROOT, LiveServer, live_server
from .conftest import Person, Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PROBE = TESTS_ROOT / "tools" / "mcp_probe.py"
# Seconds the SDK waits for one answer; far above what a loopback call takes, so never the cause.
SDK_TIMEOUT_SECONDS = 20.0


@pytest.fixture
def server(store: Store, workspace: Workspace) -> Iterator[LiveServer]:
    with live_server(store) as live:
        yield live


# Every revision the server speaks, as the SDK client reaches it: "auto" discovers 2026-07-28; a
# handshake revision is the version the client's initialize offers.
SDK_REVISIONS = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26")


@asynccontextmanager
async def connect(
    server: LiveServer, person: Person, revision: str = "2025-11-25", sent: list[str] | None = None
) -> AsyncIterator[Client]:
    """The SDK client connected as ``person`` at ``revision``; ``sent`` collects the JSON-RPC method of
    every POST it makes."""
    headers = {"X-User-Id": person.user.id, "X-Auth-Token": person.pat}
    timeout = httpx2.Timeout(SDK_TIMEOUT_SECONDS, read=SDK_TIMEOUT_SECONDS)

    async def record(request: httpx2.Request) -> None:
        if sent is not None and request.method == "POST":
            sent.append(json.loads(request.content)["method"] if request.content else "")

    async with httpx2.AsyncClient(
        headers=headers, timeout=timeout, event_hooks={"request": [record]}
    ) as http:
        transport = streamable_http_client(server.mcp_url, http_client=http)
        mode = "auto" if revision == "2026-07-28" else "legacy"
        with _offering(revision):
            async with Client(transport, mode=mode, cache=None) as client:
                yield client


@contextmanager
def _offering(revision: str) -> Iterator[None]:
    """The SDK client offers its latest handshake version in initialize; an older client offers its own.
    The module constant it reads is swapped for the duration, as a client of that revision would send."""
    saved = sdk_session.LATEST_HANDSHAKE_VERSION
    if revision != "2026-07-28":
        sdk_session.LATEST_HANDSHAKE_VERSION = revision
    try:
        yield
    finally:
        sdk_session.LATEST_HANDSHAKE_VERSION = saved


def text_of(result: Any) -> Any:
    (block,) = result.content
    return json.loads(block.text)


@pytest.mark.parametrize("revision", SDK_REVISIONS)
@pytest.mark.parametrize(
    ("username", "rooms", "foreign_room"),
    [
        pytest.param("alice", {"general", "ops", "alice__bob"}, "secret", id="alice"),
        pytest.param("bob", {"general", "secret", "alice__bob"}, "ops", id="bob"),
    ],
)
async def test_sdk_client_sees_only_the_callers_rooms(
    server: LiveServer, workspace: Workspace, username: str, rooms: set[str], foreign_room: str, revision: str
) -> None:
    sent: list[str] = []
    async with connect(server, workspace[username], revision, sent) as client:
        assert client.protocol_version == revision
        assert client.server_info is not None and client.server_info.name == "ai-search"
        if revision == "2026-07-28":  # discovered, no fallback to the handshake
            assert sent == ["server/discover"] and client.session.discover_result is not None
        else:
            assert sent[0] == "initialize"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"get_rooms_get", "get_chat_getMessage", "post_chat_postMessage_by_channel"} <= set(tools)
        assert all(tool.input_schema["type"] == "object" and tool.description for tool in tools.values())
        reads, posts = (
            tools["get_rooms_get"].annotations,
            tools["post_chat_postMessage_by_channel"].annotations,
        )
        assert reads is not None and reads.read_only_hint is True and reads.idempotent_hint is True
        assert posts is not None and posts.read_only_hint is False and posts.idempotent_hint is False

        listed = await client.call_tool("get_rooms_get", {})
        assert not listed.is_error
        assert {room["name"] for room in text_of(listed)["update"]} == rooms

        foreign = next(m for key, m in workspace.messages.items() if key.startswith(foreign_room))
        refused = await client.call_tool("get_chat_getMessage", {"msgId": foreign.id})
        assert refused.is_error and text_of(refused)["success"] is False

        posted = await client.call_tool(
            "post_chat_postMessage_by_channel", {"channel": "#general", "text": "hi"}
        )
        assert not posted.is_error and text_of(posted)["message"]["u"]["username"] == username
    assert "initialize" not in sent if revision == "2026-07-28" else sent.count("initialize") == 1


def test_the_table_covers_every_revision() -> None:
    assert set(SDK_REVISIONS) == set(SUPPORTED_PROTOCOL_VERSIONS)


@pytest.mark.parametrize("revision", SDK_REVISIONS)
async def test_sdk_client_unknown_tool_is_a_protocol_error(
    server: LiveServer, workspace: Workspace, revision: str
) -> None:
    async with connect(server, workspace["alice"], revision) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("no_such_tool", {})
    assert info.value.code == -32602


@pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["handshake", "discover-2026"])
def test_conformance_probe_reports_no_failure(store: Store, workspace: Workspace, mode: str) -> None:
    """The probe's SDK layer in ``mode`` (auto: discovery at 2026-07-28) and its raw-HTTP checks of
    every revision, the 2026-07-28 answers against that revision's schema."""
    alice = workspace["alice"]
    with live_server(store) as live:
        run = subprocess.run(
            [
                sys.executable,
                str(PROBE),
                live.mcp_url,
                # "=" form: a token may start with "-", which argparse would read as an option.
                f"--user-id={alice.user.id}",
                f"--token={alice.pat}",
                "--wire",
                f"--mode={mode}",
                "--tool",
                "get_rooms_get",
                "--args",
                "{}",
                "--schema",
                str(SCHEMA_ROOT / "2025-11-25" / "schema.json"),
                "--modern-schema",
                str(SCHEMA_ROOT / "2026-07-28" / "schema.json"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert run.stdout.rstrip().endswith("passed, 0 failed")
    assert "PASS modern.tools/list.schema" in run.stdout and "PASS modern.unsupported-version" in run.stdout


def _structured_calls(workspace: Workspace, reply_id: str, group_id: str) -> list[tuple[str, dict[str, Any]]]:
    """A call of every tool with an output schema, with arguments that succeed for alice."""
    ops, first = workspace.rooms["ops"], workspace.messages["ops-3"]
    return [
        ("get_channels_history", {"roomId": ops.id, "oldest": "2026-11-01T00:00:00Z"}),
        ("get_groups_history", {"roomId": group_id}),
        ("get_im_history", {"roomId": workspace.rooms["dm"].id, "count": 1}),
        ("get_ai_search_by_q", {"q": "in:#ops deploy"}),
        ("get_ai_search_by_query", {"query": "deploy", "roomNames": "ops"}),
        ("post_ai_search_answer", {"query": "what failed?", "messages": [{"_id": first.id, "score": 0.9}]}),
        ("get_chat_getMessage", {"msgId": first.id}),
        ("post_chat_postMessage_by_roomId", {"roomId": ops.id, "text": "noted"}),
        ("post_chat_postMessage_by_channel", {"channel": "#ops", "text": "noted", "tmid": first.id}),
        ("get_chat_getThreadMessages", {"tmid": first.id}),
        ("get_chat_getThreadsList", {"rid": ops.id}),
        ("get_chat_getMessageContext", {"msgId": reply_id}),
        ("get_chat_getMessageContext", {"msgId": workspace.messages["general-1"].id}),
        ("get_rooms_get", {}),
        ("get_rooms_info_by_roomId", {"roomId": ops.id}),
        ("get_rooms_info_by_roomName", {"roomName": "general"}),
        ("get_channels_list_joined", {}),
    ]


@pytest.mark.parametrize("revision", SDK_REVISIONS)
async def test_structured_results_validate_against_their_output_schemas(
    store: Store, workspace: Workspace, revision: str
) -> None:
    """The SDK client checks structuredContent against the tool's outputSchema itself (it raises on a
    mismatch); here every such tool is called once, a thread included, and the text block still holds
    the same JSON. 2025-03-26 has neither, and its results stay text only."""
    alice = workspace["alice"]
    reply = store.post_message(
        workspace.rooms["ops"].id, alice.user.id, "which pod?", tmid=workspace.messages["ops-3"].id
    )
    group = store.create_room("p", "alice-notes", members=[alice.user.id])
    store.post_message(group.id, alice.user.id, "remember the retro")
    calls = _structured_calls(workspace, reply.id, group.id)
    with live_server(store, mcp_expose_extended_api=True) as live:
        async with connect(live, alice, revision) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            structured = {name for name, tool in tools.items() if tool.output_schema is not None}
            if revision == "2025-03-26":
                assert structured == set()
            else:
                assert structured == {name for name, _ in calls}
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                if revision == "2025-03-26":
                    assert result.structured_content is None
                else:
                    assert result.structured_content == text_of(result), name
                    assert result.structured_content["success"] is True


@pytest.mark.parametrize("revision", SDK_REVISIONS)
async def test_sdk_client_gets_the_prompts_and_instructions(
    server: LiveServer, workspace: Workspace, revision: str
) -> None:
    async with connect(server, workspace["bob"], revision) as client:
        opened = client.session.discover_result or client.session.initialize_result
        assert opened is not None and opened.instructions and "get_ai_search_by_q" in opened.instructions
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["summarise_room", "find_decision", "what_did_i_miss"]
        summary = await client.get_prompt("summarise_room", {"room": "#secret", "since": "2026-11-01"})
        task, found = (m.content.text for m in summary.messages)  # type: ignore[union-attr]
        assert "#secret" in task and workspace.messages["secret-5"].id in found
        with pytest.raises(MCPError) as refused:  # alice's room, as bob
            await client.get_prompt("summarise_room", {"room": "#ops", "since": "2026-11-01"})
        assert refused.value.code == -32602
