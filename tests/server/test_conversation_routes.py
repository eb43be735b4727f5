"""Threads, edits, deletions, reactions, pins, history and context over REST, in Rocket.Chat's shapes.

The workspace (conftest): alice reads #general, #ops and her DM with bob; bob reads #general, #secret
and the DM; carol (admin) reads #general and #ops and is banned from #secret. Every route answers a
room or message the caller cannot read exactly as one that does not exist.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Workspace

API = "/api/v1"
pytestmark = pytest.mark.anyio


async def post(client: httpx.AsyncClient, who: dict[str, str], route: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post(f"{API}/{route}", json=body, headers=who)


async def get(client: httpx.AsyncClient, who: dict[str, str], route: str, **params: Any) -> httpx.Response:
    return await client.get(f"{API}/{route}", params=params, headers=who)


@pytest.fixture
async def thread(client: httpx.AsyncClient, workspace: Workspace) -> dict[str, str]:
    """A thread in #ops: alice's question, carol's and alice's replies."""
    ops = workspace.rooms["ops"].id
    alice, carol = workspace["alice"].headers, workspace["carol"].headers
    first = (await post(client, alice, "chat.postMessage", {"roomId": ops, "text": "why did billing-api fail?"})).json()
    tmid = first["message"]["_id"]
    one = await post(client, carol, "chat.postMessage", {"roomId": ops, "text": "pool exhausted", "tmid": tmid})
    two = await post(client, alice, "chat.postMessage", {"channel": "#ops", "text": "thanks @carol", "tmid": tmid})
    assert one.status_code == two.status_code == 200
    return {"tmid": tmid, "reply1": one.json()["message"]["_id"], "reply2": two.json()["message"]["_id"]}


async def test_replies_carry_tmid_and_the_first_message_its_summary(
    client: httpx.AsyncClient, workspace: Workspace, thread: dict[str, str]
) -> None:
    alice = workspace["alice"].headers
    replies = (await get(client, alice, "chat.getThreadMessages", tmid=thread["tmid"])).json()
    assert [m["_id"] for m in replies["messages"]] == [thread["reply1"], thread["reply2"]]
    assert {m["tmid"] for m in replies["messages"]} == {thread["tmid"]}
    assert (replies["count"], replies["offset"], replies["total"]) == (2, 0, 2)
    assert replies["messages"][1]["mentions"] == [{"username": "carol", "type": "user"}]
    threads = (await get(client, alice, "chat.getThreadsList", rid=workspace.rooms["ops"].id)).json()
    (first,) = threads["threads"]
    assert first["_id"] == thread["tmid"] and first["tcount"] == 2
    assert first["replies"] == [workspace["carol"].user.id, workspace["alice"].user.id]
    assert "tmid" not in first and threads["total"] == 1


