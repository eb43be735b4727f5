"""The PostgreSQL schema of the workspace: the same tables as SQLite's, migrations by the same numbers.

Step N here brings a database to what step N of ``schema.py`` brings a SQLite file to, in
PostgreSQL's words, so the two stores speak of one schema version. The version lives in a one-row
table, ``ai_search_schema``; each step runs in its own transaction together with the version bump,
under a transaction-level advisory lock, so proxies starting at once migrate one at a time and a
crash mid-step leaves the database at the previous version. A database written by a newer ai-search
is refused rather than guessed at.

Dialect choices, each made so that the records match SQLite's to the byte:

- every text column is ``COLLATE "C"``: ids and names sort by code point whatever the database's
  locale, as SQLite's BINARY does;
- case-insensitive names compare by ``ascii_fold()`` (ASCII letters only, ``rules.fold``), indexed,
  as SQLite's ``NOCASE`` does;
- times are ``bigint`` milliseconds since the epoch, flags ``boolean``, roles ``text[]``.

The message change log numbers changes from a sequence; a trigger takes one advisory lock per
message-writing transaction, held to its commit, so numbers are taken in commit order even with
several proxies writing: a reader that remembers the last number it applied never skips one that
commits later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg

from . import names
from .base import StorageFailure
from .pg_terms import MESSAGE_TERMS_SQL
from .rules import (
    ANSWER_RETENTION_DAYS,
    ANSWERS_PRUNE_EVERY,
    DEFAULT_ROLE_PERMISSIONS,
    MESSAGE_CHANGES_KEPT,
    MESSAGE_CHANGES_PRUNE_EVERY,
)

__all__ = [
    "CHANGE_LOG_LOCK",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "SCHEMA_VERSION",
    "PgMigration",
    "answers_sql",
    "message_change_log_sql",
    "migrate",
]

# Advisory lock keys (any bigint; these spell "ai-search" steps): one for migrations, one that
# orders the message change log by commit.
MIGRATION_LOCK = 0x61692D736561_01
CHANGE_LOG_LOCK = 0x61692D736561_02

Statements = Sequence[str]


@dataclass(frozen=True, slots=True)
class PgMigration:
    version: int  # the version the database has after this step (schema.py's step of that number)
    summary: str
    apply: Callable[[psycopg.Connection], None]


def _run(statements: Statements) -> Callable[[psycopg.Connection], None]:
    def apply(conn: psycopg.Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return apply


_V1_TABLES = (
    # ASCII letters only, like SQLite's NOCASE (rules.fold): IMMUTABLE, so it can be indexed.
    """CREATE FUNCTION ascii_fold(value text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN translate(value, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')""",
    """CREATE TABLE users (
        id text COLLATE "C" PRIMARY KEY,
        username text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        password_hash text,
        roles text[] NOT NULL DEFAULT '{}',
        created_at bigint NOT NULL,
        active boolean NOT NULL DEFAULT true
    )""",
    "CREATE UNIQUE INDEX users_username ON users (ascii_fold(username))",
    """CREATE TABLE role_permissions (
        role text COLLATE "C" NOT NULL,
        permission text COLLATE "C" NOT NULL,
        PRIMARY KEY (role, permission)
    )""",
    """CREATE TABLE rooms (
        id text COLLATE "C" PRIMARY KEY,
        t text NOT NULL CHECK (t IN ('c', 'p', 'd')),
        name text COLLATE "C" NOT NULL,
        fname text COLLATE "C" NOT NULL,
        topic text NOT NULL DEFAULT '',
        creator_id text COLLATE "C" REFERENCES users (id) ON DELETE SET NULL,
        created_at bigint NOT NULL
    )""",
    # Channel and group names are unique; direct rooms are named after their members and may repeat.
    "CREATE UNIQUE INDEX rooms_name ON rooms (ascii_fold(name)) WHERE t <> 'd'",
    "CREATE INDEX rooms_direct_name ON rooms (ascii_fold(name)) WHERE t = 'd'",
    "CREATE INDEX rooms_fname ON rooms (ascii_fold(fname))",
    """CREATE TABLE subscriptions (
        user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        room_id text COLLATE "C" NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
        banned boolean NOT NULL DEFAULT false,
        created_at bigint NOT NULL,
        PRIMARY KEY (user_id, room_id)
    )""",
    "CREATE INDEX subscriptions_room ON subscriptions (room_id, user_id)",
    """CREATE TABLE messages (
        id text COLLATE "C" PRIMARY KEY,
        room_id text COLLATE "C" NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
        user_id text COLLATE "C" NOT NULL REFERENCES users (id),
        ts bigint NOT NULL,
        text text NOT NULL,
        edited_at bigint
    )""",
    "CREATE INDEX messages_room_ts ON messages (room_id, ts)",
    "CREATE INDEX messages_ts ON messages (ts, id)",
    """CREATE TABLE tokens (
        id text COLLATE "C" PRIMARY KEY,
        user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('session', 'pat')),
        label text COLLATE "C" NOT NULL DEFAULT '',
        hash text COLLATE "C" NOT NULL UNIQUE,
        created_at bigint NOT NULL,
        last_used_at bigint
    )""",
    "CREATE UNIQUE INDEX tokens_pat_label ON tokens (user_id, label) WHERE kind = 'pat'",
    "CREATE INDEX tokens_user ON tokens (user_id, kind)",
)


def _seed_role_permissions(conn: psycopg.Connection) -> None:
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO role_permissions (role, permission) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [
                (role, permission)
                for role, granted in DEFAULT_ROLE_PERMISSIONS.items()
                for permission in granted
            ],
        )


