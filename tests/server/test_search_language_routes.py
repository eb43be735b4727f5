"""The search language on the server: one table of lines, each run through the core, REST ``q=`` and
the MCP search tool, which must agree; then the receipt, the zero-result diagnosis and its scoping.

The workspace is the shared one plus "release" messages with a link, an image, a file, a thread and
its reply, a pin with a reaction, a direct message and a phrase split in two, on days around a fixed
clock (Tuesday 2026-12-01 12:00 UTC). The keyword branch alone runs, so each line's results are exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search import parse_search_filter_text, serialize_search_query
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.floor import NO_FLOOR
from ai_search_server.retrieval.search_service import SearchOptions, SearchService
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.settings import Settings
from ai_search_server.store.records import Attachment

from ._mcp_fixtures import call, mcp_headers, post, request, tool_text
from ._search_support import EMBED_WAIT_SECONDS, open_test_index
from .conftest import Workspace

pytestmark = pytest.mark.anyio

URL = "/api/v1/ai.search"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
_RELEASE = (
    # key, room, author, text, ts, attachment
    (
        "link",
        "general",
        "alice",
        "release notes at https://example.org/notes",
        datetime(2026, 11, 20, 10, tzinfo=UTC),
    ),
    ("image", "ops", "carol", "release screenshot", datetime(2026, 11, 25, 10, tzinfo=UTC)),
    ("file", "ops", "alice", "release checklist attached", datetime(2026, 11, 28, 8, tzinfo=UTC)),
    ("root", "general", "bob", "release train for friday", datetime(2026, 11, 29, 12, tzinfo=UTC)),
    ("reply", "general", "alice", "release train is delayed", datetime(2026, 11, 29, 13, tzinfo=UTC)),
    # 23:30 UTC on Monday is already Tuesday in Paris.
    ("pinned", "ops", "alice", "release freeze starts monday", datetime(2026, 11, 30, 23, 30, tzinfo=UTC)),
    ("dm", "dm", "bob", "release party at noon?", datetime(2026, 12, 1, 8, tzinfo=UTC)),
    ("phrase", "general", "carol", "we are rolling the release back", datetime(2026, 11, 15, 9, tzinfo=UTC)),
)
_FILES = {
    "image": Attachment("board.png", type="image/png", size=2048),
    "file": Attachment("checklist.txt", type="text/plain", size=120),
}
ALL = {key for key, *_ in _RELEASE}


@pytest.fixture
def language_app(
    app: Starlette, settings: Settings, workspace: Workspace, data_dir: Path
) -> Iterator[Starlette]:
    store = workspace.store
    for key, room, author, text, ts in _RELEASE:
        tmid = workspace.messages["root"].id if key == "reply" else None
        attachments = (_FILES[key],) if key in _FILES else ()
        message = store.post_message(
            workspace.rooms[room].id,
            workspace[author].user.id,
            text,
            ts=ts,
            tmid=tmid,
            attachments=attachments,
        )
        workspace.messages[key] = message
    store.set_pinned(workspace.messages["pinned"].id, workspace["alice"].user.id)
    store.set_reaction(workspace.messages["pinned"].id, workspace["carol"].user.id, ":+1:", True)
    index = open_test_index(store, data_dir, None)
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    service = SearchService(store, EmbeddedPipeline(index), SearchOptions(floor=NO_FLOOR), clock=lambda: NOW)
    app.state.services.search = SearchHandle.ready(settings, store, service)
    yield app
    index.close()


def _keys(workspace: Workspace, results: list[dict[str, Any]]) -> list[str]:
    names = {m.id: k for k, m in workspace.messages.items()}
    return [names[r["_id"]] for r in results]


async def rest(
    client: httpx.AsyncClient, workspace: Workspace, user: str, line: str, tz: str = ""
) -> dict[str, Any]:
    params = {"q": line, "searchType": "keyword", "intelligentCount": "50"}
    if tz:
        params["tz"] = tz
    response = await client.get(URL, params=params, headers=workspace[user].headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def mcp(
    client: httpx.AsyncClient, workspace: Workspace, user: str, line: str, tz: str = ""
) -> dict[str, Any]:
    headers = mcp_headers(workspace[user].pat_headers)
    listed = (await post(client, request("tools/list"), headers)).json()["result"]["tools"]
    (tool,) = [
        t["name"] for t in listed if "ai_search" in t["name"] and "q" in t["inputSchema"]["properties"]
    ]
    arguments: dict[str, Any] = {"q": line, "searchType": "keyword", "intelligentCount": 50}
    if tz:
        arguments["tz"] = tz
    is_error, body = tool_text(await post(client, call(tool, arguments), headers))
    assert not is_error, body
    return body  # type: ignore[no-any-return]


LINES = [
    pytest.param("release", "", ALL, id="every-release-message"),
    pytest.param("release has:link", "", {"link"}, id="has-link"),
    pytest.param("release has:image", "", {"image"}, id="has-image"),
    pytest.param("release has:file", "", {"image", "file"}, id="has-file-counts-images"),
    pytest.param("release has:reaction", "", {"pinned"}, id="has-reaction"),
    pytest.param("release has:thread", "", {"root"}, id="has-thread-is-a-threads-first-message"),
    pytest.param("release is:thread", "", {"reply"}, id="is-thread-is-a-reply"),
    pytest.param("release is:DM", "", {"dm"}, id="is-dm"),
    pytest.param("release is:pinned", "", {"pinned"}, id="is-pinned"),
    pytest.param("release -is:dm -has:file", "", ALL - {"dm", "image", "file"}, id="excluded-is-and-has"),
    pytest.param("release in:#ops", "", {"image", "file", "pinned"}, id="in-a-room"),
    pytest.param("release -in:#ops", "", ALL - {"image", "file", "pinned"}, id="excluded-room"),
    pytest.param("release -from:@bob", "", ALL - {"root", "dm"}, id="excluded-author"),
    pytest.param("release -train", "", ALL - {"root", "reply"}, id="excluded-word"),
    pytest.param('release -"rolling the"', "", ALL - {"phrase"}, id="excluded-phrase"),
    pytest.param('"release train"', "", {"root", "reply"}, id="a-phrase-must-be-whole"),
    pytest.param('"rolling back"', "", {"ops-4"}, id="a-phrase-split-by-a-word-is-no-match"),
    pytest.param("release on:today", "", {"dm"}, id="on-today-in-utc"),
    pytest.param("release on:today", "Europe/Paris", {"pinned", "dm"}, id="on-today-in-paris"),
    pytest.param("release on:today", "+01:00", {"pinned", "dm"}, id="on-today-at-an-offset"),
    pytest.param("release after:yesterday", "", {"pinned", "dm"}, id="after-yesterday"),
    pytest.param("release after:monday", "", {"pinned", "dm"}, id="after-monday"),
    pytest.param("release before:2026-11-21", "", {"link", "phrase"}, id="before-a-day"),
    pytest.param("release during:2026-11", "", ALL - {"dm"}, id="during-a-month"),
    pytest.param("release during:last-week", "", {"image", "file", "root", "reply"}, id="during-last-week"),
    pytest.param("release after:-7d", "", ALL - {"link", "phrase"}, id="after-seven-days-back"),
    pytest.param("release before:-2w", "", {"phrase"}, id="before-two-weeks-back"),
    pytest.param("release after:today before:yesterday", "", set(), id="contradicting-dates"),
    pytest.param("release has:pdf", "", ALL, id="an-unknown-value-is-words"),
    pytest.param("release in:#secret", "", set(), id="a-room-the-caller-cannot-read"),
]


@pytest.mark.parametrize(("line", "tz", "expected"), LINES)
async def test_core_rest_and_mcp_agree(
    language_app: Starlette,
    client: httpx.AsyncClient,
    workspace: Workspace,
    line: str,
    tz: str,
    expected: set[str],
) -> None:
    parsed = parse_search_filter_text(line)
    assert parse_search_filter_text(serialize_search_query(parsed.search_text, parsed.filters)) == parsed
    by_rest = await rest(client, workspace, "alice", line, tz)
    by_mcp = await mcp(client, workspace, "alice", line, tz)
    assert set(_keys(workspace, by_rest["intelligent"])) == expected
    assert _keys(workspace, by_mcp["intelligent"]) == _keys(workspace, by_rest["intelligent"])
    assert by_mcp["meta"] == by_rest["meta"]


async def test_sort_new_puts_the_newest_first(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    body = await rest(client, workspace, "alice", "release sort:new")
    assert _keys(workspace, body["intelligent"]) == [
        "dm",
        "pinned",
        "reply",
        "root",
        "file",
        "image",
        "link",
        "phrase",
    ]


async def test_sort_new_shows_the_results_of_relevance_in_time_order(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    """Newest first reorders what relevance finds; it never brings in weaker candidates."""
    by_relevance = await rest(client, workspace, "alice", "release")
    by_time = await rest(client, workspace, "alice", "release sort:new")
    assert sorted(_keys(workspace, by_time["intelligent"])) == sorted(
        _keys(workspace, by_relevance["intelligent"])
    )
    times = [hit["ts"] for hit in by_time["intelligent"]]
    assert times == sorted(times, reverse=True)


async def test_a_phrase_is_highlighted_whole(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    body = await rest(client, workspace, "alice", '"release train" delayed')
    found = {
        workspace.messages[k].text: r["highlights"]
        for k, r in zip(_keys(workspace, body["intelligent"]), body["intelligent"], strict=True)
    }
    assert found["release train is delayed"] == [[0, 13], [17, 24]]
    assert found["release train for friday"] == [[0, 13]]


async def test_every_result_list_carries_its_receipt(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    scope = (await rest(client, workspace, "alice", "release"))["meta"]["scope"]
    assert scope == {
        "rooms": 3,
        "from": "2026-11-01",
        "to": "2026-12-01",
        "timeZone": "UTC",
        "text": "searched 3 rooms you are in, 1 Nov – today",
        "unknown": [],
    }
    dated = (await rest(client, workspace, "alice", "release in:#ops during:last-week", "Europe/Paris"))[
        "meta"
    ]
    assert dated["scope"]["text"] == "searched 1 room you are in, 23 Nov – 29 Nov"
    assert dated["scope"]["timeZone"] == "Europe/Paris"


async def test_a_search_without_results_says_what_each_relaxation_finds(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    meta = (await rest(client, workspace, "alice", "release in:#ops is:dm"))["meta"]
    diagnosis = meta["diagnosis"]
    assert diagnosis["text"] == "0 in #ops is:dm; 1 without in:ops; 3 without is:dm; 8 in all your rooms"
    assert [(r["drop"], r["tokens"], r["count"], r["q"]) for r in diagnosis["relaxations"]] == [
        ("in", ["in:ops"], 1, "is:dm release"),
        ("is", ["is:dm"], 3, "in:ops release"),
        ("all", ["in:ops", "is:dm"], 8, "release"),
    ]
    for relaxation in diagnosis["relaxations"]:  # one click finds what was promised
        again = await rest(client, workspace, "alice", relaxation["q"])
        assert len(again["intelligent"]) == relaxation["count"]
        assert "diagnosis" not in again["meta"]


async def test_contradicting_dates_are_said_so(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    meta = (await rest(client, workspace, "alice", "release after:today before:yesterday"))["meta"]
    assert meta["diagnosis"] == {
        "text": "after:today before:yesterday leave no day to search",
        "relaxations": [],
    }


async def test_refused_tokens_come_back_as_hints(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    meta = (await rest(client, workspace, "alice", "release has:pdf"))["meta"]
    assert meta["hints"] == ["has: takes link, file, image, reaction, thread; “has:pdf” is searched as words"]


# -- scoping: a name the caller cannot search by never says whether it exists ---------------------


@pytest.mark.parametrize(
    ("line", "unknown"),
    [
        pytest.param("acquisition in:#secret", ["no room #secret that you are in"], id="a-room-of-others"),
        pytest.param("acquisition in:#nowhere", ["no room #nowhere that you are in"], id="no-such-room"),
        pytest.param(
            "acquisition -in:#secret", ["no room #secret that you are in"], id="excluding-a-room-of-others"
        ),
        pytest.param(
            "acquisition from:@dora", ["nobody @dora in the rooms you are in"], id="a-person-sharing-no-room"
        ),
        pytest.param(
            "acquisition from:@ghost", ["nobody @ghost in the rooms you are in"], id="no-such-person"
        ),
    ],
)
async def test_unknown_names_read_the_same_whether_or_not_they_exist(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, line: str, unknown: list[str]
) -> None:
    store = workspace.store
    dora = store.create_user("dora", name="Dora", password="pw-dora-123456")
    store.create_room("c", "doras-room", members=[dora.id])
    meta = (await rest(client, workspace, "alice", line))["meta"]
    assert meta["scope"]["unknown"] == unknown
    # Relaxed searches are the caller's too: the secret room's message is never counted.
    assert all(r["count"] == 0 for r in meta.get("diagnosis", {}).get("relaxations", []))
    bob = await rest(client, workspace, "bob", "acquisition in:#secret")
    assert len(bob["intelligent"]) == 1 and bob["meta"]["scope"]["unknown"] == []


@pytest.mark.parametrize(
    ("tz", "message"),
    [
        pytest.param("Mars/Olympus", "'tz' must be a time zone name", id="no-such-zone"),
        pytest.param("+25:00", "'tz' must be a time zone name", id="no-such-offset"),
        pytest.param("../../etc/passwd", "'tz' must be a time zone name", id="a-path-is-no-zone"),
    ],
)
async def test_a_bad_time_zone_is_a_clear_400(
    language_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, tz: str, message: str
) -> None:
    response = await client.get(URL, params={"q": "release", "tz": tz}, headers=workspace["alice"].headers)
    assert response.status_code == 400
    assert message in response.json()["error"]
