"""Scoping over imported workspaces, through the real app: for every person of each fixture export and
every message, a search for that message's words returns it to the room's members and, to anyone
else, nothing from that room (private channels and DMs included), exactly as the source's
memberships say. After a newer export takes someone out of a room, that room stops answering them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_search_server.import_dispatch import import_path
from ai_search_server.settings import Settings
from ai_search_server.store import SQLiteStore

from ._exports import FIXTURES, copy_fixture, edit_json, read_json
from ._scoping import check_scoping, scoped_client

pytestmark = pytest.mark.anyio

EXPORTS = {
    "slack": FIXTURES / "slack",
    "mattermost": FIXTURES / "mattermost" / "export.jsonl",
    "zulip": FIXTURES / "zulip",
}


@pytest.fixture(params=sorted(EXPORTS))
def source(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_each_export_is_scoped_by_the_sources_memberships(
    source: str, store: SQLiteStore, settings: Settings, tmp_path: Path
) -> None:
    report = import_path(store, EXPORTS[source], progress=False)
    assert report.imported > 0
    rooms = store.get_rooms({m.room_id for batch in store.iter_messages() for m in batch}).values()
    assert {room.type for room in rooms} == {"c", "p", "d"}, "the fixture covers every kind of room"
    async for client in scoped_client(settings, store, tmp_path / "data"):
        assert await check_scoping(client, store) > 40


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
    async for client in scoped_client(settings, store, tmp_path / "data"):
        response = await client.get(
            "/api/v1/ai.search",
            params={"query": "acquisition closes in march"},
            headers={"X-User-Id": carol.id, "X-Auth-Token": plain},
        )
        assert response.status_code == 200
        assert not any(r["rid"] == secret.id for r in response.json()["intelligent"])
        assert await check_scoping(client, store) > 40


async def test_results_of_an_imported_message_link_back_to_the_source(
    store: SQLiteStore, settings: Settings, tmp_path: Path
) -> None:
    import_path(store, EXPORTS["slack"], progress=False, source_url="https://acme.slack.com")
    alice = store.get_user_by_username("alice")
    assert alice is not None
    _token, plain = store.create_token(alice.id, "session", label="login")
    async for client in scoped_client(settings, store, tmp_path / "data"):
        response = await client.get(
            "/api/v1/ai.search",
            params={"query": "onboarding doc", "searchType": "keyword"},
            headers={"X-User-Id": alice.id, "X-Auth-Token": plain},
        )
        [first, *_] = response.json()["intelligent"]
        assert first["sourceUrl"] == "https://acme.slack.com/archives/C01GENERAL/p1793610060000000"
