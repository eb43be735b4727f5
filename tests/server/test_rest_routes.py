"""The Rocket.Chat-shaped REST routes, driven through the real app in-process."""

from __future__ import annotations

import json

import httpx
import pytest

from .conftest import Workspace

pytestmark = pytest.mark.anyio


async def test_login_answers_rocketchat_shape_and_the_token_works(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    r = await client.post("/api/v1/login", json={"user": "alice", "password": workspace["alice"].password})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "success"
    assert body["data"]["userId"] == workspace["alice"].user.id
    assert body["data"]["me"]["username"] == "alice"
    headers = {"X-User-Id": body["data"]["userId"], "X-Auth-Token": body["data"]["authToken"]}
    me = await client.get("/api/v1/me", headers=headers)
    assert me.status_code == 200 and me.json()["username"] == "alice"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"user": "alice", "password": "wrong"}, id="wrong-password"),
        pytest.param({"user": "nobody", "password": "x"}, id="unknown-user"),
    ],
)
async def test_login_refuses_bad_credentials_with_401(
    client: httpx.AsyncClient, workspace: Workspace, body: dict[str, str]
) -> None:
    r = await client.post("/api/v1/login", json=body)
    assert r.status_code == 401
    assert r.json() == {
        "success": False,
        "error": "Incorrect username or password",
        "errorType": "error-login-failed",
    }


async def test_logout_ends_the_session_token(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"]
    assert (await client.post("/api/v1/logout", headers=alice.headers)).status_code == 200
    r = await client.get("/api/v1/me", headers=alice.headers)
    assert r.status_code == 401
    # The personal access token is not a session; it keeps working.
    assert (await client.get("/api/v1/me", headers=alice.pat_headers)).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-headers"),
        pytest.param({"X-User-Id": "u"}, id="user-id-without-token"),
        pytest.param({"X-Auth-Token": "t"}, id="token-without-user-id"),
        pytest.param({"X-User-Id": "nope", "X-Auth-Token": "nope"}, id="unknown-user-and-token"),
    ],
)
async def test_data_routes_need_valid_credentials(
    client: httpx.AsyncClient, workspace: Workspace, headers: dict[str, str]
) -> None:
    r = await client.get("/api/v1/channels.list.joined", headers=headers)
    assert r.status_code == 401
    assert r.json()["errorType"] == "error-unauthorized"


