"""Scoping checked through the real app over a workspace that came from elsewhere (an export, a sync).

``check_scoping`` searches, as every active person of the store, for the words of messages of every
room, and asserts that members find the message and nobody else gets anything from that room.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.settings import Settings
from ai_search_server.store import SQLiteStore
from ai_search_server.store.records import Message, User

from ._search_support import search_stack
from .conftest import BASE_URL

__all__ = ["check_scoping", "scoped_client"]

# Messages searched per room: every message of the small fixtures (a topic of 150 updates is sampled:
# its replies share one room, so a handful say as much as all of them).
MAX_MESSAGES_PER_ROOM = 8


async def scoped_client(
    settings: Settings, store: SQLiteStore, data_dir: Path
) -> AsyncIterator[httpx.AsyncClient]:
    app: Starlette = create_app(settings, store, limiter=RateLimiter("memory://"))
    service, index = search_stack(store, data_dir)
    app.state.services.search = SearchHandle.ready(settings, store, service)
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


async def check_scoping(client: httpx.AsyncClient, store: SQLiteStore) -> int:
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
