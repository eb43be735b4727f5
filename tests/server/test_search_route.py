"""GET /api/v1/ai.search through the real app: parameters, the one-line query, scoping, result shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.retrieval.floor import NO_FLOOR
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.settings import Settings

from ._search_support import search_stack
from .conftest import Workspace

pytestmark = pytest.mark.anyio

URL = "/api/v1/ai.search"


@pytest.fixture
def search_app(
    app: Starlette, settings: Settings, workspace: Workspace, data_dir: Path
) -> Iterator[Starlette]:
    # These tests are about parameters, scoping and the result shape, not relevance: no floor, so
    # every message holding a query word is a result (the floor has its own tests).
    service, index = search_stack(workspace.store, data_dir, floor=NO_FLOOR)
    app.state.services.search = SearchHandle.ready(settings, workspace.store, service)
    yield app
    index.close()


async def search(client: httpx.AsyncClient, workspace: Workspace, user: str, **params: Any) -> httpx.Response:
    return await client.get(URL, params=params, headers=workspace[user].headers)


def ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["_id"] for r in response.json()["intelligent"]]


async def test_result_is_rebuilt_from_the_store(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    response = await search(client, workspace, "alice", query="deploy failed")
    body = response.json()
    assert body["success"] is True
    first = body["intelligent"][0]
    message = workspace.messages["ops-3"]
    ops = workspace.rooms["ops"]
    assert {k: v for k, v in first.items() if k != "score"} == {
        "_id": message.id,
        "rid": ops.id,
        "msgId": message.id,
        "text": "deploy failed on billing-api with ERR_CONN_RESET",
        "ts": "2026-11-01T09:03:00.000Z",
        "u": {"_id": workspace["alice"].user.id, "username": "alice", "name": "Alice"},
        "room": {"_id": ops.id, "t": "c", "name": "ops", "fname": "ops"},
        "highlights": [[0, 6], [7, 13]],
        "matchReason": "both",
    }
    assert 0 < first["score"] <= 1
    scope = body["meta"].pop("scope")
    assert (scope["rooms"], scope["from"], scope["unknown"]) == (3, "2026-11-01", [])
    assert body["meta"] == {
        "intelligentSearchEnabled": True,
        "intelligentSearchConfigured": True,
        "answerGenerationConfigured": True,
        "retrieval": {
            "pipeline": "embedded",
            "searchType": "hybrid",
            "branches": {"keyword": "ok", "semantic": "ok"},
            "degraded": False,
            "notices": [],
        },
    }


@pytest.mark.parametrize(
    ("user", "params", "expected"),
    [
        pytest.param("bob", {"query": "acquisition march"}, ["secret-5"], id="member-reads-the-private-room"),
        pytest.param("carol", {"query": "acquisition march"}, [], id="banned-member-reads-nothing-there"),
        pytest.param("alice", {"query": "acquisition march"}, [], id="non-member-reads-nothing-there"),
        pytest.param("alice", {"query": "lunch"}, ["dm-6"], id="direct-message-found-by-its-member"),
        pytest.param("carol", {"query": "lunch"}, [], id="direct-message-hidden-from-others"),
        pytest.param("alice", {"query": "deploy", "roomNames": "ops"}, ["ops-3"], id="room-name-narrows"),
        pytest.param(
            "alice",
            {"query": "deploy", "roomNames": "ops, general,"},
            ["ops-3", "general-2"],
            id="comma-list-trimmed-empties-dropped",
        ),
        pytest.param(
            "bob",
            {"query": "acquisition", "roomNames": "Secret Plans"},
            ["secret-5"],
            id="room-found-by-display-name",
        ),
        pytest.param(
            "alice",
            {"query": "acquisition", "roomNames": "secret"},
            [],
            id="unreadable-room-name-never-widens-to-all-rooms",
        ),
        pytest.param(
            "alice", {"query": "deploy", "roomNames": "nowhere"}, [], id="unknown-room-name-gives-nothing"
        ),
        pytest.param(
            "alice", {"query": "deploy", "fromUsernames": "@bob"}, ["general-2"], id="author-filter"
        ),
        pytest.param(
            "alice", {"query": "deploy", "fromUsername": "ALICE"}, ["ops-3"], id="author-case-insensitive"
        ),
        pytest.param(
            "alice", {"query": "deploy", "startDate": "2026-11-01T09:02:30Z"}, ["ops-3"], id="start-date"
        ),
        pytest.param(
            "alice", {"query": "deploy", "endDate": "2026-11-01T09:02:30Z"}, ["general-2"], id="end-date"
        ),
        pytest.param(
            "alice", {"query": "deploy", "endDate": "2026-11-01"}, [], id="date-alone-means-midnight-utc"
        ),
        pytest.param(
            "alice",
            {"query": "deploy", "startDate": "", "endDate": ""},
            ["ops-3", "general-2"],
            id="empty-dates-ignored",
        ),
    ],
)
async def test_scoping_and_filters(
    search_app: Starlette,
    client: httpx.AsyncClient,
    workspace: Workspace,
    user: str,
    params: dict,
    expected: list[str],
) -> None:
    response = await search(client, workspace, user, searchType="keyword", **params)
    assert sorted(ids(response)) == sorted(workspace.messages[key].id for key in expected)


async def test_room_ids_of_other_people_are_ignored(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    secret = workspace.rooms["secret"].id
    assert ids(await search(client, workspace, "alice", query="acquisition", rids=secret)) == []
    assert ids(await search(client, workspace, "alice", query="acquisition", rid=secret)) == []
    mixed = await search(
        client,
        workspace,
        "alice",
        query="deploy",
        rids=f"{secret},{workspace.rooms['ops'].id}",
        searchType="keyword",
    )
    assert ids(mixed) == [workspace.messages["ops-3"].id]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        pytest.param("in:#ops deploy", ["ops-3"], id="room-filter-in-the-line"),
        pytest.param("deploy from:@bob", ["general-2"], id="author-filter-in-the-line"),
        pytest.param("deploy after:2026-11-02", [], id="date-filter-in-the-line"),
        pytest.param("deploy before:2026-11-02", ["ops-3", "general-2"], id="before-keeps-earlier"),
        pytest.param('in:"secret" acquisition', [], id="quoted-unreadable-room-gives-nothing"),
        pytest.param(
            "deploy after:2026-02-30", ["ops-3", "general-2"], id="invalid-date-token-stays-as-words"
        ),
    ],
)
async def test_one_line_query(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, q: str, expected: list[str]
) -> None:
    response = await search(client, workspace, "alice", q=q, searchType="keyword")
    assert sorted(ids(response)) == sorted(workspace.messages[key].id for key in expected)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param({"query": "x", "color": "red"}, "unknown parameter", id="unknown-parameter"),
        pytest.param({}, "provide exactly one of query or q", id="neither-query-nor-q"),
        pytest.param({"query": "x", "q": "y"}, "exactly one of query or q", id="both-query-and-q"),
        pytest.param({"query": ""}, "query", id="empty-query"),
        pytest.param({"query": "   "}, "non-space", id="blank-query"),
        pytest.param({"query": "x" * 501}, "query", id="query-over-500-characters"),
        pytest.param({"query": "x", "intelligentCount": "many"}, "intelligentCount", id="count-not-a-number"),
        pytest.param({"query": "x", "intelligentCount": "nan"}, "intelligentCount", id="count-nan"),
        pytest.param({"query": "x", "startDate": "last week"}, "startDate", id="unreadable-date"),
        pytest.param({"query": "x", "rids": "a" * 4097}, "rids", id="comma-list-over-4096-characters"),
        pytest.param({"query": "x", "rid": "a" * 257}, "rid", id="rid-over-256-characters"),
        pytest.param({"query": "x", "searchType": "fuzzy"}, "searchType", id="unknown-search-type"),
        pytest.param({"q": "in:#ops after:2026-11-01"}, "needs words", id="line-with-only-filters"),
        pytest.param({"q": "x", "roomNames": "ops"}, "unknown parameter", id="line-takes-rooms-in-the-line"),
    ],
)
async def test_invalid_parameters_are_400(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, params: dict, message: str
) -> None:
    response = await search(client, workspace, "alice", **params)
    assert response.status_code == 400
    assert response.json()["errorType"] == "error-invalid-params"
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param("0", 1, id="zero-becomes-one"),
        pytest.param("1.9", 1, id="floored"),
        pytest.param("-3", 1, id="negative-becomes-one"),
        pytest.param("1000", 4, id="large-clamped-to-50-then-what-exists"),
    ],
)
async def test_intelligent_count_is_floored_and_clamped(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, count: str, expected: int
) -> None:
    response = await search(
        client, workspace, "alice", query="deploy welcome lunch", intelligentCount=count, searchType="keyword"
    )
    assert len(ids(response)) == expected


@pytest.mark.parametrize(
    ("search_type", "branches", "reasons"),
    [
        pytest.param("keyword", {"keyword": "ok", "semantic": "off"}, {"keyword"}, id="keyword-only"),
        pytest.param("semantic", {"keyword": "off", "semantic": "ok"}, {"semantic"}, id="semantic-only"),
    ],
)
async def test_search_type_picks_the_branches(
    search_app: Starlette,
    client: httpx.AsyncClient,
    workspace: Workspace,
    search_type: str,
    branches: dict,
    reasons: set[str],
) -> None:
    response = await search(client, workspace, "alice", query="deploy", searchType=search_type)
    body = response.json()
    assert body["meta"]["retrieval"]["branches"] == branches
    assert {r["matchReason"] for r in body["intelligent"]} == reasons


async def test_without_an_embedder_search_is_keyword_only_and_says_so(
    app: Starlette, settings: Settings, client: httpx.AsyncClient, workspace: Workspace, data_dir: Path
) -> None:
    service, index = search_stack(workspace.store, data_dir, embedder=False)
    app.state.services.search = SearchHandle.ready(settings, workspace.store, service)
    try:
        body = (await search(client, workspace, "alice", query="deploy")).json()
    finally:
        index.close()
    assert sorted(r["_id"] for r in body["intelligent"]) == sorted(
        workspace.messages[key].id for key in ("ops-3", "general-2")
    )
    retrieval = body["meta"]["retrieval"]
    assert retrieval["branches"] == {"keyword": "ok", "semantic": "unavailable"}
    assert retrieval["degraded"] is False
    assert "keywords only" in retrieval["notices"][0]


async def test_search_needs_a_login(search_app: Starlette, client: httpx.AsyncClient) -> None:
    response = await client.get(URL, params={"query": "deploy"})
    assert response.status_code == 401


async def test_highlights_point_into_the_stored_text(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    general = workspace.rooms["general"].id
    workspace.store.post_message(general, workspace["bob"].user.id, "Réunion: le déploiement 🚀 est fini")
    body = (await search(client, workspace, "alice", query="deploiement", searchType="keyword")).json()
    result = body["intelligent"][0]
    assert [result["text"][start:end] for start, end in result["highlights"]] == ["déploiement"]


async def test_a_reply_says_which_thread_it_belongs_to(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace
) -> None:
    root = workspace.messages["ops-3"]  # "deploy failed on billing-api with ERR_CONN_RESET"
    reply = workspace.store.post_message(
        root.room_id, workspace["carol"].user.id, "the quokka canary rollback finished", tmid=root.id
    )
    body = (await search(client, workspace, "alice", q="quokka canary", searchType="keyword")).json()
    (found,) = body["intelligent"]
    assert (found["_id"], found["tmid"]) == (reply.id, root.id)
    outside = (await search(client, workspace, "alice", q="ERR_CONN_RESET", searchType="keyword")).json()[
        "intelligent"
    ]
    assert [r["_id"] for r in outside] == [root.id] and "tmid" not in outside[0]
