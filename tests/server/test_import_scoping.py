"""Scoping over imported workspaces, through the real app: for every person of each fixture export and
every message, a search for that message's words returns it to the room's members and, to anyone
else, nothing from that room (private channels and DMs included), exactly as the source's
memberships say. After a newer export takes someone out of a room, that room stops answering them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.imports.run import import_path
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.retrieval.wiring import SEARCH_EXTRA, SearchHandle
from ai_search_server.settings import Settings
from ai_search_server.store import SQLiteStore, open_store
from ai_search_server.store.records import Message, User

from ._exports import FIXTURES, copy_fixture, edit_json, read_json
from ._search_support import search_stack
from .conftest import BASE_URL

pytestmark = pytest.mark.anyio

EXPORTS = {
    "slack": FIXTURES / "slack",
    "mattermost": FIXTURES / "mattermost" / "export.jsonl",
    "zulip": FIXTURES / "zulip",
}
# Messages searched per export: every message of the small fixtures (the Zulip topic of 150 updates
# is sampled: its replies share one room, so a handful say as much as all of them).
MAX_MESSAGES_PER_ROOM = 8


@pytest.fixture(params=sorted(EXPORTS))
def source(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with open_store(tmp_path / "data") as opened:
        yield opened


async def _client(settings: Settings, store: SQLiteStore, data_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
    app: Starlette = create_app(settings, store, limiter=RateLimiter("memory://"))
    service, index = search_stack(store, data_dir)
    app.state.services.extras[SEARCH_EXTRA] = SearchHandle.ready(settings, store, service)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield client
    finally:
        index.close()


def _people(store: SQLiteStore) -> dict[str, tuple[User, dict[str, str]]]:
    """Every active imported person with a fresh session: username -> (user, headers)."""
    people = {}
    for batch in store.iter_messages():
        for message in batch:
            user = store.get_user(message.user_id)
            if user is not None and user.active and user.username not in people:
                _token, plain = store.create_token(user.id, "session", label="login")
                people[user.username] = (user, {"X-User-Id": user.id, "X-Auth-Token": plain})
    return people


def _sample(store: SQLiteStore) -> list[Message]:
    per_room: dict[str, list[Message]] = {}
    for batch in store.iter_messages():
        for message in batch:
            per_room.setdefault(message.room_id, []).append(message)
    return [m for messages in per_room.values() for m in messages[:MAX_MESSAGES_PER_ROOM]]


async def _check(client: httpx.AsyncClient, store: SQLiteStore) -> int:
    people = _people(store)
    checked = 0
    for message in _sample(store):
        members = set(store.members_of(message.room_id))
        for _username, (user, headers) in people.items():
            response = await client.get(
                "/api/v1/ai.search",
                params={"query": message.text[:200], "searchType": "keyword"},
                headers=headers,
            )
            assert response.status_code == 200, response.text
            results = response.json()["intelligent"]
            readable = store.readable_room_ids(user.id)
            assert all(r["rid"] in readable for r in results), "a result from a room the person may not read"
            found = {r["_id"] for r in results}
            if user.id in members:
                assert message.id in found, (
                    f"{user.username} is a member and did not find {message.text[:40]!r}"
                )
            else:
                assert not any(r["rid"] == message.room_id for r in results), (
                    f"{user.username} is no member of the room of {message.text[:40]!r} and found it"
                )
            checked += 1
    return checked


async def test_each_export_is_scoped_by_the_sources_memberships(
    source: str, store: SQLiteStore, settings: Settings, tmp_path: Path
) -> None:
    report = import_path(store, EXPORTS[source], progress=False)
    assert report.imported > 0
    rooms = store.get_rooms({m.room_id for batch in store.iter_messages() for m in batch}).values()
    assert {room.type for room in rooms} == {"c", "p", "d"}, "the fixture covers every kind of room"
    async for client in _client(settings, store, tmp_path / "data"):
        assert await _check(client, store) > 40


async def test_a_person_who_left_a_private_channel_stops_finding_it(
    store: SQLiteStore, settings: Settings, tmp_path: Path
) -> None:
    folder = copy_fixture("slack", tmp_path / "src")
    import_path(store, folder, progress=False)
    groups = read_json(folder / "groups.json")
    groups[0]["members"] = ["U02BOB"]  # carol left #secret
    edit_json(folder / "groups.json", groups)
    import_path(store, folder, progress=False)
    carol, secret = store.get_user_by_username("carol"), store.get_room_by_name("secret")
    assert carol is not None and secret is not None
    _token, plain = store.create_token(carol.id, "session", label="login")
    async for client in _client(settings, store, tmp_path / "data"):
        response = await client.get(
            "/api/v1/ai.search",
            params={"query": "acquisition closes in march"},
            headers={"X-User-Id": carol.id, "X-Auth-Token": plain},
        )
        assert response.status_code == 200
        assert not any(r["rid"] == secret.id for r in response.json()["intelligent"])
        assert await _check(client, store) > 40