def message_change_log_sql(
    kept: int = MESSAGE_CHANGES_KEPT, every: int = MESSAGE_CHANGES_PRUNE_EVERY
) -> list[str]:
    """The change log's table, its trigger function and the messages' triggers (``kept``/``every``
    are parameters for the tests). The function's argument names the column holding the message id."""
    return [
        """CREATE TABLE message_changes (
            change bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            message_id text COLLATE "C" NOT NULL
        )""",
        f"""CREATE FUNCTION log_message_change() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            changed text;
            number bigint;
        BEGIN
            PERFORM pg_advisory_xact_lock({CHANGE_LOG_LOCK});
            IF TG_OP = 'DELETE' THEN
                changed := to_jsonb(OLD) ->> TG_ARGV[0];
            ELSE
                changed := to_jsonb(NEW) ->> TG_ARGV[0];
            END IF;
            INSERT INTO message_changes (message_id) VALUES (changed) RETURNING change INTO number;
            IF number % {int(every)} = 0 THEN
                DELETE FROM message_changes WHERE change <= number - {int(kept)};
            END IF;
            RETURN NULL;
        END $$""",
        """CREATE TRIGGER messages_change AFTER INSERT OR UPDATE OR DELETE ON messages
            FOR EACH ROW EXECUTE FUNCTION log_message_change('id')""",
    ]


# Threads, files, reactions, mentions and pins (schema.py's step 4, with its reasons).
_V4_CONVERSATIONS = (
    'ALTER TABLE messages ADD COLUMN tmid text COLLATE "C"',
    "ALTER TABLE messages ADD COLUMN pinned_at bigint",
    'ALTER TABLE messages ADD COLUMN pinned_by text COLLATE "C"',
    'ALTER TABLE messages ADD COLUMN edited_by text COLLATE "C"',
    "CREATE INDEX messages_thread ON messages (tmid, ts) WHERE tmid IS NOT NULL",
    "CREATE INDEX messages_room_threads ON messages (room_id, tmid) WHERE tmid IS NOT NULL",
    "CREATE INDEX messages_pinned ON messages (room_id, pinned_at) WHERE pinned_at IS NOT NULL",
    """CREATE TABLE attachments (
        message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        position integer NOT NULL,
        name text NOT NULL,
        title text NOT NULL DEFAULT '',
        description text NOT NULL DEFAULT '',
        type text NOT NULL DEFAULT '',
        size bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (message_id, position)
    )""",
    """CREATE TABLE reactions (
        message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        emoji text COLLATE "C" NOT NULL,
        user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        ts bigint NOT NULL,
        PRIMARY KEY (message_id, emoji, user_id)
    )""",
    """CREATE TABLE mentions (
        message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        PRIMARY KEY (message_id, user_id)
    )""",
    "CREATE INDEX mentions_user ON mentions (user_id)",
    *(
        f"""CREATE TRIGGER {table}_change AFTER INSERT OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION log_message_change('message_id')"""
        for table in ("attachments", "reactions")
    ),
    # The permissions these bring, for the roles that had the defaults before (step 2).
    """INSERT INTO role_permissions (role, permission)
        SELECT role, permission FROM unnest(ARRAY['user', 'bot']) role,
            unnest(ARRAY['delete-own-message', 'pin-message']) permission
        ON CONFLICT DO NOTHING""",
)


