"""C7. People: one visibility rule for every route that names a person, and no enumeration oracle.

``users.autocomplete`` offered only people who share a room with the caller, while ``users.info`` gave
the full profile of anyone and 404 for unknown names, which told a caller who exists. Every caller x
target pair of a workspace with an outsider is asked through REST and MCP, by id and by username: the
profile is shown exactly when autocomplete would offer the person, and a hidden person's answer is
byte for byte the answer for a name nobody has.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ai_search_server.mcp import MCP_PATH
from ai_search_server.store.base import Store
from tests.server.conftest import Workspace

from .conftest import Figure

MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}


def _tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


async def _offered(http: httpx.AsyncClient, headers: dict[str, str]) -> set[str]:
    people = await http.get("/api/v1/users.autocomplete", params={"selector": '{"term":""}'}, headers=headers)
    return {item["username"] for item in people.json()["items"]}


@pytest.mark.requirement("C7")
@pytest.mark.anyio
async def test_users_info_shows_exactly_the_people_autocomplete_offers(
    client: httpx.AsyncClient, store: Store, workspace: Workspace, figure: Figure
) -> None:
    dave = store.create_user("dave", name="Dave Outsider")  # shares no room with anyone
    store.create_token(dave.id, "pat", label="tests")
    targets = {**{name: person.user for name, person in workspace.people.items()}, "dave": dave}
    wrong: list[str] = []
    tried = shown = hidden = 0
    for caller_name, caller in workspace.people.items():
        offered = await _offered(client, caller.headers) | {caller_name}
        unknown = {
            "rest": await client.get("/api/v1/users.info", params={"username": "nobody-here"}, headers=caller.headers),
            "mcp": await client.post(MCP_PATH, json=_tool("get_users_info_by_username", username="nobody-here"), headers={**caller.pat_headers, **MCP_HEADERS}),
        }  # fmt: skip
        for target_name, target in targets.items():
            asks = {
                "rest id": await client.get("/api/v1/users.info", params={"userId": target.id}, headers=caller.headers),
                "rest name": await client.get("/api/v1/users.info", params={"username": target_name}, headers=caller.headers),
                "mcp id": await client.post(MCP_PATH, json=_tool("get_users_info_by_userId", userId=target.id), headers={**caller.pat_headers, **MCP_HEADERS}),
                "mcp name": await client.post(MCP_PATH, json=_tool("get_users_info_by_username", username=target_name), headers={**caller.pat_headers, **MCP_HEADERS}),
            }  # fmt: skip
            for how, answer in asks.items():
                tried += 1
                visible = target_name in offered
                if how.startswith("rest"):
                    ok = answer.status_code == 200 if visible else answer.content == unknown["rest"].content
                    body = answer.json()
                else:
                    result = answer.json()["result"]
                    same = result == unknown["mcp"].json()["result"]
                    ok = (not result["isError"]) if visible else same
                    body = json.loads(result["content"][0]["text"])
                if visible and ok:
                    ok = body["user"]["username"] == target_name
                shown += visible and ok
                hidden += (not visible) and ok
                if not ok:
                    wrong.append(f"{caller_name} -> {target_name} ({how}): {answer.status_code} {answer.text[:100]}")
    figure(tried=tried, failed=len(wrong), profiles_shown=shown, answered_as_unknown=hidden)
    assert wrong == []
    assert hidden > 0 and shown > 0
