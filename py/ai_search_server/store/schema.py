"""The SQLite schema of the workspace: tables, the values they accept, and migrations by version.

The file's ``PRAGMA user_version`` records how many steps of ``MIGRATIONS`` it has been through; opening
an older file runs the missing steps, each in its own ``BEGIN IMMEDIATE`` transaction together with the
version bump, so a crash mid-migration leaves the file at the previous version. A file written by a newer
ai-search (a version above ``SCHEMA_VERSION``) is refused rather than guessed at.

Times are stored as integer milliseconds since the Unix epoch, UTC: compact, fast to compare and index,
and exact to the millisecond the records expose. Case-insensitive names use SQLite's ``NOCASE``
collation, which folds ASCII letters only; ``fold`` mirrors it in Python so caches agree with the index.

The values a column accepts are checked by ``rules.py``, the store's interface, so every implementation,
the importer and the routes refuse the same values with the same words.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import names
from .base import StorageFailure
from .rules import (
    ALL_PERMISSIONS,
    ANSWER_RETENTION_DAYS,
    ANSWERS_PRUNE_EVERY,
    DEFAULT_ROLE_PERMISSIONS,
    KNOWN_ROLES,
    MESSAGE_CHANGES_KEPT,
    MESSAGE_CHANGES_PRUNE_EVERY,
)

__all__ = [
    "ALL_PERMISSIONS",
    "ANSWERS_PRUNE_EVERY",
    "ANSWER_RETENTION_DAYS",
    "DEFAULT_ROLE_PERMISSIONS",
    "KNOWN_ROLES",
    "MESSAGE_CHANGES_KEPT",
    "MESSAGE_CHANGES_PRUNE_EVERY",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "answers_sql",
    "connect",
    "insert_room_name_keys",
    "message_change_log_sql",
    "migrate",
    "roles_from_column",
    "roles_to_column",
    "room_name_clash",
]


def roles_to_column(roles: Sequence[str]) -> str:
    return json.dumps(list(roles))


def roles_from_column(column: str) -> tuple[str, ...]:
    return tuple(json.loads(column))


# -- connections and migrations -------------------------------------------------------------------


def connect(path: Path, *, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection in autocommit mode (the store issues BEGIN IMMEDIATE itself) with the pragmas set.

    ``check_same_thread=False`` only so that ``close()`` may close every thread's connection at shutdown;
    each connection is otherwise used by the one thread that opened it.
    """
    try:
        conn = sqlite3.connect(
            path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        (journal_mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as error:
        raise StorageFailure(f"cannot open the workspace database {path}: {error}") from error
    if journal_mode != "wal":
        conn.close()
        raise StorageFailure(f"the workspace database {path} refused WAL mode (journal_mode={journal_mode})")
    return conn


@dataclass(frozen=True, slots=True)
class Migration:
    version: int  # the user_version the file has after this step
    summary: str
    apply: Callable[[sqlite3.Connection], None]


_V1_TABLES = (
    """CREATE TABLE users (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL COLLATE NOCASE,
        name TEXT NOT NULL,
        password_hash TEXT,
        roles TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1))
    )""",
    "CREATE UNIQUE INDEX users_username ON users (username)",
    """CREATE TABLE role_permissions (
        role TEXT NOT NULL,
        permission TEXT NOT NULL,
        PRIMARY KEY (role, permission)
    ) WITHOUT ROWID""",
    """CREATE TABLE rooms (
        id TEXT PRIMARY KEY,
        t TEXT NOT NULL CHECK (t IN ('c', 'p', 'd')),
        name TEXT NOT NULL COLLATE NOCASE,
        fname TEXT NOT NULL COLLATE NOCASE,
        topic TEXT NOT NULL DEFAULT '',
        creator_id TEXT REFERENCES users (id) ON DELETE SET NULL,
        created_at INTEGER NOT NULL
    )""",
    # Channel and group names are unique; direct rooms are named after their members and may repeat.
    "CREATE UNIQUE INDEX rooms_name ON rooms (name) WHERE t != 'd'",
    "CREATE INDEX rooms_direct_name ON rooms (name) WHERE t = 'd'",
    "CREATE INDEX rooms_fname ON rooms (fname)",
    """CREATE TABLE subscriptions (
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        room_id TEXT NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
        banned INTEGER NOT NULL DEFAULT 0 CHECK (banned IN (0, 1)),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, room_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX subscriptions_room ON subscriptions (room_id, user_id)",
    # `seq` is a stable integer key (survives VACUUM) for external-content FTS5 tables to point at.
    """CREATE TABLE messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        room_id TEXT NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users (id),
        ts INTEGER NOT NULL,
        text TEXT NOT NULL,
        edited_at INTEGER
    )""",
    "CREATE INDEX messages_room_ts ON messages (room_id, ts)",
    "CREATE INDEX messages_ts ON messages (ts, id)",
    """CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('session', 'pat')),
        label TEXT NOT NULL DEFAULT '',
        hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER
    )""",
    "CREATE UNIQUE INDEX tokens_pat_label ON tokens (user_id, label) WHERE kind = 'pat'",
    "CREATE INDEX tokens_user ON tokens (user_id, kind)",
)


def _create_tables(conn: sqlite3.Connection) -> None:
    for statement in _V1_TABLES:
        conn.execute(statement)


def _seed_role_permissions(conn: sqlite3.Connection) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO role_permissions (role, permission) VALUES (?, ?)",
        [(role, permission) for role, granted in DEFAULT_ROLE_PERMISSIONS.items() for permission in granted],
    )


# Every insert, update and delete of a message, in whatever process, appends the message's id under a
# new, ever larger change number (AUTOINCREMENT: never reused, even after pruning). SQLite commits one
# writer at a time, so change numbers are in commit order and a reader that remembers the last number
# it applied asks only for what came after, without rescanning the store.
def message_change_log_sql(
    kept: int = MESSAGE_CHANGES_KEPT, every: int = MESSAGE_CHANGES_PRUNE_EVERY
) -> list[str]:
    """The change log's table and triggers (``kept``/``every`` are parameters for the tests)."""
    return [
        """CREATE TABLE message_changes (
            change INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id TEXT NOT NULL
        )""",
        """CREATE TRIGGER messages_change_insert AFTER INSERT ON messages BEGIN
            INSERT INTO message_changes (message_id) VALUES (new.id);
        END""",
        """CREATE TRIGGER messages_change_update AFTER UPDATE ON messages BEGIN
            INSERT INTO message_changes (message_id) VALUES (new.id);
        END""",
        """CREATE TRIGGER messages_change_delete AFTER DELETE ON messages BEGIN
            INSERT INTO message_changes (message_id) VALUES (old.id);
        END""",
        f"""CREATE TRIGGER message_changes_prune AFTER INSERT ON message_changes
            WHEN new.change % {int(every)} = 0 BEGIN
            DELETE FROM message_changes WHERE change <= new.change - {int(kept)};
        END""",
    ]


