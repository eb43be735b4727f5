"""What the PostgreSQL store does beyond the behaviour both stores share (test_store.py holds that):
its migrations, several processes on one database, its change log, its errors, choosing it, and the
backup that docs/deploy.md describes."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from ai_search_server.cli import main as cli_main
from ai_search_server.settings import SettingsError, load_settings
from ai_search_server.store import StorageFailure, open_store
from ai_search_server.store.pg_schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    answers_sql,
    message_change_log_sql,
    migrate,
)
from ai_search_server.store.postgres import PostgresStore
from ai_search_server.store.records import AnswerSourceRecord, MessageEvent, StoredAnswer
from ai_search_server.store.schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from tests._postgres import PostgresCluster, find_pg_bin

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def url(pg_cluster: PostgresCluster) -> Iterator[str]:
    with pg_cluster.fresh_database() as fresh:
        yield fresh


@pytest.fixture
def empty_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    """A database with no schema at all (not copied from the migrated template)."""
    with pg_cluster.empty_database() as fresh:
        yield fresh


def _sql(url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


# -- migrations -----------------------------------------------------------------------------------


def test_the_steps_are_numbered_without_gaps() -> None:
    assert [step.version for step in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))


def test_postgresql_has_every_step_sqlite_has() -> None:
    assert SCHEMA_VERSION == SQLITE_SCHEMA_VERSION


def test_an_empty_database_is_migrated_to_the_latest_schema(empty_url: str) -> None:
    with PostgresStore(empty_url) as store:
        assert store.count_messages() == 0
    assert _sql(empty_url, "SELECT version FROM ai_search_schema") == [(SCHEMA_VERSION,)]


def test_a_version_1_database_keeps_its_data_when_migrated_forward(empty_url: str) -> None:
    with psycopg.connect(empty_url, autocommit=True) as conn:
        assert migrate(conn, migrations=MIGRATIONS[:1]) == 1
        conn.execute(
            "INSERT INTO users (id, username, name, roles, created_at) VALUES ('u1', 'Old', 'Old', '{user}', 0)"
        )
    with PostgresStore(empty_url) as store:
        user = store.get_user_by_username("old")
        assert user is not None and user.username == "Old"
        assert "pin-message" in store.permissions_of(user)  # steps 2 and 4 seeded the defaults
    assert _sql(empty_url, "SELECT version FROM ai_search_schema") == [(SCHEMA_VERSION,)]


def test_a_database_from_a_newer_version_is_refused(url: str) -> None:
    _sql(url, "UPDATE ai_search_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StorageFailure, match="newer than this ai-search"):
        PostgresStore(url)


def test_proxies_starting_at_once_migrate_one_at_a_time(empty_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            PostgresStore(empty_url, pool_size=1).close()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _sql(empty_url, "SELECT version FROM ai_search_schema") == [(SCHEMA_VERSION,)]


# -- several processes on one database ------------------------------------------------------------


def test_a_reader_following_the_change_log_misses_no_write_of_concurrent_writers(url: str) -> None:
    """Two stores (two proxies' pools) write at once; a third follows the change log the way the
    search index does. Commit-ordered numbers mean a number seen once is never followed by a smaller
    one committing later, so the reader ends with every message."""
    # Each write then takes a while between taking its change number and committing, as a busy
    # server's would: without the log's ordering lock, a later number would often commit first.
    _sql(url, """CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(0.002); RETURN NULL; END $$""")
    _sql(url, "CREATE TRIGGER zz_slow_commit AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION slow_commit()")
    writers = [PostgresStore(url, pool_size=2) for _ in range(2)]
    reader = PostgresStore(url, pool_size=1)
    alice = writers[0].create_user("alice")
    room = writers[0].create_room("c", "ops", creator_id=alice.id)
    posted: list[str] = []
    lock = threading.Lock()

    def write(store: PostgresStore, n: int) -> None:
        for i in range(40):
            message = store.post_message(room.id, alice.id, f"writer {n} message {i}")
            with lock:
                posted.append(message.id)

    threads = [threading.Thread(target=write, args=(store, n)) for n, store in enumerate(writers)]
    for thread in threads:
        thread.start()
    seen: set[str] = set()
    last = 0
    while any(thread.is_alive() for thread in threads):
        page = reader.message_changes_since(last, limit=7)
        seen.update(page.message_ids)
        last = page.last
    for thread in threads:
        thread.join()
    while True:
        page = reader.message_changes_since(last, limit=50)
        seen.update(page.message_ids)
        if page.last == last:
            break
        last = page.last
    assert seen == set(posted) and len(posted) == 80
    for store in (*writers, reader):
        store.close()


def test_a_write_through_one_store_is_read_through_another(url: str) -> None:
    with PostgresStore(url) as one, PostgresStore(url) as other:
        alice = one.create_user("alice", password="pw-alice-123")
        room = one.create_room("c", "ops", creator_id=alice.id)
        message = one.post_message(room.id, alice.id, "deploy finished", ts=T0)
        assert other.get_message(message.id) == message
        assert other.verify_password("alice", "pw-alice-123") == alice
        assert other.latest_message_change() == one.latest_message_change() > 0


def test_listeners_hear_writes_after_they_are_committed(url: str) -> None:
    with PostgresStore(url) as store:
        alice = store.create_user("alice")
        room = store.create_room("c", "ops", creator_id=alice.id)
        seen: list[tuple[str, bool]] = []

        def listener(events: object) -> None:
            for event in events:  # type: ignore[attr-defined]
                assert isinstance(event, MessageEvent)
                visible = _sql(url, "SELECT 1 FROM messages WHERE id = %s", (event.message.id,))
                seen.append((event.kind, bool(visible)))

        store.add_message_listener(listener)
        message = store.post_message(room.id, alice.id, "one")
        store.delete_message(message.id)
        assert seen == [("posted", True), ("deleted", False)]


# -- the change log and answers keep themselves small ---------------------------------------------


def test_the_change_log_prunes_itself_keeping_the_newest(empty_url: str) -> None:
    with psycopg.connect(empty_url, autocommit=True) as conn:
        conn.execute('CREATE TABLE messages (id text COLLATE "C" PRIMARY KEY)')
        for statement in message_change_log_sql(kept=10, every=5):
            conn.execute(statement)
        for n in range(23):
            conn.execute("INSERT INTO messages (id) VALUES (%s)", (f"m{n}",))
        kept = [row[0] for row in conn.execute("SELECT change FROM message_changes ORDER BY change")]
    # Pruned at change 20 (every 5th): changes 11 to 23 remain.
    assert kept == list(range(11, 24))


def test_old_answers_nobody_kept_are_pruned(empty_url: str) -> None:
    day_ms = 24 * 3600 * 1000
    with psycopg.connect(empty_url, autocommit=True) as conn:
        conn.execute('CREATE TABLE users (id text COLLATE "C" PRIMARY KEY)')
        conn.execute("INSERT INTO users (id) VALUES ('u')")
        for statement in answers_sql(retention_days=1, every=5):
            conn.execute(statement)
        for n in range(5):
            conn.execute(
                "INSERT INTO answers (id, user_id, query, answer, created_at, shared_at)"
                " VALUES (%s, 'u', 'q', 'a', %s, %s)",
                (f"a{n}", 0 if n < 3 else 3 * day_ms, day_ms if n == 1 else None),
            )
        kept = [row[0] for row in conn.execute("SELECT id FROM answers ORDER BY id")]
    assert kept == ["a1", "a3", "a4"]  # a1 was shared; a0 and a2 were old and nobody kept them


def test_a_stored_answer_round_trips(url: str) -> None:
    with PostgresStore(url) as store:
        alice = store.create_user("alice")
        answer = StoredAnswer(
            "ans1", alice.id, "why did the deploy fail?", "Because [1].",
            (AnswerSourceRecord(1, "m1", "r1"),), {"model": "m"}, T0, None, None,
        )
        store.save_answer(answer)
        assert store.get_answer("ans1") == answer
        assert store.share_answer("ans1").shared_at is not None


# -- errors ---------------------------------------------------------------------------------------


def test_an_unreachable_server_fails_clearly_without_its_password(tmp_path: Path) -> None:
    missing = f"postgresql://ai:hunter2secret@/workspace?host={tmp_path}"
    with pytest.raises(StorageFailure) as caught:
        PostgresStore(missing, connect_timeout_s=0.5)
    text = str(caught.value)
    assert "cannot connect to the workspace database workspace" in text
    assert "hunter2secret" not in text


def test_a_closed_store_refuses_work(url: str) -> None:
    store = PostgresStore(url)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StorageFailure, match="closed"):
        store.count_messages()


def test_a_lost_server_connection_is_a_storage_failure_and_the_pool_recovers(
    url: str, pg_cluster: PostgresCluster
) -> None:
    with PostgresStore(url, pool_size=1) as store:
        store.create_user("alice")
        pg_cluster.cut_connections(url)
        with pytest.raises(StorageFailure, match="failed"):
            store.get_user_by_username("alice")
        # The pool replaces the broken connection: the next call works again.
        assert store.get_user_by_username("alice") is not None


# -- choosing it ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("mysql://db/workspace", id="another-engine"),
        pytest.param("sqlite:///tmp/x.db", id="a-sqlite-url"),
        pytest.param("db.internal/workspace", id="no-scheme"),
    ],
)
def test_a_database_url_must_be_postgresql(value: str) -> None:
    with pytest.raises(SettingsError, match="database_url"):
        load_settings(environ={"AI_SEARCH_DATABASE_URL": value})


def test_the_database_url_is_a_secret_never_shown() -> None:
    settings = load_settings(environ={"AI_SEARCH_DATABASE_URL": "postgresql://ai:pw@db/workspace"})
    assert settings.public_view()["database_url"] is True


def test_open_store_with_a_database_url_opens_postgresql_and_keeps_files_in_the_data_dir(
    url: str, tmp_path: Path
) -> None:
    with open_store(tmp_path / "data", database_url=url) as store:  # type: ignore[attr-defined]
        assert isinstance(store, PostgresStore)
        assert store.data_dir == tmp_path / "data"
    assert not (tmp_path / "data" / "workspace.db").exists()


def test_the_command_line_uses_database(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    assert cli_main(["users", "create", "alice", "--password", "pw-alice-123", "--data", data, "--database", url]) == 0
    with PostgresStore(url) as store:
        assert store.verify_password("alice", "pw-alice-123") is not None
    assert cli_main(["users", "create", "bob", "--password", "pw-bob-1234", "--data", data,
                     "--database", f"postgresql://ai@/nowhere?host={tmp_path}&connect_timeout=1"]) == 2
    assert "cannot connect to the workspace database nowhere" in capsys.readouterr().err


# -- backups (docs/deploy.md) ---------------------------------------------------------------------


def test_a_pg_dump_backup_restores_into_a_working_workspace(
    url: str, empty_url: str, tmp_path: Path
) -> None:
    pg_bin = find_pg_bin()
    assert pg_bin is not None
    with PostgresStore(url) as store:
        alice = store.create_user("alice", password="pw-alice-123")
        room = store.create_room("c", "ops", creator_id=alice.id)
        posted = store.post_message(room.id, alice.id, "deploy finished", ts=T0)
    dump = tmp_path / "workspace.dump"
    subprocess.run([str(pg_bin / "pg_dump"), "--format=custom", f"--file={dump}", url], check=True, timeout=120)
    subprocess.run([str(pg_bin / "pg_restore"), "--no-owner", f"--dbname={empty_url}", str(dump)], check=True, timeout=120)
    with PostgresStore(empty_url) as restored:
        assert restored.get_message(posted.id) == posted
        assert restored.verify_password("alice", "pw-alice-123") is not None
        later = restored.post_message(room.id, alice.id, "after the restore", ts=T0 + timedelta(minutes=1))
        assert restored.message_changes_since(0, limit=10).message_ids[-1] == later.id