def _create_room_name_keys(conn: psycopg.Connection) -> None:
    """The confusable keys of every room name (names.confusable_keys), for the look-alike check."""
    conn.execute(
        """CREATE TABLE room_name_keys (
            key text COLLATE "C" NOT NULL,
            room_id text COLLATE "C" NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
            PRIMARY KEY (key, room_id)
        )"""
    )
    conn.execute("CREATE INDEX room_name_keys_room ON room_name_keys (room_id)")
    rows = conn.execute("SELECT id, name FROM rooms").fetchall()
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO room_name_keys (key, room_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [(key, room_id) for room_id, name in rows for key in names.confusable_keys(name)],
        )


def answers_sql(retention_days: int = ANSWER_RETENTION_DAYS, every: int = ANSWERS_PRUNE_EVERY) -> list[str]:
    """Stored answers and their feedback (schema.py's ``answers_sql``, with its reasons); ``seq``
    numbers the answers so that every ``every``-th prunes the old ones, as SQLite's rowid does."""
    retention_ms = int(retention_days) * 24 * 3600 * 1000
    return [
        """CREATE TABLE answers (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text COLLATE "C" PRIMARY KEY,
            user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            query text NOT NULL,
            answer text NOT NULL,
            sources text NOT NULL DEFAULT '[]',
            provider text NOT NULL DEFAULT '{}',
            searched text,
            created_at bigint NOT NULL,
            shared_at bigint
        )""",
        "CREATE INDEX answers_created ON answers (created_at)",
        "CREATE INDEX answers_user ON answers (user_id, created_at)",
        """CREATE TABLE answer_feedback (
            answer_id text COLLATE "C" NOT NULL REFERENCES answers (id) ON DELETE CASCADE,
            user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            rating text NOT NULL CHECK (rating IN ('up', 'down')),
            reason text NOT NULL DEFAULT '',
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (answer_id, user_id)
        )""",
        "CREATE INDEX answer_feedback_updated ON answer_feedback (updated_at)",
        f"""CREATE FUNCTION prune_answers() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.seq % {int(every)} = 0 THEN
                DELETE FROM answers WHERE created_at < NEW.created_at - {retention_ms}
                    AND shared_at IS NULL
                    AND NOT EXISTS (SELECT 1 FROM answer_feedback f WHERE f.answer_id = answers.id);
            END IF;
            RETURN NULL;
        END $$""",
        "CREATE TRIGGER answers_prune AFTER INSERT ON answers FOR EACH ROW EXECUTE FUNCTION prune_answers()",
    ]


# Message origins and source links, external ids, sync state (schema.py's step 7, with its reasons).
_V7_SOURCES = (
    'ALTER TABLE messages ADD COLUMN origin text COLLATE "C"',
    "ALTER TABLE messages ADD COLUMN source_url text",
    "CREATE INDEX messages_origin ON messages (room_id, origin, ts) WHERE origin IS NOT NULL",
    """CREATE TABLE external_ids (
        origin text COLLATE "C" NOT NULL,
        kind text NOT NULL CHECK (kind IN ('user', 'room')),
        external_id text COLLATE "C" NOT NULL,
        local_id text COLLATE "C" NOT NULL,
        PRIMARY KEY (origin, kind, external_id)
    )""",
    """CREATE TABLE sync_state (
        origin text COLLATE "C" PRIMARY KEY,
        state text NOT NULL,
        updated_at bigint NOT NULL
    )""",
)