def _log_message_changes(conn: sqlite3.Connection) -> None:
    for statement in message_change_log_sql():
        conn.execute(statement)


# Threads, files, reactions, mentions and pins, as Rocket.Chat models them. A reply's `tmid` names its
# thread's first message; reply counts and last-reply times are read from the replies themselves
# (an index on (tmid, ts)), so they can never drift from what is stored. Attachments and reactions
# log a change of their message, so readers of the change log (the search index) see them too.
_V4_CONVERSATIONS = (
    "ALTER TABLE messages ADD COLUMN tmid TEXT",
    "ALTER TABLE messages ADD COLUMN pinned_at INTEGER",
    "ALTER TABLE messages ADD COLUMN pinned_by TEXT",
    "ALTER TABLE messages ADD COLUMN edited_by TEXT",
    "CREATE INDEX messages_thread ON messages (tmid, ts) WHERE tmid IS NOT NULL",
    "CREATE INDEX messages_room_threads ON messages (room_id, tmid) WHERE tmid IS NOT NULL",
    "CREATE INDEX messages_pinned ON messages (room_id, pinned_at) WHERE pinned_at IS NOT NULL",
    """CREATE TABLE attachments (
        message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        type TEXT NOT NULL DEFAULT '',
        size INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (message_id, position)
    ) WITHOUT ROWID""",
    """CREATE TABLE reactions (
        message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        emoji TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        ts INTEGER NOT NULL,
        PRIMARY KEY (message_id, emoji, user_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE mentions (
        message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        PRIMARY KEY (message_id, user_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX mentions_user ON mentions (user_id)",
    *(
        f"""CREATE TRIGGER {table}_change_{event.lower()} AFTER {event} ON {table} BEGIN
            INSERT INTO message_changes (message_id) VALUES ({row}.message_id);
        END"""
        for table in ("attachments", "reactions")
        for event, row in (("INSERT", "new"), ("DELETE", "old"))
    ),
)


def _add_conversations(conn: sqlite3.Connection) -> None:
    for statement in _V4_CONVERSATIONS:
        conn.execute(statement)
    # The permissions these bring, for the roles that had the defaults before (migration 2).
    conn.executemany(
        "INSERT OR IGNORE INTO role_permissions (role, permission) VALUES (?, ?)",
        [
            (role, permission)
            for role in ("user", "bot")
            for permission in ("delete-own-message", "pin-message")
        ],
    )


def _create_room_name_keys(conn: sqlite3.Connection) -> None:
    """The confusable keys of every room name (names.confusable_keys), for the look-alike check."""
    conn.execute(
        """CREATE TABLE room_name_keys (
            key TEXT NOT NULL,
            room_id TEXT NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
            PRIMARY KEY (key, room_id)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX room_name_keys_room ON room_name_keys (room_id)")
    rows = conn.execute("SELECT id, name FROM rooms").fetchall()
    conn.executemany(
        "INSERT OR IGNORE INTO room_name_keys (key, room_id) VALUES (?, ?)",
        [(key, room_id) for room_id, name in rows for key in names.confusable_keys(name)],
    )


def room_name_clash(conn: sqlite3.Connection, room_type: str, name: str) -> str | None:
    """Why a new room of ``room_type`` may not take ``name``, or None (inside a write transaction).

    A channel or group may not share its name (case-insensitively) with any room, direct rooms
    included, nor look like one (names.confusable_keys), nor take the name a direct room of people
    here has or would have (names.names_people). A direct room may repeat another direct room's name
    (they are named after their members) but not a channel's or group's. The message never names the
    look-alike, which may be a room the caller cannot see.
    """
    others = "" if room_type != "d" else " AND r.t != 'd'"
    if conn.execute(f"SELECT 1 FROM rooms r WHERE r.name = ?{others}", (name,)).fetchone():
        return f"a room named {name!r} already exists"
    keys = json.dumps(sorted(names.confusable_keys(name)))
    if conn.execute(
        "SELECT 1 FROM room_name_keys k JOIN rooms r ON r.id = k.room_id"
        f" WHERE k.key IN (SELECT value FROM json_each(?)){others} LIMIT 1",
        (keys,),
    ).fetchone():
        return (
            f"room name {name!r} looks like the name of an existing room (it differs only in "
            "characters that look alike, such as a dotless i or a Cyrillic letter); choose another"
        )
    if room_type != "d" and names.names_people(
        name, lambda: (username for (username,) in conn.execute("SELECT username FROM users"))
    ):
        return names.direct_name_reason(name)
    return None


def insert_room_name_keys(conn: sqlite3.Connection, room_id: str, name: str) -> None:
    """Records a new room's confusable keys, for later rooms' :func:`room_name_clash`."""
    conn.executemany(
        "INSERT OR IGNORE INTO room_name_keys (key, room_id) VALUES (?, ?)",
        [(key, room_id) for key in names.confusable_keys(name)],
    )


def answers_sql(retention_days: int = ANSWER_RETENTION_DAYS, every: int = ANSWERS_PRUNE_EVERY) -> list[str]:
    """The stored answers and their feedback (``retention_days``/``every`` are parameters for the tests).

    An answer keeps its question, text, provider and the ids of its numbered sources (JSON), never
    the sources' texts; feedback is one row per person and answer, replaced when they change their mind.
    """
    retention_ms = int(retention_days) * 24 * 3600 * 1000
    return [
        """CREATE TABLE answers (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            query TEXT NOT NULL,
            answer TEXT NOT NULL,
            sources TEXT NOT NULL DEFAULT '[]',
            provider TEXT NOT NULL DEFAULT '{}',
            searched TEXT,
            created_at INTEGER NOT NULL,
            shared_at INTEGER
        )""",
        "CREATE INDEX answers_created ON answers (created_at)",
        "CREATE INDEX answers_user ON answers (user_id, created_at)",
        """CREATE TABLE answer_feedback (
            answer_id TEXT NOT NULL REFERENCES answers (id) ON DELETE CASCADE,
            user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
            reason TEXT NOT NULL DEFAULT '',
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (answer_id, user_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX answer_feedback_updated ON answer_feedback (updated_at)",
        f"""CREATE TRIGGER answers_prune AFTER INSERT ON answers
            WHEN new.rowid % {int(every)} = 0 BEGIN
            DELETE FROM answers WHERE created_at < new.created_at - {retention_ms}
                AND shared_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM answer_feedback f WHERE f.answer_id = answers.id);
        END""",
    ]


def _add_answers(conn: sqlite3.Connection) -> None:
    for statement in answers_sql():
        conn.execute(statement)


# Where messages came from when another system holds the original (an import, a live mirror). A
# message's `origin` names the source ("slack:T0123", "rocketchat:https://chat.example.com"), so a
# newer export can delete what the source deleted without touching messages written here; its
# `source_url` is the "open in ..." link. `external_ids` maps a source's user and room ids to ours,
# so a renamed channel stays one room; `sync_state` is where a live mirror resumes after a crash.
_V7_SOURCES = (
    "ALTER TABLE messages ADD COLUMN origin TEXT",
    "ALTER TABLE messages ADD COLUMN source_url TEXT",
    "CREATE INDEX messages_origin ON messages (room_id, origin, ts) WHERE origin IS NOT NULL",
    """CREATE TABLE external_ids (
        origin TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('user', 'room')),
        external_id TEXT NOT NULL,
        local_id TEXT NOT NULL,
        PRIMARY KEY (origin, kind, external_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE sync_state (
        origin TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    )""",
)


def _add_sources(conn: sqlite3.Connection) -> None:
    for statement in _V7_SOURCES:
        conn.execute(statement)


# OAuth 2.1 for MCP clients (oauth/ and store/oauth_rows.py). Clients registered by dynamic client
# registration; authorization codes and tokens kept only as SHA-256 hashes of their values, like the
# tokens table. A code row stays after its use (``used_at``) until it expires, so that presenting it
# again is recognised and revokes the grant it opened (RFC 6749 §4.1.2). A token row is one access
# token and its refresh token; a refresh rotates them into a new row of the same ``grant_id`` and
# marks the old one ``rotated_at``, so an old refresh token shown again is recognised as stolen or
# replayed and ends the whole grant (OAuth 2.1 §4.3.1).
_V8_OAUTH = (
    """CREATE TABLE oauth_clients (
        id TEXT PRIMARY KEY,
        secret_hash TEXT,
        name TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at INTEGER NOT NULL
    )""",
    "CREATE INDEX oauth_clients_created ON oauth_clients (created_at)",
    """CREATE TABLE oauth_codes (
        hash TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL,
        client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        redirect_uri TEXT NOT NULL,
        scope TEXT NOT NULL,
        resource TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        code_challenge_method TEXT NOT NULL CHECK (code_challenge_method = 'S256'),
        expires_at INTEGER NOT NULL,
        used_at INTEGER
    ) WITHOUT ROWID""",
    "CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at)",
    """CREATE TABLE oauth_tokens (
        id TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        scope TEXT NOT NULL,
        resource TEXT NOT NULL,
        access_hash TEXT NOT NULL UNIQUE,
        refresh_hash TEXT UNIQUE,
        created_at INTEGER NOT NULL,
        access_expires_at INTEGER NOT NULL,
        refresh_expires_at INTEGER,
        last_used_at INTEGER,
        rotated_at INTEGER
    )""",
    "CREATE INDEX oauth_tokens_user ON oauth_tokens (user_id, rotated_at)",
    "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
    "CREATE INDEX oauth_tokens_client ON oauth_tokens (client_id)",
)


def _add_oauth(conn: sqlite3.Connection) -> None:
    for statement in _V8_OAUTH:
        conn.execute(statement)


# How each external id came to name a local user or room (``external_ids.how``, records.LinkHow): only
# a user or room the source created may be renamed, deactivated or lose members by it, and only a
# created or admin-mapped account may be signed in to through it. Links made before this step say
# nothing of how; an import then matched people by username and conversations by name. They are told
# apart by what the workspace shows: the mirror creates rooms without a creator, and users without a
# password and never as admins, and one user or room is made by at most one source. Whatever is not
# clearly the source's own is "adopted": still linked, never changed by the source, never signed in
# to through it, until an admin maps it (imports/mapping.py).
_V10_LINK_HOW = (
    "ALTER TABLE external_ids ADD COLUMN how TEXT NOT NULL DEFAULT 'created'"
    " CHECK (how IN ('created', 'mapped', 'adopted'))",
    """UPDATE external_ids SET how = 'adopted' WHERE
        (kind = 'room' AND local_id IN (SELECT id FROM rooms WHERE creator_id IS NOT NULL))
        OR (kind = 'user' AND local_id IN (
            SELECT id FROM users WHERE password_hash IS NOT NULL OR roles LIKE '%"admin"%'))
        OR EXISTS (SELECT 1 FROM external_ids o WHERE o.kind = external_ids.kind
            AND o.local_id = external_ids.local_id AND o.origin <> external_ids.origin)""",
)


def _add_link_how(conn: sqlite3.Connection) -> None:
    for statement in _V10_LINK_HOW:
        conn.execute(statement)


def _postgres_only(conn: sqlite3.Connection) -> None:
    """A step of ``pg_schema.py`` with nothing to do here: the number is kept so that both stores
    speak of one schema version."""


# Append only: a released step never changes, because files in the field have already run it.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "users, role_permissions, rooms, subscriptions, messages, tokens", _create_tables),
    Migration(2, "default permissions of the user and bot roles", _seed_role_permissions),
    Migration(3, "message change log (message_changes) for readers in other processes", _log_message_changes),
    Migration(4, "threads (tmid), attachments, reactions, mentions, pins", _add_conversations),
    Migration(5, f"confusable keys of room names ({names.KEY_VERSION})", _create_room_name_keys),
    Migration(6, "stored answers (for sharing) and their feedback", _add_answers),
    Migration(7, "message origins and source links, external ids, sync state", _add_sources),
    Migration(8, "OAuth clients, authorization codes and tokens (hashed)", _add_oauth),
    # PostgreSQL's keyword table (pg_terms.py); SQLite's keyword index is the pipeline's index.db.
    Migration(9, "message terms for PostgreSQL full-text search (PostgreSQL only)", _postgres_only),
    Migration(10, "how each external id was linked: created, mapped by an admin, or adopted", _add_link_how),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def _user_version(conn: sqlite3.Connection) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return int(version)


def migrate(conn: sqlite3.Connection, *, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Brings the file to the last version of ``migrations`` and returns it.

    Raises:
        StorageFailure: the file is newer than this code, or a step failed (that step is rolled back).
    """
    target = migrations[-1].version if migrations else 0
    try:
        version = _user_version(conn)
        if version > target:
            raise StorageFailure(
                f"the workspace database has schema version {version}, newer than this ai-search "
                f"understands ({target}); upgrade ai-search"
            )
        for step in migrations:
            if step.version <= version:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have migrated while we waited for the write lock.
                if _user_version(conn) < step.version:
                    step.apply(conn)
                    conn.execute(f"PRAGMA user_version = {int(step.version)}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            version = step.version
    except sqlite3.Error as error:
        raise StorageFailure(f"migrating the workspace database failed: {error}") from error
    return version
