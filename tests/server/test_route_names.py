"""Names and texts the store would refuse are refused by the route's validation first: a clear 400 that
names the parameter, and no "unhandled store error" (with its traceback) in the log."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from ai_search_server.api_limits import MAX_NAME_CHARS

from .conftest import Workspace

pytestmark = pytest.mark.anyio


CREATE = "/api/v1/channels.create"
TOKEN = "/api/v1/users.generatePersonalAccessToken"
REMOVE_TOKEN = "/api/v1/users.removePersonalAccessToken"
POST = "/api/v1/chat.postMessage"
LOGIN = "/api/v1/login"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param(CREATE, {"name": "ops\x01"}, "name", id="room-name-c0"),
        pytest.param(CREATE, {"name": "ops\x7f"}, "name", id="room-name-del"),
        pytest.param(CREATE, {"name": "ops\x00x"}, "name", id="room-name-nul"),
        pytest.param(CREATE, {"name": "x" * (MAX_NAME_CHARS + 1)}, "name", id="room-name-too-long"),
        pytest.param(CREATE, {"name": 'the "ops" room'}, "name", id="room-name-quote"),
        pytest.param(CREATE, {"name": "#ops"}, "name", id="room-name-leading-sigil"),
        pytest.param(CREATE, {"name": " ops"}, "name", id="room-name-untrimmed"),
        pytest.param(CREATE, {"name": "ok", "members": ["bob\x1b"]}, "members.0", id="member-name"),
        pytest.param(TOKEN, {"tokenName": "ci\x00"}, "tokenName", id="token-label-nul"),
        pytest.param(TOKEN, {"tokenName": "ci\x1f"}, "tokenName", id="token-label-c0"),
        pytest.param(
            TOKEN, {"tokenName": "t" * (MAX_NAME_CHARS + 1)}, "tokenName", id="token-label-too-long"
        ),
        pytest.param(REMOVE_TOKEN, {"tokenName": "ci\x00"}, "tokenName", id="token-label-to-remove"),
        pytest.param(POST, {"channel": "#general\x01", "text": "x"}, "channel", id="channel-reference"),
        pytest.param(POST, {"channel": "#general", "text": "x\x00y"}, "text", id="message-nul"),
        pytest.param(POST, {"channel": "#general", "text": " \t "}, "text", id="message-blank"),
        pytest.param(LOGIN, {"user": "alice\x00", "password": "x"}, "user", id="login-username"),
    ],
)
async def test_a_value_the_store_refuses_is_a_clear_400_naming_the_parameter(
    client: httpx.AsyncClient,
    workspace: Workspace,
    caplog: pytest.LogCaptureFixture,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    with caplog.at_level(logging.ERROR):
        response = await client.post(path, json=body, headers=workspace["carol"].pat_headers)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["errorType"] == "error-invalid-params"
    assert f"parameter '{field}'" in answer["error"]
    assert "Value error" not in answer["error"]
    assert not caplog.records, caplog.text


async def test_a_name_with_spaces_and_unicode_is_still_a_name(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    headers = workspace["carol"].headers  # a login session: a PAT cannot mint PATs
    created = await client.post(TOKEN, json={"tokenName": "CI für Zoë, nightly"}, headers=headers)
    assert created.status_code == 200, created.text
    room = await client.post(CREATE, json={"name": "x" * MAX_NAME_CHARS}, headers=headers)
    assert room.status_code == 200, room.text


async def test_the_document_shows_the_name_rule(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    schema = doc["paths"][CREATE]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["name"]["pattern"] == r"^[^\x00-\x1f\x7f]*$"
    assert schema["properties"]["name"]["maxLength"] == MAX_NAME_CHARS