async def test_a_reply_to_a_message_of_another_room_is_refused_as_unknown(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    bob = workspace["bob"].headers
    secret = workspace.messages["secret-5"].id
    general = workspace.rooms["general"].id
    answer = await post(client, bob, "chat.postMessage", {"roomId": general, "text": "x", "tmid": secret})
    missing = await post(client, bob, "chat.postMessage", {"roomId": general, "text": "x", "tmid": "nope"})
    assert answer.status_code == missing.status_code == 404
    assert answer.json() == missing.json()


async def test_the_context_of_a_reply_is_its_thread_and_of_a_plain_message_its_neighbours(
    client: httpx.AsyncClient, workspace: Workspace, thread: dict[str, str]
) -> None:
    alice = workspace["alice"].headers
    context = (await get(client, alice, "chat.getMessageContext", msgId=thread["reply2"])).json()
    assert context["kind"] == "thread" and context["tmid"] == thread["tmid"] and context["replies"] == 2
    assert [m["_id"] for m in context["messages"]] == [thread["tmid"], thread["reply1"], thread["reply2"]]
    assert context["room"]["name"] == "ops"
    plain = workspace.messages["general-2"]
    around = (await get(client, alice, "chat.getMessageContext", msgId=plain.id, around=1)).json()
    assert around["kind"] == "room" and around["tmid"] is None
    assert [m["_id"] for m in around["messages"]] == [workspace.messages["general-1"].id, plain.id]


async def test_edits_follow_rocket_chat_s_rules(client: httpx.AsyncClient, workspace: Workspace) -> None:
    ops = workspace.rooms["ops"].id
    own = workspace.messages["ops-3"]  # alice's
    alice, carol = workspace["alice"].headers, workspace["carol"].headers
    edited = await post(client, alice, "chat.update", {"roomId": ops, "msgId": own.id, "text": "deploy fixed"})
    assert edited.status_code == 200 and edited.json()["message"]["msg"] == "deploy fixed"
    assert "editedAt" in edited.json()["message"] and "editedBy" not in edited.json()["message"]
    theirs = workspace.messages["ops-4"]  # carol's: alice may not edit it
    refused = await post(client, alice, "chat.update", {"roomId": ops, "msgId": theirs.id, "text": "mine now"})
    assert refused.status_code == 403
    by_admin = await post(client, carol, "chat.update", {"roomId": ops, "msgId": own.id, "text": "moderated"})
    assert by_admin.json()["message"]["editedBy"] == {"_id": workspace["carol"].user.id}
    wrong_room = await post(
        client, alice, "chat.update", {"roomId": workspace.rooms["general"].id, "msgId": own.id, "text": "x"}
    )
    assert wrong_room.status_code == 404


@pytest.mark.parametrize(
    ("who", "message", "status"),
    [
        pytest.param("alice", "ops-3", 200, id="own-message"),
        pytest.param("alice", "ops-4", 403, id="someone-else-s"),
        pytest.param("carol", "ops-3", 200, id="admin-deletes-anyone-s"),
        pytest.param("alice", "secret-5", 404, id="a-room-she-cannot-read"),
    ],
)
async def test_deleting(client: httpx.AsyncClient, workspace: Workspace, who: str, message: str, status: int) -> None:
    target = workspace.messages[message]
    answer = await post(
        client, workspace[who].headers, "chat.delete", {"roomId": target.room_id, "msgId": target.id}
    )
    assert answer.status_code == status
    assert (workspace.store.get_message(target.id) is None) is (status == 200)


async def test_reactions_toggle_and_pins_list(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"].headers
    target = workspace.messages["general-2"]
    assert (await post(client, alice, "chat.react", {"messageId": target.id, "emoji": "tada"})).status_code == 200
    got = (await get(client, alice, "chat.getMessage", msgId=target.id)).json()["message"]
    assert got["reactions"] == {":tada:": {"usernames": ["alice"]}}
    await post(client, alice, "chat.react", {"messageId": target.id, "emoji": ":tada:"})  # toggles off
    got = (await get(client, alice, "chat.getMessage", msgId=target.id)).json()["message"]
    assert "reactions" not in got
    pinned = await post(client, alice, "chat.pinMessage", {"messageId": target.id})
    assert pinned.json()["message"]["pinned"] is True
    listed = (await get(client, alice, "chat.getPinnedMessages", roomId=target.room_id)).json()
    assert [m["_id"] for m in listed["messages"]] == [target.id] and listed["total"] == 1
    assert (await post(client, alice, "chat.unPinMessage", {"messageId": target.id})).status_code == 200
    assert (await get(client, alice, "chat.getPinnedMessages", roomId=target.room_id)).json()["total"] == 0


@pytest.mark.parametrize(
    ("route", "room", "status"),
    [
        pytest.param("channels.history", "general", 200, id="channel-history"),
        pytest.param("im.history", "dm", 200, id="dm-history"),
        pytest.param("groups.history", "general", 404, id="a-channel-is-no-group"),
        pytest.param("channels.history", "secret", 404, id="a-room-she-cannot-read"),
    ],
)
async def test_history_routes_read_rooms_of_their_own_kind(
    client: httpx.AsyncClient, workspace: Workspace, route: str, room: str, status: int
) -> None:
    answer = await get(client, workspace["alice"].headers, route, roomId=workspace.rooms[room].id)
    assert answer.status_code == status
    if status == 200:
        times = [m["ts"] for m in answer.json()["messages"]]
        assert times and times == sorted(times, reverse=True)


async def test_history_between_latest_and_oldest(client: httpx.AsyncClient, workspace: Workspace) -> None:
    first, second = workspace.messages["general-1"], workspace.messages["general-2"]
    answer = await get(
        client,
        workspace["alice"].headers,
        "channels.history",
        roomId=workspace.rooms["general"].id,
        oldest=first.ts.isoformat(),
        latest=second.ts.isoformat(),
        inclusive="true",
    )
    assert [m["_id"] for m in answer.json()["messages"]] == [second.id, first.id]


async def test_chat_search_and_room_info_and_members(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"].headers
    ops = workspace.rooms["ops"].id
    found = (await get(client, alice, "chat.search", roomId=ops, searchText="ROLLING")).json()
    assert [m["msg"] for m in found["messages"]] == ["rolling back now"]
    info = (await get(client, alice, "rooms.info", roomName="ops")).json()
    assert info["room"]["_id"] == ops
    members = (await get(client, alice, "channels.members", roomId=ops)).json()
    assert [m["username"] for m in members["members"]] == ["alice", "carol"] and members["total"] == 2


@pytest.mark.parametrize(
    ("route", "method", "params"),
    [
        pytest.param("chat.getThreadMessages", "GET", {"tmid": "{secret}"}, id="thread-messages"),
        pytest.param("chat.getThreadsList", "GET", {"rid": "{secret_room}"}, id="threads-list"),
        pytest.param("chat.getMessageContext", "GET", {"msgId": "{secret}"}, id="context"),
        pytest.param("chat.getPinnedMessages", "GET", {"roomId": "{secret_room}"}, id="pinned"),
        pytest.param("groups.history", "GET", {"roomId": "{secret_room}"}, id="history"),
        pytest.param("chat.search", "GET", {"roomId": "{secret_room}", "searchText": "acquisition"}, id="search"),
        pytest.param("rooms.info", "GET", {"roomId": "{secret_room}"}, id="room-info-by-id"),
        pytest.param("rooms.info", "GET", {"roomName": "secret"}, id="room-info-by-name"),
        pytest.param("channels.members", "GET", {"roomId": "{secret_room}"}, id="members"),
        pytest.param("chat.react", "POST", {"messageId": "{secret}", "emoji": ":+1:"}, id="react"),
        pytest.param("chat.pinMessage", "POST", {"messageId": "{secret}"}, id="pin"),
        pytest.param("chat.update", "POST", {"roomId": "{secret_room}", "msgId": "{secret}", "text": "x"}, id="update"),
        pytest.param("chat.delete", "POST", {"roomId": "{secret_room}", "msgId": "{secret}"}, id="delete"),
    ],
)
async def test_a_room_the_caller_cannot_read_answers_as_one_that_does_not_exist(
    client: httpx.AsyncClient, workspace: Workspace, route: str, method: str, params: dict[str, str]
) -> None:
    ids = {"secret": workspace.messages["secret-5"].id, "secret_room": workspace.rooms["secret"].id}
    unknown = {"secret": "no-such-message", "secret_room": "no-such-room"}
    for caller in ("alice", "carol"):  # not a member; banned
        real = {k: v.format(**ids) for k, v in params.items()}
        fake = {k: v.format(**unknown) if "{" in v else "no-such-room" for k, v in params.items()}
        headers = workspace[caller].headers
        if method == "GET":
            hidden, missing = await get(client, headers, route, **real), await get(client, headers, route, **fake)
        else:
            hidden, missing = await post(client, headers, route, real), await post(client, headers, route, fake)
        assert hidden.status_code == 404, (caller, hidden.text)
        assert hidden.json()["errorType"] == missing.json()["errorType"]
        assert "acquisition" not in hidden.text
    assert workspace.store.get_message(ids["secret"]) is not None
