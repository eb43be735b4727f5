"""The store's side of mirrors: external ids, room updates under the name rules, member sets that keep
bans, messages by origin, source links, and sync state, on SQLite and on PostgreSQL."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ai_search_server.store import open_store
from ai_search_server.store.base import AlreadyTaken, InvalidValue, RecordNotFound, Store
from ai_search_server.store.records import ImportRow
from ai_search_server.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate
from ai_search_server.store.sources import MAX_SYNC_STATE_BYTES

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(each_store: Store) -> Store:
    """Each test runs on SQLite and on PostgreSQL."""
    return each_store


def row(n: int, *, origin: str | None = "slack:T1", room: str = "ops", url: str | None = None) -> ImportRow:
    return ImportRow(
        room, "c", "alice", T0 + timedelta(minutes=n), f"message {n}", f"m{n}", origin=origin, source_url=url
    )


def test_external_ids_map_to_users_and_rooms_that_exist(store: Store) -> None:
    alice = store.create_user("alice")
    ops = store.create_room("c", "ops")
    store.link_external("slack:T1", "user", "U01", alice.id)
    store.link_external("slack:T1", "room", "C01", ops.id)
    store.link_external("slack:T1", "room", "C01", ops.id)  # again: one mapping
    assert store.external_ids("slack:T1", "user") == {"U01": alice.id}
    assert store.external_ids("slack:T1", "room") == {"C01": ops.id}
    assert store.external_ids("zulip:acme", "room") == {}
    with pytest.raises(RecordNotFound):
        store.link_external("slack:T1", "room", "C02", "no-such-room")
    with pytest.raises(InvalidValue):
        store.link_external("slack:T1", "team", "X", ops.id)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("existing", "new_name", "ok"),
    [
        pytest.param("general", "ops-renamed", True, id="a-free-name"),
        pytest.param("general", "OPS", True, id="its-own-name-in-another-case"),
        pytest.param("general", "general", False, id="another-rooms-name"),
        pytest.param("paypal", "pаypal", False, id="a-look-alike-of-another-room"),
        pytest.param("alice__bob", "alice__bob", False, id="a-direct-rooms-name"),
    ],
)
def test_a_rename_obeys_the_rules_a_new_room_does(
    store: Store, existing: str, new_name: str, ok: bool
) -> None:
    store.create_room("d" if "__" in existing else "c", existing)
    ops = store.create_room("c", "ops")
    if ok:
        renamed = store.update_room(ops.id, name=new_name, topic="deploys")
        assert (renamed.name, renamed.topic) == (new_name, "deploys")
        assert store.get_room_by_name(new_name) is not None
    else:
        with pytest.raises(AlreadyTaken):
            store.update_room(ops.id, name=new_name)
        assert store.get_room(ops.id).name == "ops"  # type: ignore[union-attr]


def test_a_renamed_rooms_old_name_is_free_and_its_new_one_taken(store: Store) -> None:
    ops = store.create_room("c", "ops")
    store.update_room(ops.id, name="incidents")
    assert store.create_room("c", "ops").name == "ops"
    with pytest.raises(AlreadyTaken):
        store.create_room("c", "Incidents")


def test_member_sets_add_and_remove_and_keep_bans(store: Store) -> None:
    a, b, c = (store.create_user(n) for n in ("alice", "bob", "carol"))
    ops = store.create_room("c", "ops", members=[a.id, b.id])
    store.set_banned(c.id, ops.id, True)
    assert store.set_members(ops.id, [b.id, c.id]) == (0, 1)
    assert store.members_of(ops.id) == [b.id]  # carol stays banned, alice left
    assert store.get_subscription(c.id, ops.id).banned  # type: ignore[union-attr]
    assert store.set_members(ops.id, [b.id, c.id]) == (0, 0)
    with pytest.raises(RecordNotFound):
        store.set_members(ops.id, ["nobody"])


def test_messages_by_origin_in_a_window(store: Store) -> None:
    store.import_messages([row(1), row(2), row(3, origin=None), row(4, origin="zulip:acme")])
    ops = store.get_room_by_name("ops")
    assert ops is not None
    window = {"start": T0, "end": T0 + timedelta(minutes=3)}
    assert store.origin_message_ids(ops.id, "slack:T1", **window) == ["m1", "m2"]
    assert store.origin_message_ids(ops.id, "zulip:acme", **window) == []


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("javascript:alert(1)", id="script"),
        pytest.param("https://acme.slack.com/a b", id="space"),
        pytest.param("ftp://files.test/x", id="not-http"),
        pytest.param("https://x.test/" + "a" * 2000, id="too-long"),
    ],
)
def test_a_source_link_is_an_http_url(store: Store, url: str) -> None:
    result = store.import_messages([row(1, url=url)])
    assert result.imported == 0 and "source link" in result.rejected[0][1]
    store.import_messages([row(2, url="https://acme.slack.com/archives/C1/p1")])
    with pytest.raises(InvalidValue):
        store.set_source_urls({"m2": url})


def test_source_links_are_kept_and_replaced(store: Store) -> None:
    store.import_messages([row(1, url="https://app.slack.com/client/T1/C1")])
    assert store.get_message("m1").source_url == "https://app.slack.com/client/T1/C1"  # type: ignore[union-attr]
    assert store.set_source_urls({"m1": "https://acme.slack.com/archives/C1/p1"}) == 1
    assert store.set_source_urls({"m1": "https://acme.slack.com/archives/C1/p1"}) == 0
    assert store.get_message("m1").source_url == "https://acme.slack.com/archives/C1/p1"  # type: ignore[union-attr]


def test_sync_state_round_trips_and_is_capped(store: Store) -> None:
    assert store.get_sync_state("rocketchat:https://chat.test#room:r1") is None
    store.set_sync_state("rocketchat:https://chat.test#room:r1", {"updated": "1793610000000"})
    assert store.get_sync_state("rocketchat:https://chat.test#room:r1") == {"updated": "1793610000000"}
    with pytest.raises(InvalidValue):
        store.set_sync_state("rocketchat:x", {"blob": "x" * MAX_SYNC_STATE_BYTES})


def test_a_version_6_file_keeps_its_messages_and_answers_when_migrated_to_7(tmp_path: Path) -> None:
    """Migration 7 (origins, source links, external ids, sync state) comes after main's 5 (room name
    keys) and 6 (stored answers): a file at 6 keeps everything and gains the mirror's columns."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    conn = sqlite3.connect(data_dir / "workspace.db", isolation_level=None)
    try:
        assert [m.version for m in MIGRATIONS][5:7] == [6, 7]
        assert migrate(conn, migrations=MIGRATIONS[:6]) == 6
        conn.execute(
            "INSERT INTO users (id, username, name, roles, created_at) VALUES ('u1', 'old', 'Old', '[\"user\"]', 0)"
        )
        conn.execute("INSERT INTO rooms (id, t, name, fname, created_at) VALUES ('r1', 'c', 'ops', 'ops', 0)")
        conn.execute("INSERT INTO messages (id, room_id, user_id, ts, text) VALUES ('m1', 'r1', 'u1', 0, 'hello')")
        conn.execute(
            "INSERT INTO answers (id, user_id, query, answer, created_at) VALUES ('a1', 'u1', 'q', 'an answer', 0)"
        )
        assert conn.execute("PRAGMA table_info(messages)").fetchall()[-1][1] != "source_url"
    finally:
        conn.close()
    with open_store(data_dir) as store:
        message = store.get_message("m1")
        assert message is not None and message.text == "hello" and message.source_url is None
        answer = store.get_answer("a1")
        assert answer is not None and answer.answer == "an answer"
        store.link_external("slack:T1", "room", "C1", "r1")
        assert store.external_ids("slack:T1", "room") == {"C1": "r1"}
        assert store.set_source_urls({"m1": "https://acme.slack.com/archives/C1/p1"}) == 1
    conn = sqlite3.connect(data_dir / "workspace.db")
    try:
        # Then every later step too (8: the OAuth tables).
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()
