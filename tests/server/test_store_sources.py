"""The store's side of mirrors: external ids, room updates under the name rules, member sets that keep
bans, messages by origin, source links, and sync state, on SQLite and on PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ai_search_server.store import open_store
from ai_search_server.store.base import AlreadyTaken, InvalidValue, RecordNotFound, Store
from ai_search_server.store.records import ExternalLink, ImportRow
from ai_search_server.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate
from ai_search_server.store.sources import MAX_SYNC_STATE_BYTES
from tests._postgres import PostgresCluster

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
    store.link_external("slack:T1", "user", "U01", alice.id, how="created")
    store.link_external("slack:T1", "room", "C01", ops.id, how="created")
    store.link_external("slack:T1", "room", "C01", ops.id, how="mapped")  # again: one mapping, how replaced
    assert store.external_ids("slack:T1", "user") == {"U01": alice.id}
    assert store.external_ids("slack:T1", "room") == {"C01": ops.id}
    assert store.external_links("slack:T1", "user") == {"U01": ExternalLink(alice.id, "created")}
    assert store.external_links("slack:T1", "room") == {"C01": ExternalLink(ops.id, "mapped")}
    assert store.external_ids("zulip:acme", "room") == {}
    with pytest.raises(RecordNotFound):
        store.link_external("slack:T1", "room", "C02", "no-such-room", how="created")
    with pytest.raises(InvalidValue):
        store.link_external("slack:T1", "team", "X", ops.id, how="created")  # type: ignore[arg-type]
    with pytest.raises(InvalidValue):
        store.link_external("slack:T1", "room", "C01", ops.id, how="found")  # type: ignore[arg-type]
    assert store.external_links("slack:T1", "room") == {"C01": ExternalLink(ops.id, "mapped")}


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


def test_adding_members_takes_nobody_out_and_keeps_bans(store: Store) -> None:
    """What a source may do to a room it did not create: subscribe its people, never unsubscribe."""
    a, b, c = (store.create_user(n) for n in ("alice", "bob", "carol"))
    ops = store.create_room("c", "ops", members=[a.id])
    store.set_banned(c.id, ops.id, True)
    assert store.add_members(ops.id, [b.id, c.id]) == 1
    assert sorted(store.members_of(ops.id)) == sorted([a.id, b.id])  # alice stays, carol stays banned
    assert store.get_subscription(c.id, ops.id).banned  # type: ignore[union-attr]
    assert store.add_members(ops.id, [b.id]) == 0
    with pytest.raises(RecordNotFound):
        store.add_members(ops.id, ["nobody"])
    with pytest.raises(RecordNotFound):
        store.add_members("no-such-room", [a.id])


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
        store.link_external("slack:T1", "room", "C1", "r1", how="created")
        assert store.external_ids("slack:T1", "room") == {"C1": "r1"}
        assert store.set_source_urls({"m1": "https://acme.slack.com/archives/C1/p1"}) == 1
    conn = sqlite3.connect(data_dir / "workspace.db")
    try:
        # Then every later step too (8: the OAuth tables).
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()


# Links made before migration 10, by which users and rooms they name: the mirror makes users without
# a password and never as admins, and rooms without a creator; one user or room is made by at most
# one source. (origin, kind, external id, local id, how the migration tells it).
_LEGACY_LINKS = [
    ("slack:T1", "user", "U1", "u-made", "created"),  # no password, the user role: made by the import
    ("slack:T1", "user", "U2", "u-local", "adopted"),  # a password: made here, matched by username
    ("slack:T1", "user", "U3", "u-admin", "adopted"),  # an admin: never made by an import
    ("slack:T1", "user", "U4", "u-shared", "adopted"),  # two sources link it: at most one made it
    ("slack:T2", "user", "U9", "u-shared", "adopted"),
    ("slack:T1", "room", "C1", "r-made", "created"),  # no creator: made by the import
    ("slack:T1", "room", "C2", "r-local", "adopted"),  # a creator: made here, matched by name
    ("slack:T1", "room", "C3", "r-shared", "adopted"),  # two sources link it
    ("slack:T2", "room", "C9", "r-shared", "adopted"),
]


@pytest.fixture
def _empty_database_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    with pg_cluster.empty_database() as url:
        yield url


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_links_from_before_step_10_are_created_only_where_the_workspace_shows_it(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Step 10 records how each link came to be; older links are told apart by what the workspace
    shows, and whatever is not clearly the source's own is "adopted" (never changed by it)."""
    users = [("u-made", None, "user"), ("u-local", "x", "user"), ("u-admin", None, "admin"), ("u-shared", None, "user")]
    rooms = [("r-made", None), ("r-local", "u-local"), ("r-shared", None)]
    if kind == "sqlite":
        data_dir = tmp_path / "data"
        data_dir.mkdir()
        conn = sqlite3.connect(data_dir / "workspace.db", isolation_level=None)
        try:
            assert migrate(conn, migrations=MIGRATIONS[:9]) == 9
            for user_id, password, role in users:
                conn.execute(
                    "INSERT INTO users (id, username, name, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?, 0)",
                    (user_id, user_id, user_id, password, f'["{role}"]'),
                )
            for room_id, creator in rooms:
                conn.execute(
                    "INSERT INTO rooms (id, t, name, fname, creator_id, created_at) VALUES (?, 'c', ?, ?, ?, 0)",
                    (room_id, room_id, room_id, creator),
                )
            conn.executemany(
                "INSERT INTO external_ids (origin, kind, external_id, local_id) VALUES (?, ?, ?, ?)",
                [link[:4] for link in _LEGACY_LINKS],
            )
        finally:
            conn.close()
        opened = open_store(data_dir)
    else:
        import psycopg

        from ai_search_server.store import pg_schema

        url = request.getfixturevalue("_empty_database_url")
        with psycopg.connect(url, autocommit=True) as pg:
            assert pg_schema.migrate(pg, migrations=pg_schema.MIGRATIONS[:9]) == 9
            for user_id, password, role in users:
                pg.execute(
                    "INSERT INTO users (id, username, name, password_hash, roles, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, 0)",
                    (user_id, user_id, user_id, password, [role]),
                )
            for room_id, creator in rooms:
                pg.execute(
                    "INSERT INTO rooms (id, t, name, fname, creator_id, created_at) VALUES (%s, 'c', %s, %s, %s, 0)",
                    (room_id, room_id, room_id, creator),
                )
            for link in _LEGACY_LINKS:
                pg.execute(
                    "INSERT INTO external_ids (origin, kind, external_id, local_id) VALUES (%s, %s, %s, %s)",
                    link[:4],
                )
        opened = open_store(tmp_path / "data", database_url=url)
    with opened as store:
        found = {
            (origin, kind_, external_id): link.how
            for origin in ("slack:T1", "slack:T2")
            for kind_ in ("user", "room")
            for external_id, link in store.external_links(origin, kind_).items()  # type: ignore[arg-type]
        }
    assert found == {(origin, k, external_id): how for origin, k, external_id, _local, how in _LEGACY_LINKS}