# OAuth clients, authorization codes and tokens, kept hashed (schema.py's step 8, with its reasons).
_V8_OAUTH = (
    """CREATE TABLE oauth_clients (
        id text COLLATE "C" PRIMARY KEY,
        secret_hash text COLLATE "C",
        name text NOT NULL,
        metadata text NOT NULL,
        created_at bigint NOT NULL
    )""",
    "CREATE INDEX oauth_clients_created ON oauth_clients (created_at)",
    """CREATE TABLE oauth_codes (
        hash text COLLATE "C" PRIMARY KEY,
        grant_id text COLLATE "C" NOT NULL,
        client_id text COLLATE "C" NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        redirect_uri text NOT NULL,
        scope text NOT NULL,
        resource text NOT NULL,
        code_challenge text NOT NULL,
        code_challenge_method text NOT NULL CHECK (code_challenge_method = 'S256'),
        expires_at bigint NOT NULL,
        used_at bigint
    )""",
    "CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at)",
    """CREATE TABLE oauth_tokens (
        id text COLLATE "C" PRIMARY KEY,
        grant_id text COLLATE "C" NOT NULL,
        user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id text COLLATE "C" NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        scope text NOT NULL,
        resource text NOT NULL,
        access_hash text COLLATE "C" NOT NULL UNIQUE,
        refresh_hash text COLLATE "C" UNIQUE,
        created_at bigint NOT NULL,
        access_expires_at bigint NOT NULL,
        refresh_expires_at bigint,
        last_used_at bigint,
        rotated_at bigint
    )""",
    "CREATE INDEX oauth_tokens_user ON oauth_tokens (user_id, rotated_at)",
    "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
    "CREATE INDEX oauth_tokens_client ON oauth_tokens (client_id)",
)


# How each external id was linked (schema.py's step 10, with its reasons); roles are text[] here.
_V10_LINK_HOW = (
    "ALTER TABLE external_ids ADD COLUMN how text COLLATE \"C\" NOT NULL DEFAULT 'created'"
    " CHECK (how IN ('created', 'mapped', 'adopted'))",
    """UPDATE external_ids e SET how = 'adopted' WHERE
        (e.kind = 'room' AND e.local_id IN (SELECT id FROM rooms WHERE creator_id IS NOT NULL))
        OR (e.kind = 'user' AND e.local_id IN (
            SELECT id FROM users WHERE password_hash IS NOT NULL OR 'admin' = ANY(roles)))
        OR EXISTS (SELECT 1 FROM external_ids o WHERE o.kind = e.kind
            AND o.local_id = e.local_id AND o.origin <> e.origin)""",
)


# Append only, numbered as schema.py's MIGRATIONS: a released step never changes.
MIGRATIONS: tuple[PgMigration, ...] = (
    PgMigration(1, "users, role_permissions, rooms, subscriptions, messages, tokens", _run(_V1_TABLES)),
    PgMigration(2, "default permissions of the user and bot roles", _seed_role_permissions),
    PgMigration(
        3,
        "message change log (message_changes) for readers in other processes",
        _run(message_change_log_sql()),
    ),
    PgMigration(4, "threads (tmid), attachments, reactions, mentions, pins", _run(_V4_CONVERSATIONS)),
    PgMigration(5, f"confusable keys of room names ({names.KEY_VERSION})", _create_room_name_keys),
    PgMigration(6, "stored answers (for sharing) and their feedback", _run(answers_sql())),
    PgMigration(7, "message origins and source links, external ids, sync state", _run(_V7_SOURCES)),
    PgMigration(8, "OAuth clients, authorization codes and tokens (hashed)", _run(_V8_OAUTH)),
    PgMigration(
        9, "message terms for PostgreSQL full-text search (message_terms, GIN)", _run(MESSAGE_TERMS_SQL)
    ),
    PgMigration(
        10, "how each external id was linked: created, mapped by an admin, or adopted", _run(_V10_LINK_HOW)
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def _version(conn: psycopg.Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS ai_search_schema (version integer NOT NULL)")
    row = conn.execute("SELECT version FROM ai_search_schema").fetchone()
    if row is None:
        conn.execute("INSERT INTO ai_search_schema (version) VALUES (0)")
        return 0
    return int(row[0])


def migrate(conn: psycopg.Connection, *, migrations: Sequence[PgMigration] = MIGRATIONS) -> int:
    """Brings the database (``conn`` in autocommit mode) to the last version of ``migrations``.

    Raises:
        StorageFailure: the database is newer than this code, or a step failed (that step is rolled back).
    """
    target = migrations[-1].version if migrations else 0
    version = 0
    try:
        for step in (None, *migrations):
            with conn.transaction():
                # Another proxy may be migrating: wait for it, then read where it left the database.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                version = _version(conn)
                if version > target:
                    raise StorageFailure(
                        f"the workspace database has schema version {version}, newer than this ai-search "
                        f"understands ({target}); upgrade ai-search"
                    )
                if step is None or step.version <= version:
                    continue
                step.apply(conn)
                conn.execute("UPDATE ai_search_schema SET version = %s", (step.version,))
                version = step.version
    except psycopg.Error as error:
        raise StorageFailure(f"migrating the workspace database failed: {error}") from error
    return version