async def test_a_token_only_works_with_its_own_user_id(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    headers = {"X-User-Id": workspace["bob"].user.id, "X-Auth-Token": workspace["alice"].session}
    assert (await client.get("/api/v1/me", headers=headers)).status_code == 401


async def test_channels_list_joined_shows_only_the_callers_public_channels(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    r = await client.get("/api/v1/channels.list.joined", headers=workspace["bob"].headers)
    assert r.status_code == 200
    assert [c["name"] for c in r.json()["channels"]] == ["general"]
    r = await client.get("/api/v1/channels.list.joined", headers=workspace["alice"].headers)
    assert [c["name"] for c in r.json()["channels"]] == ["general", "ops"]


async def test_rooms_get_excludes_banned_and_unsubscribed_rooms(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    r = await client.get("/api/v1/rooms.get", headers=workspace["carol"].headers)
    assert sorted(room["name"] for room in r.json()["update"]) == ["general", "ops"]
    r = await client.get("/api/v1/rooms.get", headers=workspace["bob"].headers)
    names = sorted(room["name"] for room in r.json()["update"])
    assert names == ["alice__bob", "general", "secret"]
    dm = next(room for room in r.json()["update"] if room["t"] == "d")
    assert dm["usernames"] == ["alice", "bob"]


async def test_get_message_in_a_readable_room(client: httpx.AsyncClient, workspace: Workspace) -> None:
    msg = workspace.messages["ops-3"]
    r = await client.get(
        "/api/v1/chat.getMessage", params={"msgId": msg.id}, headers=workspace["alice"].headers
    )
    assert r.status_code == 200
    body = r.json()
    assert body["success"] is True
    assert body["message"]["msg"] == msg.text
    assert body["message"]["u"]["username"] == "alice"
    assert body["message"]["ts"].endswith("Z")


@pytest.mark.parametrize(
    ("who", "key"),
    [
        pytest.param("bob", "ops-3", id="not-subscribed"),
        pytest.param("carol", "secret-5", id="banned"),
        pytest.param("alice", "missing", id="does-not-exist"),
    ],
)
async def test_get_message_hides_unreadable_and_missing_messages_alike(
    client: httpx.AsyncClient, workspace: Workspace, who: str, key: str
) -> None:
    msg_id = workspace.messages[key].id if key in workspace.messages else "no-such-message"
    r = await client.get("/api/v1/chat.getMessage", params={"msgId": msg_id}, headers=workspace[who].headers)
    assert r.status_code == 404
    assert r.json()["errorType"] == "error-message-not-found"


@pytest.mark.parametrize(
    ("body", "room"),
    [
        pytest.param({"channel": "#general", "text": "hi"}, "general", id="by-channel-name"),
        pytest.param({"channel": "general", "text": "hi"}, "general", id="by-bare-name"),
        pytest.param({"channel": "@bob", "text": "hi"}, "dm", id="direct-by-username"),
    ],
)
async def test_post_message_by_channel(
    client: httpx.AsyncClient, workspace: Workspace, body: dict[str, str], room: str
) -> None:
    r = await client.post("/api/v1/chat.postMessage", json=body, headers=workspace["alice"].headers)
    assert r.status_code == 200, r.text
    assert r.json()["message"]["rid"] == workspace.rooms[room].id


async def test_post_message_by_room_id_and_read_back(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"]
    r = await client.post(
        "/api/v1/chat.postMessage",
        json={"roomId": workspace.rooms["ops"].id, "text": "ok"},
        headers=alice.headers,
    )
    msg_id = r.json()["message"]["_id"]
    r = await client.get("/api/v1/chat.getMessage", params={"msgId": msg_id}, headers=alice.headers)
    assert r.json()["message"]["msg"] == "ok"


@pytest.mark.parametrize(
    ("who", "body"),
    [
        pytest.param("alice", {"channel": "#secret", "text": "x"}, id="private-room-not-a-member"),
        pytest.param("carol", {"channel": "#secret", "text": "x"}, id="banned"),
        pytest.param("bob", {"channel": "#ops", "text": "x"}, id="public-room-not-a-member"),
        pytest.param("carol", {"channel": "@bob", "text": "x"}, id="no-direct-room"),
        pytest.param("alice", {"channel": "#nowhere", "text": "x"}, id="no-such-room"),
    ],
)
async def test_post_message_refuses_rooms_the_caller_cannot_read(
    client: httpx.AsyncClient, workspace: Workspace, who: str, body: dict[str, str]
) -> None:
    r = await client.post("/api/v1/chat.postMessage", json=body, headers=workspace[who].headers)
    assert r.status_code == 404
    assert r.json()["errorType"] == "error-room-not-found"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "fragment"),
    [
        pytest.param(
            "GET",
            "/api/v1/chat.getMessage",
            {"params": {"msgId": "x", "bogus": "1"}},
            "unknown parameter 'bogus'",
            id="unknown-query-parameter",
        ),
        pytest.param(
            "GET",
            "/api/v1/chat.getMessage",
            {"params": {}},
            "missing parameter 'msgId'",
            id="missing-query-parameter",
        ),
        pytest.param(
            "GET",
            "/api/v1/chat.getMessage",
            {"params": {"msgId": "x" * 129}},
            "'msgId'",
            id="over-long-parameter",
        ),
        pytest.param(
            "POST",
            "/api/v1/chat.postMessage",
            {"json": {"roomId": "r", "text": "t", "extra": 1}},
            "unknown parameter 'extra'",
            id="unknown-body-field-with-variants",
        ),
        pytest.param(
            "POST",
            "/api/v1/chat.postMessage",
            {"json": {"roomId": "r", "channel": "c", "text": "t"}},
            "exactly one of roomId+text or channel+text",
            id="both-variants",
        ),
        pytest.param(
            "POST",
            "/api/v1/chat.postMessage",
            {"json": {"roomId": "r", "text": ""}},
            "'text'",
            id="empty-text",
        ),
        pytest.param(
            "POST",
            "/api/v1/chat.postMessage",
            {"json": {"roomId": "r", "text": "x" * 5001}},
            "'text'",
            id="text-over-5000-characters",
        ),
        pytest.param(
            "POST", "/api/v1/chat.postMessage", {"content": b"{not json"}, "not valid JSON", id="invalid-json"
        ),
        pytest.param(
            "POST",
            "/api/v1/chat.postMessage",
            {"json": [1, 2]},
            "must be a JSON object",
            id="json-array-body",
        ),
        pytest.param(
            "GET",
            "/api/v1/users.info",
            {"params": {}},
            "exactly one of userId or username",
            id="no-variant-given",
        ),
        pytest.param(
            "GET",
            "/api/v1/channels.list.joined",
            {"params": {"count": "1000"}},
            "'count'",
            id="count-over-the-cap",
        ),
        pytest.param(
            "GET",
            "/api/v1/rooms.autocomplete.channelAndPrivate",
            {"params": {"selector": "[1]"}},
            "'selector' must be a JSON object",
            id="selector-not-an-object",
        ),
    ],
)
async def test_bad_parameters_answer_400_naming_them(
    client: httpx.AsyncClient,
    workspace: Workspace,
    method: str,
    path: str,
    kwargs: dict[str, object],
    fragment: str,
) -> None:
    r = await client.request(method, path, headers=workspace["alice"].headers, **kwargs)  # type: ignore[arg-type]
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["success"] is False
    assert fragment in body["error"]


async def test_users_info_by_id_and_by_username(client: httpx.AsyncClient, workspace: Workspace) -> None:
    bob = workspace["bob"].user
    by_id = await client.get(
        "/api/v1/users.info", params={"userId": bob.id}, headers=workspace["alice"].headers
    )
    by_name = await client.get(
        "/api/v1/users.info", params={"username": "@bob"}, headers=workspace["alice"].headers
    )
    assert by_id.json()["user"] == by_name.json()["user"]
    assert by_id.json()["user"]["username"] == "bob"
    missing = await client.get(
        "/api/v1/users.info", params={"username": "zed"}, headers=workspace["alice"].headers
    )
    assert missing.status_code == 404 and missing.json()["errorType"] == "error-user-not-found"


async def test_channels_create_needs_the_permission_and_a_free_name(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    alice, carol = workspace["alice"], workspace["carol"]
    refused = await client.post(
        "/api/v1/channels.create", json={"name": "design", "members": ["bob"]}, headers=alice.headers
    )
    assert refused.status_code == 403 and "add-user-to-any-c-room" in refused.json()["error"]
    r = await client.post(
        "/api/v1/channels.create", json={"name": "design", "members": ["alice"]}, headers=alice.headers
    )
    assert r.status_code == 200, r.text
    rid = r.json()["channel"]["_id"]
    assert workspace.store.get_subscription(alice.user.id, rid) is not None
    by_admin = await client.post(
        "/api/v1/channels.create", json={"name": "design-2", "members": ["bob"]}, headers=carol.headers
    )
    assert by_admin.status_code == 200, by_admin.text
    assert workspace.store.get_subscription(workspace["bob"].user.id, by_admin.json()["channel"]["_id"])
    again = await client.post("/api/v1/channels.create", json={"name": "Design"}, headers=alice.headers)
    assert again.status_code == 400 and again.json()["errorType"] == "error-duplicate-channel-name"
    workspace.store.set_roles(alice.user.id, ["bot-without-rights"])
    denied = await client.post("/api/v1/channels.create", json={"name": "other"}, headers=alice.headers)
    assert denied.status_code == 403 and denied.json()["errorType"] == "error-not-allowed"


async def test_room_autocomplete_only_offers_readable_rooms(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    async def names(who: str, text: str) -> list[str]:
        r = await client.get(
            "/api/v1/rooms.autocomplete.channelAndPrivate",
            params={"selector": json.dumps({"name": text})},
            headers=workspace[who].headers,
        )
        assert r.status_code == 200
        return [item["name"] for item in r.json()["items"]]

    assert await names("bob", "") == ["general", "secret"]
    assert await names("alice", "") == ["general", "ops"]
    assert await names("carol", "sec") == []  # banned from #secret
    assert await names("alice", "#op") == ["ops"]


async def test_user_autocomplete_only_offers_people_sharing_a_room(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    workspace.store.create_user("dave", name="Dave Loner")
    r = await client.get(
        "/api/v1/users.autocomplete",
        params={"selector": json.dumps({"term": "a"})},
        headers=workspace["alice"].headers,
    )
    usernames = [u["username"] for u in r.json()["items"]]
    assert "dave" not in usernames
    assert "carol" in usernames and "alice" in usernames


async def test_personal_access_tokens_lifecycle(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"]
    r = await client.post(
        "/api/v1/users.generatePersonalAccessToken", json={"tokenName": "agent"}, headers=alice.headers
    )
    assert r.status_code == 200
    token = r.json()["token"]
    listed = await client.get("/api/v1/users.getPersonalAccessTokens", headers=alice.headers)
    assert sorted(t["name"] for t in listed.json()["tokens"]) == ["agent", "tests"]
    assert token not in listed.text
    pat_headers = {"X-User-Id": alice.user.id, "X-Auth-Token": token}
    assert (await client.get("/api/v1/me", headers=pat_headers)).status_code == 200
    dup = await client.post(
        "/api/v1/users.generatePersonalAccessToken", json={"tokenName": "agent"}, headers=alice.headers
    )
    assert dup.status_code == 400
    removed = await client.post(
        "/api/v1/users.removePersonalAccessToken", json={"tokenName": "agent"}, headers=alice.headers
    )
    assert removed.status_code == 200
    assert (await client.get("/api/v1/me", headers=pat_headers)).status_code == 401


async def test_unknown_api_route_is_a_json_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/nope.nothing")
    assert r.status_code == 404
    assert r.json()["errorType"] == "error-unknown-route"


async def test_openapi_document_lists_every_route_with_its_schema(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    post = doc["paths"]["/api/v1/chat.postMessage"]["post"]
    variants = post["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert [sorted(v["required"]) for v in variants] == [["roomId", "text"], ["channel", "text"]]
    params = {p["name"]: p for p in doc["paths"]["/api/v1/chat.getMessage"]["get"]["parameters"]}
    assert params["msgId"]["required"] is True
