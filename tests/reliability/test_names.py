"""C5 and C6. Room names: a DM's name cannot be taken over, and no name may pass for another.

C5 replays the takeover: mallory, who is in neither room, creates a public channel with the name of
alice's DM with bob and "adds" both to it; then alice posts to ``#alice__bob`` and bob searches
``in:#alice__bob``, by every route that takes a room name, REST and MCP. The channel must not be created,
nobody may be subscribed by someone else (text planted into their search), and the name must keep
meaning the DM, also when a colliding channel already exists in the database (written as a version
without the rule would have), because names resolve only among the rooms the caller reads.

C6 tries names that look like existing ones (a dotless i, Cyrillic letters, a capital I for an l, a
fullwidth form) and names with invisible or text-reordering characters, through REST and MCP: each is
refused with a clear 400, and the refusal never names the look-alike (it may be a private room).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import httpx
import pytest

from ai_search_server.mcp import MCP_PATH
from ai_search_server.settings import Settings
from ai_search_server.store.base import Store
from tests.server._legacy import write_legacy_room
from tests.server.conftest import Person, Workspace

from .conftest import Figure, reliability_settings

MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
DM = "alice__bob"


@pytest.fixture
def settings() -> Settings:
    """The app of these tests exposes the extended MCP set: rooms.info by name is in it."""
    return reliability_settings(mcp_expose_extended_api=True)


def _tool(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def _mcp_result(response: httpx.Response) -> tuple[bool, Any]:
    """(isError, the REST answer the tool result carries)."""
    result = response.json()["result"]
    return result["isError"], json.loads(result["content"][0]["text"])


def _mallory(store: Store) -> Person:
    user = store.create_user("mallory", password="pw-mallory-123")
    _t, session = store.create_token(user.id, "session", label="login")
    _t, pat = store.create_token(user.id, "pat", label="tests")
    return Person(user=user, password="pw-mallory-123", session=session, pat=pat)


async def _name_lookups(http: httpx.AsyncClient, workspace: Workspace, text: str) -> dict[str, tuple[str, str]]:
    """Every route that takes a room name, REST and MCP: (room the post went to / rooms searched)."""
    alice, bob = workspace["alice"], workspace["bob"]
    out: dict[str, tuple[str, str]] = {}
    rest = await http.post("/api/v1/chat.postMessage", json={"channel": f"#{DM}", "text": f"{text} rest"}, headers=alice.headers)
    out["chat.postMessage #name"] = ("post", rest.json()["message"]["rid"] if rest.status_code == 200 else f"{rest.status_code}")
    error, body = _mcp_result(await http.post(MCP_PATH, json=_tool("post_chat_postMessage_by_channel", channel=f"#{DM}", text=f"{text} mcp"), headers={**alice.pat_headers, **MCP_HEADERS}))
    out["mcp post_chat_postMessage_by_channel"] = ("post", "error" if error else body["message"]["rid"])
    info = await http.get("/api/v1/rooms.info", params={"roomName": DM}, headers=bob.headers)
    out["rooms.info roomName"] = ("info", info.json()["room"]["_id"] if info.status_code == 200 else f"{info.status_code}")
    error, body = _mcp_result(await http.post(MCP_PATH, json=_tool("get_rooms_info_by_roomName", roomName=DM), headers={**bob.pat_headers, **MCP_HEADERS}))
    out["mcp get_rooms_info_by_roomName"] = ("info", "error" if error else body["room"]["_id"])
    searches = {
        "ai.search q=in:#name": http.get("/api/v1/ai.search", params={"q": f"in:#{DM} {text}"}, headers=bob.headers),
        "ai.search roomNames": http.get("/api/v1/ai.search", params={"query": text, "roomNames": DM}, headers=bob.headers),
        "mcp get_ai_search_by_q": http.post(MCP_PATH, json=_tool("get_ai_search_by_q", q=f"in:#{DM} {text}"), headers={**bob.pat_headers, **MCP_HEADERS}),
        "mcp get_ai_search_by_query roomNames": http.post(MCP_PATH, json=_tool("get_ai_search_by_query", query=text, roomNames=DM), headers={**bob.pat_headers, **MCP_HEADERS}),
    }  # fmt: skip
    for name, pending in searches.items():
        response = await pending
        body = _mcp_result(response)[1] if name.startswith("mcp") else response.json()
        out[name] = ("search", ",".join(sorted({r["rid"] for r in body["intelligent"]})) or "nothing")
    return out


@pytest.mark.requirement("C5")
@pytest.mark.anyio
@pytest.mark.parametrize("legacy", [False, True], ids=["fresh-workspace", "with-a-colliding-legacy-channel"])
async def test_a_dm_name_cannot_be_taken_over_and_keeps_meaning_the_dm(
    client: httpx.AsyncClient, store: Store, workspace: Workspace, legacy: bool, figure: Figure
) -> None:
    mallory = _mallory(store)
    alice, bob = workspace["alice"], workspace["bob"]
    dm = workspace.rooms["dm"].id
    before = {p: store.readable_room_ids(workspace[p].user.id) for p in ("alice", "bob", "carol")}
    attempts = {
        "channel with the DM's name and its members": await client.post("/api/v1/channels.create", json={"name": DM, "members": ["alice", "bob"]}, headers=mallory.headers),
        "channel with the DM's name": await client.post("/api/v1/channels.create", json={"name": DM}, headers=mallory.headers),
        "the DM's name by MCP": await client.post(MCP_PATH, json=_tool("post_channels_create", name=DM), headers={**mallory.pat_headers, **MCP_HEADERS}),
        "a channel planting text in alice's search": await client.post("/api/v1/channels.create", json={"name": "plant", "members": ["alice"]}, headers=mallory.headers),
        "planting text by MCP": await client.post(MCP_PATH, json=_tool("post_channels_create", name="plant-2", members=["alice", "bob"]), headers={**mallory.pat_headers, **MCP_HEADERS}),
        "an admin cannot take the DM's name either": await client.post("/api/v1/channels.create", json={"name": DM.upper()}, headers=workspace["carol"].headers),
    }  # fmt: skip
    accepted = []
    for what, response in attempts.items():
        refused = response.status_code in (400, 403)
        if response.url.path == MCP_PATH:
            refused = response.status_code == 200 and _mcp_result(response)[0]
        if not refused:
            accepted.append(f"{what}: {response.status_code} {response.text[:120]}")
    after = {p: store.readable_room_ids(workspace[p].user.id) for p in ("alice", "bob", "carol")}
    subscribed_by_others = sum(len(after[p] - before[p]) for p in after)
    if legacy:
        write_legacy_room(store, "legacyChannel0001", "c", DM, [mallory.user.id, alice.user.id, bob.user.id])
    lookups = await _name_lookups(client, workspace, "lunchplans")
    wrong = {k: v for k, v in lookups.items() if v[1] != dm}
    seen_by_mallory = await client.get("/api/v1/ai.search", params={"query": "lunchplans"}, headers=mallory.headers)
    leaked = len(seen_by_mallory.json()["intelligent"])
    figure(
        tried=len(attempts) + len(lookups) + 1,
        failed=len(accepted) + subscribed_by_others + len(wrong) + leaked,
        takeovers_accepted=len(accepted),
        subscribed_by_someone_else=subscribed_by_others,
        name_lookups=len(lookups),
        lookups_not_meaning_the_dm=len(wrong),
        dm_messages_seen_by_the_attacker=leaked,
    )
    assert accepted == []
    assert subscribed_by_others == 0
    assert wrong == {}
    assert leaked == 0


LOOKALIKES = [
    pytest.param("ops", "0ps", False, id="digits-are-not-letters"),
    pytest.param("incidents", "ıncidents", True, id="dotless-i"),
    pytest.param("incidents", "ІNCIDENTS", True, id="cyrillic-capital-i"),
    pytest.param("incidents", "іncіdents", True, id="cyrillic-small-i"),
    pytest.param("secret", "ѕесrеt", True, id="cyrillic-lookalike-of-a-private-group"),
    pytest.param("alice__bob", "aIice__bob", True, id="capital-i-for-l-in-a-dm-name"),
    pytest.param("incidents", "ｉｎｃｉｄｅｎｔｓ", True, id="fullwidth"),
    pytest.param("incidents", "incidents\u200b", True, id="zero-width-space"),
    pytest.param("incidents", "\u202estnedicni", True, id="right-to-left-override"),
    pytest.param("incidents", "inci\u2066dents", True, id="isolate"),
    pytest.param("incidents", "incidents\u00ad", True, id="soft-hyphen"),
    pytest.param("incidents", "incidents-2", False, id="a-different-name"),
]


@pytest.mark.requirement("C6")
@pytest.mark.anyio
@pytest.mark.parametrize(("existing", "name", "refused"), LOOKALIKES)
async def test_a_name_that_looks_like_another_or_hides_characters_is_refused(
    client: httpx.AsyncClient,
    store: Store,
    workspace: Workspace,
    existing: str,
    name: str,
    refused: bool,
    figure: Figure,
) -> None:
    alice = workspace["alice"]
    if store.get_room_by_name(existing) is None:
        store.create_room("c", existing, members=[workspace["carol"].user.id])
    rest = await client.post("/api/v1/channels.create", json={"name": name}, headers=alice.headers)
    mcp = await client.post(MCP_PATH, json=_tool("post_channels_create", name=name), headers={**alice.pat_headers, **MCP_HEADERS})  # fmt: skip
    mcp_error, mcp_body = _mcp_result(mcp)
    outcomes = {"rest": rest.status_code == 400, "mcp": mcp_error and mcp_body.get("success") is False}
    if not refused:
        outcomes = {"rest": rest.status_code == 200, "mcp": not mcp_error or "already exists" in mcp_body["error"]}
    # The caller's own name (in its stored NFKC form) may be echoed; another room's name never.
    names_the_existing = refused and existing in rest.text and unicodedata.normalize("NFKC", name) != existing
    failed = sum(not ok for ok in outcomes.values()) + int(names_the_existing)
    figure(tried=2, failed=failed, name=name.encode("unicode_escape").decode(), status=rest.status_code, error=rest.json().get("error", "")[:120])
    assert all(outcomes.values()), (rest.text, mcp.text)
    assert not names_the_existing, "a refusal never names the look-alike"
