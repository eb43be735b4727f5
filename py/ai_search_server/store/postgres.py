"""PostgresStore: the workspace store on a PostgreSQL server, for deployments past one machine.

The same ``Store`` protocol, the same records and the same refusals as ``SQLiteStore``, in
PostgreSQL's SQL (``pg_schema.py`` for the tables and migrations, ``pg_rows.py`` and
``pg_import.py`` for the statements beside the plain tables). Shared rules (values, names, the
import batch, records from rows, listener delivery) come from the store's shared modules.

Connections: one psycopg pool per store (``pool_size`` connections at most), in autocommit mode, so a
read is one statement in its own snapshot and a write is one ``conn.transaction()``. Writes of this
process take one lock around their transaction so that their listener events are queued in commit
order (``listeners.py``); other processes' writes run beside them, and the message change log is
numbered in commit order across processes (``pg_schema.py``), so a reader in any process follows
every write.

Errors: psycopg's exceptions never leave this module. A unique violation becomes ``AlreadyTaken``, a
foreign-key violation ``RecordNotFound``, another constraint or a value PostgreSQL refuses
``InvalidValue``; a lost server, a full disk or a pool that stays empty past its timeout
``StorageFailure``, with the database named by host and name only (never its password).

Usage::

    store = PostgresStore("postgresql://ai@db.internal/workspace", data_dir=Path("data"))
    alice = store.create_user("alice", password="s3cret")
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from ai_search import MAX_ROOM_SEARCH_PATTERN_LENGTH

from . import passwords, pg_rows, pg_schema, rules
from .base import AlreadyTaken, InvalidValue, MessageListener, RecordNotFound, StorageFailure
from .import_batch import run_import
from .listeners import ListenerQueue
from .oauth_grants import OAuthGrants
from .pg_import import PgImportTables
from .pg_rows import OAUTH_SQL
from .records import (
    AnswerFeedback,
    Attachment,
    ExternalKind,
    ExternalLink,
    ImportResult,
    ImportRow,
    LinkHow,
    Message,
    MessageChanges,
    MessageEvent,
    Room,
    RoomType,
    SessionLifetime,
    StoredAnswer,
    Subscription,
    ThreadSummary,
    Token,
    TokenKind,
    User,
)
from .row_records import (
    MAX_TOKEN_LENGTH,
    ROOM_COLUMNS,
    SUBSCRIPTION_COLUMNS,
    TOKEN_COLUMNS,
    TOKEN_LAST_USED_RESOLUTION_MS,
    USER_COLUMNS,
    check_token_kind,
    room_from_row,
    subscription_from_row,
    token_expired,
    token_from_row,
    user_from_row,
)
from .rules import check_display_name, check_room_name, check_text, fold, from_ms, new_id, now_ms, to_ms

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_POOL_SIZE",
    "MAX_TOKEN_LENGTH",
    "POOL_WAIT_S",
    "TOKEN_LAST_USED_RESOLUTION_MS",
    "PostgresStore",
    "describe_database",
]

# Connections one store keeps open at most: rules.DEFAULT_DATABASE_POOL_SIZE (the setting's default).
DEFAULT_POOL_SIZE = rules.DEFAULT_DATABASE_POOL_SIZE
# How long opening the store waits for its first connection (seconds): a server that is down fails
# the start clearly instead of hanging it.
CONNECT_TIMEOUT_S = 10.0
# How long a call waits for a free connection of the pool (seconds) before StorageFailure.
POOL_WAIT_S = 5.0

_LIKE_SPECIAL = re.compile(r"([\\%_])")

Conn = psycopg.Connection[Any]
Row = tuple[Any, ...]


def describe_database(url: str) -> str:
    """``url`` as people may read it in a log or an error: host and database name, no password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "the configured database (its URL does not parse)"
    return f"database {parts.get('dbname') or '?'} on {parts.get('host') or 'the local socket'}"


def _like_contains(text: str) -> tuple[str, str]:
    """LIKE patterns (contains, starts-with) matching ``text`` literally and case-folded (ASCII)."""
    literal = _LIKE_SPECIAL.sub(r"\\\1", fold(text[:MAX_ROOM_SEARCH_PATTERN_LENGTH]))
    return f"%{literal}%", f"{literal}%"


def _user(row: Row) -> User:
    return user_from_row(row, row[3])


def _thread_of(conn: Conn, room_id: str, tmid: str) -> str:
    """The thread a reply to ``tmid`` joins; RecordNotFound unless ``tmid`` is a message of this room
    (a message of another room answers the same as none)."""
    row = conn.execute("SELECT tmid FROM messages WHERE id = %s AND room_id = %s", (tmid, room_id)).fetchone()
    if row is None:
        raise RecordNotFound(f"no message {tmid!r} in this room to reply to")
    return str(row[0] or tmid)


class _Write:
    """What a write transaction hands its body: the connection, and the events to deliver after commit."""

    __slots__ = ("conn", "events", "wants_events")

    def __init__(self, conn: Conn, wants_events: bool) -> None:
        self.conn = conn
        self.wants_events = wants_events
        self.events: list[MessageEvent] = []


class PostgresStore(OAuthGrants):
    """The ``Store`` on a PostgreSQL database; see the module docstring for connections and errors.

    ``data_dir`` is this machine's folder for the server's other files (the embedded search index);
    the workspace itself lives in the database.

    Raises:
        StorageFailure: the server cannot be reached in CONNECT_TIMEOUT_S, or the database has a newer schema.
    """

    def __init__(
        self,
        url: str,
        *,
        data_dir: Path | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.url = url
        self.description = describe_database(url)
        self._data_dir = data_dir
        self._write_lock = threading.Lock()
        self._queue = ListenerQueue()
        self._closed = False
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            timeout=POOL_WAIT_S,
            open=False,
            name="ai-search-store",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except psycopg.Error as error:
            self._pool.close()
            raise StorageFailure(
                f"cannot connect to the workspace {self.description} within {connect_timeout_s:g} s: {error}"
            ) from error
        try:
            with self._pool.connection() as conn:
                pg_schema.migrate(conn)
        except BaseException:
            self._pool.close()
            raise

    @property
    def data_dir(self) -> Path | None:
        return self._data_dir

    # -- plumbing --------------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        if self._closed:
            raise StorageFailure("the workspace store is closed")
        with self._pool.connection() as conn:
            yield conn

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except pg_errors.UniqueViolation as error:
            raise AlreadyTaken(
                f"cannot {action}: it already exists ({error.diag.message_primary})"
            ) from error
        except pg_errors.ForeignKeyViolation as error:
            raise RecordNotFound(f"cannot {action}: a user or room it refers to does not exist") from error
        except (psycopg.IntegrityError, psycopg.DataError) as error:
            raise InvalidValue(f"cannot {action}: {error}") from error
        except pg_errors.DiskFull as error:
            raise StorageFailure(
                f"cannot {action}: the workspace database's disk is full ({error})"
            ) from error
        except psycopg.Error as error:
            raise StorageFailure(
                f"cannot {action}: the workspace {self.description} failed ({error})"
            ) from error

    def _all(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Row]:
        with self._errors("read the workspace"), self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Row | None:
        with self._errors("read the workspace"), self._connection() as conn:
            row: Row | None = conn.execute(sql, params).fetchone()
            return row

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        row = self._one(sql, params)
        return 0 if row is None or row[0] is None else int(row[0])

    @contextmanager
    def _transaction(self, action: str) -> Iterator[_Write]:
        listeners = self._queue.listeners
        with self._errors(action), self._write_lock, self._connection() as conn:
            write = _Write(conn, wants_events=bool(listeners))
            with conn.transaction():
                yield write
            self._queue.enqueue(listeners, write.events)
        if write.events and listeners:
            self._queue.deliver()

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Closes the pool's connections. Idempotent; the store is unusable afterwards."""
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- users -----------------------------------------------------------------------------------

    def create_user(
        self,
        username: str,
        *,
        name: str | None = None,
        password: str | None = None,
        roles: Sequence[str] = ("user",),
    ) -> User:
        rules.check_username(username)
        display = check_display_name(name.strip()) if name and name.strip() else username
        checked_roles = rules.check_roles(roles)
        # Hashed before taking the write lock: 40 ms of scrypt must not hold up other writers.
        password_hash = None if password is None else passwords.hash_password(password)
        created = now_ms()
        user_id = new_id()
        with self._transaction("create a user") as write:
            if write.conn.execute(
                "SELECT 1 FROM users WHERE ascii_fold(username) = %s", (fold(username),)
            ).fetchone():
                raise AlreadyTaken(f"username {username!r} is already taken")
            write.conn.execute(
                "INSERT INTO users (id, username, name, password_hash, roles, created_at, active)"
                " VALUES (%s, %s, %s, %s, %s, %s, true)",
                (user_id, username, display, password_hash, list(checked_roles), created),
            )
        return User(user_id, username, display, checked_roles, from_ms(created), password_hash is not None)

    def get_user(self, user_id: str) -> User | None:
        row = self._one(f"SELECT {USER_COLUMNS} FROM users WHERE id = %s", (user_id,))
        return None if row is None else _user(row)

    def get_user_by_username(self, username: str) -> User | None:
        row = self._one(
            f"SELECT {USER_COLUMNS} FROM users WHERE ascii_fold(username) = %s",
            (fold(username.removeprefix("@")),),
        )
        return None if row is None else _user(row)

    def get_users(self, user_ids: Iterable[str]) -> dict[str, User]:
        rows = self._all(f"SELECT {USER_COLUMNS} FROM users WHERE id = ANY(%s::text[])", (list(user_ids),))
        return {row[0]: _user(row) for row in rows}

    def find_users(
        self,
        text: str,
        *,
        limit: int,
        exclude: Sequence[str] = (),
        user_ids: Iterable[str] | None = None,
    ) -> list[User]:
        """Active users only; ``exclude`` holds usernames (case-insensitive); ``user_ids``, when
        given, restricts the search to those users."""
        if limit <= 0:
            return []
        contains, prefix = _like_contains(text.removeprefix("@"))
        sql = [
            f"SELECT {USER_COLUMNS} FROM users WHERE active"
            " AND (ascii_fold(username) LIKE %(contains)s OR ascii_fold(name) LIKE %(contains)s)"
            " AND ascii_fold(username) <> ALL(%(exclude)s::text[])"
        ]
        params: dict[str, Any] = {
            "contains": contains,
            "prefix": prefix,
            "exclude": [fold(name.removeprefix("@")) for name in exclude],
            "limit": limit,
        }
        if user_ids is not None:
            sql.append("AND id = ANY(%(ids)s::text[])")
            params["ids"] = list(user_ids)
        sql.append(
            "ORDER BY ascii_fold(username) LIKE %(prefix)s DESC, ascii_fold(username), id LIMIT %(limit)s"
        )
        return [_user(row) for row in self._all(" ".join(sql), params)]

    def verify_password(self, username: str, password: str) -> User | None:
        """As SQLiteStore's: unknown, passwordless and inactive users cost one scrypt run too."""
        if not password or len(password) > passwords.MAX_PASSWORD_LENGTH:
            return None
        row = self._one(
            f"SELECT {USER_COLUMNS}, password_hash FROM users WHERE ascii_fold(username) = %s",
            (fold(username.removeprefix("@")),),
        )
        if row is None or row[-1] is None:
            passwords.burn_password_check(password)
            return None
        stored: str = row[-1]
        if not passwords.verify_password_hash(password, stored):
            return None
        user = _user(row)
        if not user.active:
            return None
        if passwords.needs_rehash(stored):
            self.set_password(user.id, password)
        return user

    def _update_user(self, action: str, sql: str, params: Sequence[Any]) -> None:
        with self._transaction(action) as write:
            if not write.conn.execute(sql, params).rowcount:
                raise RecordNotFound(f"user {params[-1]!r} does not exist")

    def set_password(self, user_id: str, password: str) -> None:
        password_hash = passwords.hash_password(password)
        self._update_user(
            "set a password", "UPDATE users SET password_hash = %s WHERE id = %s", (password_hash, user_id)
        )

    def set_roles(self, user_id: str, roles: Sequence[str]) -> None:
        checked = list(rules.check_roles(roles))
        self._update_user("set roles", "UPDATE users SET roles = %s WHERE id = %s", (checked, user_id))

    def set_active(self, user_id: str, active: bool) -> None:
        """Deactivated users cannot log in, their tokens stop resolving, and they hold no permission."""
        self._update_user(
            "set a user active", "UPDATE users SET active = %s WHERE id = %s", (active, user_id)
        )

    def permissions_of(self, user: User) -> frozenset[str]:
        """Inactive users have none; 'admin' has every permission, whatever the table says."""
        if not user.active:
            return frozenset()
        if "admin" in user.roles:
            return rules.ALL_PERMISSIONS
        rows = self._all(
            "SELECT DISTINCT permission FROM role_permissions WHERE role = ANY(%s::text[])",
            (list(user.roles),),
        )
        return frozenset(row[0] for row in rows)

    def grant_permission(self, role: str, permission: str) -> None:
        self._change_permission(role, permission, grant=True)

    def revoke_permission(self, role: str, permission: str) -> None:
        """Revoking from 'admin' changes nothing: admins hold every permission by rule."""
        self._change_permission(role, permission, grant=False)

    def _change_permission(self, role: str, permission: str, *, grant: bool) -> None:
        rules.check_roles([role])
        if permission not in rules.ALL_PERMISSIONS:
            raise InvalidValue(f"unknown permission {permission!r}")
        sql = (
            "INSERT INTO role_permissions (role, permission) VALUES (%s, %s) ON CONFLICT DO NOTHING"
            if grant
            else "DELETE FROM role_permissions WHERE role = %s AND permission = %s"
        )
        with self._transaction("change a role's permissions") as write:
            write.conn.execute(sql, (role, permission))

    # -- tokens ----------------------------------------------------------------------------------

    def create_token(self, user_id: str, kind: TokenKind, *, label: str = "") -> tuple[Token, str]:
        """Personal access tokens need a non-empty label, unique per user (exact match)."""
        check_token_kind(kind)
        rules.check_token_label(label)
        if kind == "pat" and not label.strip():
            raise InvalidValue("a personal access token needs a label")
        plain = passwords.new_token()
        token = Token(new_id(), user_id, kind, label, from_ms(now_ms()))
        with self._transaction("create a token") as write:
            if not write.conn.execute("SELECT 1 FROM users WHERE id = %s", (user_id,)).fetchone():
                raise RecordNotFound(f"user {user_id!r} does not exist")
            if (
                kind == "pat"
                and write.conn.execute(
                    "SELECT 1 FROM tokens WHERE user_id = %s AND kind = 'pat' AND label = %s",
                    (user_id, label),
                ).fetchone()
            ):
                raise AlreadyTaken(f"a personal access token named {label!r} already exists")
            write.conn.execute(
                "INSERT INTO tokens (id, user_id, kind, label, hash, created_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (token.id, user_id, kind, label, passwords.hash_token(plain), to_ms(token.created_at)),
            )
        return token, plain

    def resolve_token(
        self, user_id: str, plain: str, *, session_lifetime: SessionLifetime | None = None
    ) -> Token | None:
        """As SQLiteStore's: an expired session token is deleted; last_used_at kept to a minute."""
        if not plain or len(plain) > MAX_TOKEN_LENGTH:
            return None
        row = self._one(
            "SELECT t.id, t.user_id, t.kind, t.label, t.created_at, t.last_used_at FROM tokens t"
            " JOIN users u ON u.id = t.user_id WHERE t.hash = %s AND t.user_id = %s AND u.active",
            (passwords.hash_token(plain), user_id),
        )
        if row is None:
            return None
        now = now_ms()
        if row[2] == "session" and session_lifetime is not None and token_expired(row, session_lifetime, now):
            with self._transaction("end an expired session") as write:
                write.conn.execute("DELETE FROM tokens WHERE id = %s", (row[0],))
            return None
        if row[5] is None or now - row[5] >= TOKEN_LAST_USED_RESOLUTION_MS:
            with self._transaction("record a token's use") as write:
                write.conn.execute("UPDATE tokens SET last_used_at = %s WHERE id = %s", (now, row[0]))
            row = (*row[:5], now)
        return token_from_row(row)

    def delete_expired_sessions(self, user_id: str, lifetime: SessionLifetime) -> int:
        now = now_ms()
        with self._transaction("delete expired sessions") as write:
            return write.conn.execute(
                "DELETE FROM tokens WHERE user_id = %s AND kind = 'session'"
                " AND (created_at <= %s OR coalesce(last_used_at, created_at) <= %s)",
                (user_id, now - lifetime.max_age_ms, now - lifetime.idle_ms),
            ).rowcount

    def list_tokens(self, user_id: str, kind: TokenKind) -> list[Token]:
        rows = self._all(
            f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE user_id = %s AND kind = %s ORDER BY created_at, id",
            (user_id, kind),
        )
        return [token_from_row(row) for row in rows]

    def delete_token(self, user_id: str, token_id: str) -> bool:
        with self._transaction("delete a token") as write:
            sql = "DELETE FROM tokens WHERE user_id = %s AND id = %s"
            return bool(write.conn.execute(sql, (user_id, token_id)).rowcount)

    def delete_token_by_label(self, user_id: str, label: str, kind: TokenKind = "pat") -> bool:
        with self._transaction("delete a token") as write:
            sql = "DELETE FROM tokens WHERE user_id = %s AND kind = %s AND label = %s"
            return bool(write.conn.execute(sql, (user_id, kind, label)).rowcount)

    # -- OAuth (oauth_grants.OAuthGrants, with pg_rows.OAUTH_SQL's statements) --------------------

    _oauth_sql = OAUTH_SQL

    @contextmanager
    def _oauth_reading(self) -> Iterator[Conn]:
        with self._errors("read the workspace"), self._connection() as conn:
            yield conn

    # -- rooms and subscriptions -----------------------------------------------------------------

    def create_room(
        self,
        type: RoomType,
        name: str,
        *,
        fname: str | None = None,
        creator_id: str | None = None,
        members: Sequence[str] = (),
        topic: str = "",
    ) -> Room:
        rules.check_room_type(type)
        name = check_room_name(name)
        display = check_display_name(fname) if fname and fname.strip() else name
        rules.check_topic(topic)
        member_ids = list(dict.fromkeys([*([creator_id] if creator_id else []), *members]))
        room = Room(new_id(), type, name, display, from_ms(now_ms()), creator_id, topic)
        created = to_ms(room.created_at)
        with self._transaction("create a room") as write:
            found = write.conn.execute(
                "SELECT w FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, n)"
                " WHERE NOT EXISTS (SELECT 1 FROM users WHERE id = w) ORDER BY n LIMIT 1",
                (member_ids,),
            ).fetchone()
            if found:
                raise RecordNotFound(f"user {found[0]!r} does not exist")
            clash = pg_rows.room_name_clash(write.conn, type, name)
            if clash is not None:
                raise AlreadyTaken(clash)
            write.conn.execute(
                "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (room.id, type, name, display, topic, creator_id, created),
            )
            pg_rows.insert_room_name_keys(write.conn, room.id, name)
            write.conn.execute(
                "INSERT INTO subscriptions (user_id, room_id, banned, created_at)"
                " SELECT w, %s, false, %s FROM unnest(%s::text[]) w",
                (room.id, created, member_ids),
            )
        return room

    def get_room(self, room_id: str) -> Room | None:
        row = self._one(f"SELECT {ROOM_COLUMNS} FROM rooms WHERE id = %s", (room_id,))
        return None if row is None else room_from_row(row)

    def get_room_by_name(self, name: str) -> Room | None:
        """An exact name beats an fname; a channel or group beats a direct room; then the oldest."""
        row = self._one(
            f"SELECT {ROOM_COLUMNS} FROM rooms WHERE ascii_fold(name) = %(name)s OR ascii_fold(fname) = %(name)s"
            " ORDER BY ascii_fold(name) = %(name)s DESC, t = 'd', created_at, id LIMIT 1",
            {"name": fold(name.removeprefix("#"))},
        )
        return None if row is None else room_from_row(row)

    def readable_room_by_name(self, user_id: str, name: str) -> Room | None:
        """Among the rooms the user reads only: an exact name beats an fname, a direct room beats a
        channel or group of the same name, then the oldest (as SQLiteStore's, with its reasons)."""
        row = self._one(
            f"SELECT {', '.join('r.' + c for c in ROOM_COLUMNS.split(', '))} FROM rooms r"
            " JOIN subscriptions s ON s.room_id = r.id AND s.user_id = %(user)s AND NOT s.banned"
            " WHERE ascii_fold(r.name) = %(name)s OR ascii_fold(r.fname) = %(name)s"
            " ORDER BY ascii_fold(r.name) = %(name)s DESC, r.t = 'd' DESC, r.created_at, r.id LIMIT 1",
            {"name": fold(name.removeprefix("#")), "user": user_id},
        )
        return None if row is None else room_from_row(row)

    def get_rooms(self, room_ids: Iterable[str]) -> dict[str, Room]:
        rows = self._all(f"SELECT {ROOM_COLUMNS} FROM rooms WHERE id = ANY(%s::text[])", (list(room_ids),))
        return {row[0]: room_from_row(row) for row in rows}

    def find_rooms(
        self,
        text: str,
        *,
        room_ids: Iterable[str] | None = None,
        types: Sequence[RoomType] | None = None,
        limit: int,
    ) -> list[Room]:
        """An empty ``room_ids`` finds nothing (it never means "all rooms")."""
        if limit <= 0:
            return []
        contains, prefix = _like_contains(text.removeprefix("#"))
        sql = [
            f"SELECT {ROOM_COLUMNS} FROM rooms"
            " WHERE (ascii_fold(name) LIKE %(contains)s OR ascii_fold(fname) LIKE %(contains)s)"
        ]
        params: dict[str, Any] = {"contains": contains, "prefix": prefix, "limit": limit}
        if room_ids is not None:
            sql.append("AND id = ANY(%(ids)s::text[])")
            params["ids"] = list(room_ids)
        if types is not None:
            sql.append("AND t = ANY(%(types)s::text[])")
            params["types"] = [rules.check_room_type(t) for t in types]
        sql.append("ORDER BY ascii_fold(name) LIKE %(prefix)s DESC, ascii_fold(name), id LIMIT %(limit)s")
        return [room_from_row(row) for row in self._all(" ".join(sql), params)]

    @staticmethod
    def _require_user_and_room(conn: Conn, user_id: str, room_id: str) -> None:
        if not conn.execute("SELECT 1 FROM users WHERE id = %s", (user_id,)).fetchone():
            raise RecordNotFound(f"user {user_id!r} does not exist")
        if not conn.execute("SELECT 1 FROM rooms WHERE id = %s", (room_id,)).fetchone():
            raise RecordNotFound(f"room {room_id!r} does not exist")

    def subscribe(self, user_id: str, room_id: str) -> Subscription:
        """Idempotent; subscribing again keeps a ban."""
        with self._transaction("subscribe") as write:
            self._require_user_and_room(write.conn, user_id, room_id)
            write.conn.execute(
                "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (%s, %s, false, %s)"
                " ON CONFLICT DO NOTHING",
                (user_id, room_id, now_ms()),
            )
            row = write.conn.execute(
                f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE user_id = %s AND room_id = %s",
                (user_id, room_id),
            ).fetchone()
        assert row is not None  # inserted or kept in this transaction
        return subscription_from_row(row)

    def unsubscribe(self, user_id: str, room_id: str) -> None:
        """Idempotent. A ban outlives unsubscribing, so leaving and re-joining cannot lift it."""
        with self._transaction("unsubscribe") as write:
            write.conn.execute(
                "DELETE FROM subscriptions WHERE user_id = %s AND room_id = %s AND NOT banned",
                (user_id, room_id),
            )

    def set_banned(self, user_id: str, room_id: str, banned: bool) -> None:
        """Banning someone not subscribed records the ban, so a later subscribe stays banned."""
        with self._transaction("ban or unban") as write:
            self._require_user_and_room(write.conn, user_id, room_id)
            if banned:
                write.conn.execute(
                    "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (%s, %s, true, %s)"
                    " ON CONFLICT (user_id, room_id) DO UPDATE SET banned = true",
                    (user_id, room_id, now_ms()),
                )
            else:
                write.conn.execute(
                    "UPDATE subscriptions SET banned = false WHERE user_id = %s AND room_id = %s",
                    (user_id, room_id),
                )

    def get_subscription(self, user_id: str, room_id: str) -> Subscription | None:
        row = self._one(
            f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE user_id = %s AND room_id = %s",
            (user_id, room_id),
        )
        return None if row is None else subscription_from_row(row)

    def subscriptions_of(self, user_id: str, *, include_banned: bool = False) -> list[Subscription]:
        rows = self._all(
            f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE user_id = %s AND (NOT banned OR %s)"
            " ORDER BY created_at, room_id",
            (user_id, include_banned),
        )
        return [subscription_from_row(row) for row in rows]

    def readable_room_ids(self, user_id: str) -> frozenset[str]:
        rows = self._all("SELECT room_id FROM subscriptions WHERE user_id = %s AND NOT banned", (user_id,))
        return frozenset(row[0] for row in rows)

    def members_of(self, room_id: str) -> list[str]:
        """User ids subscribed and not banned, in the order they joined."""
        rows = self._all(
            "SELECT user_id FROM subscriptions WHERE room_id = %s AND NOT banned ORDER BY created_at, user_id",
            (room_id,),
        )
        return [row[0] for row in rows]

    # -- messages --------------------------------------------------------------------------------

    def post_message(
        self,
        room_id: str,
        user_id: str,
        text: str,
        *,
        ts: datetime | None = None,
        message_id: str | None = None,
        tmid: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> Message:
        """As SQLiteStore's: AlreadyTaken for a taken ``message_id``, RecordNotFound for a ``tmid``
        that names no message of this room."""
        check_text(text)
        attachments = rules.check_attachments(attachments)
        ts_ms = now_ms() if ts is None else to_ms(ts)
        message_id = new_id() if message_id is None else rules.check_message_id(message_id)
        with self._transaction("post a message") as write:
            self._require_user_and_room(write.conn, user_id, room_id)
            if write.conn.execute("SELECT 1 FROM messages WHERE id = %s", (message_id,)).fetchone():
                raise AlreadyTaken(f"message {message_id!r} already exists")
            thread = None if tmid is None else _thread_of(write.conn, room_id, tmid)
            write.conn.execute(
                "INSERT INTO messages (id, room_id, user_id, ts, text, tmid) VALUES (%s, %s, %s, %s, %s, %s)",
                (message_id, room_id, user_id, ts_ms, text, thread),
            )
            pg_rows.write_attachments(write.conn, message_id, attachments)
            pg_rows.write_mentions(write.conn, message_id, text)
            message = self._read_one(write.conn, message_id)
            write.events.append(MessageEvent("posted", message))
        return message

    def edit_message(
        self,
        message_id: str,
        text: str,
        *,
        edited_at: datetime | None = None,
        edited_by: str | None = None,
    ) -> Message:
        check_text(text)
        edited_ms = now_ms() if edited_at is None else to_ms(edited_at)
        with self._transaction("edit a message") as write:
            sql = "UPDATE messages SET text = %s, edited_at = %s, edited_by = %s WHERE id = %s"
            if not write.conn.execute(sql, (text, edited_ms, edited_by, message_id)).rowcount:
                raise RecordNotFound(f"message {message_id!r} does not exist")
            pg_rows.write_mentions(write.conn, message_id, text)
            message = self._read_one(write.conn, message_id)
            write.events.append(MessageEvent("edited", message))
        return message

    def delete_message(self, message_id: str) -> None:
        """Listeners get the message as it was; a thread's replies stay."""
        with self._transaction("delete a message") as write:
            found = pg_rows.read_messages(write.conn, "WHERE m.id = %s", (message_id,))
            if not found:
                raise RecordNotFound(f"message {message_id!r} does not exist")
            write.conn.execute("DELETE FROM messages WHERE id = %s", (message_id,))
            write.events.append(MessageEvent("deleted", found[0]))

    def set_pinned(self, message_id: str, pinned_by: str | None) -> Message:
        with self._transaction("pin a message") as write:
            if (
                pinned_by is not None
                and not write.conn.execute("SELECT 1 FROM users WHERE id = %s", (pinned_by,)).fetchone()
            ):
                raise RecordNotFound(f"user {pinned_by!r} does not exist")
            pinned_at = None if pinned_by is None else now_ms()
            sql = "UPDATE messages SET pinned_at = %s, pinned_by = %s WHERE id = %s"
            if not write.conn.execute(sql, (pinned_at, pinned_by, message_id)).rowcount:
                raise RecordNotFound(f"message {message_id!r} does not exist")
            message = self._read_one(write.conn, message_id)
            write.events.append(MessageEvent("edited", message))
        return message

    def set_reaction(self, message_id: str, user_id: str, emoji: str, react: bool) -> Message:
        emoji = rules.check_emoji(emoji)
        with self._transaction("react to a message") as write:
            if not write.conn.execute("SELECT 1 FROM messages WHERE id = %s", (message_id,)).fetchone():
                raise RecordNotFound(f"message {message_id!r} does not exist")
            if not write.conn.execute("SELECT 1 FROM users WHERE id = %s", (user_id,)).fetchone():
                raise RecordNotFound(f"user {user_id!r} does not exist")
            if react:
                write.conn.execute(
                    "INSERT INTO reactions (message_id, emoji, user_id, ts) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    (message_id, emoji, user_id, now_ms()),
                )
            else:
                write.conn.execute(
                    "DELETE FROM reactions WHERE message_id = %s AND emoji = %s AND user_id = %s",
                    (message_id, emoji, user_id),
                )
            message = self._read_one(write.conn, message_id)
            # Listeners (the search index's `has:reaction`) hear it at once, not at the next log read.
            write.events.append(MessageEvent("edited", message))
        return message

    @staticmethod
    def _read_one(conn: Conn, message_id: str) -> Message:
        return pg_rows.read_messages(conn, "WHERE m.id = %s", (message_id,))[0]

    def _messages(self, where: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Message]:
        with self._errors("read the workspace"), self._connection() as conn:
            return pg_rows.read_messages(conn, where, params)

    def get_message(self, message_id: str) -> Message | None:
        found = self._messages("WHERE m.id = %s", (message_id,))
        return found[0] if found else None

    def get_messages(self, message_ids: Iterable[str]) -> dict[str, Message]:
        found = self._messages("WHERE m.id = ANY(%s::text[])", (list(message_ids),))
        return {message.id: message for message in found}

    def room_messages(
        self,
        room_id: str,
        *,
        before: datetime | None = None,
        after: datetime | None = None,
        inclusive: bool = False,
        offset: int = 0,
        limit: int,
    ) -> list[Message]:
        """Up to ``limit`` messages between ``after`` and ``before`` (exclusive unless ``inclusive``),
        newest first, skipping the ``offset`` newest; thread replies included."""
        if limit <= 0:
            return []
        where = ["WHERE m.room_id = %(room)s"]
        params: dict[str, Any] = {"room": room_id, "limit": limit, "offset": max(0, offset)}
        if before is not None:
            where.append("AND m.ts <= %(before)s" if inclusive else "AND m.ts < %(before)s")
            params["before"] = to_ms(before)
        if after is not None:
            where.append("AND m.ts >= %(after)s" if inclusive else "AND m.ts > %(after)s")
            params["after"] = to_ms(after)
        where.append("ORDER BY m.ts DESC, m.id DESC LIMIT %(limit)s OFFSET %(offset)s")
        return self._messages(" ".join(where), params)

    def messages_around(self, message: Message, *, before: int, after: int) -> list[Message]:
        key = (to_ms(message.ts), message.id)
        older = self._messages(
            "WHERE m.room_id = %s AND (m.ts, m.id) < (%s, %s) ORDER BY m.ts DESC, m.id DESC LIMIT %s",
            (message.room_id, *key, max(0, before)),
        )
        newer = self._messages(
            "WHERE m.room_id = %s AND (m.ts, m.id) > (%s, %s) ORDER BY m.ts, m.id LIMIT %s",
            (message.room_id, *key, max(0, after)),
        )
        return [*reversed(older), message, *newer]

    def earlier_in_conversation(self, message: Message, *, limit: int, within: timedelta) -> list[Message]:
        """As SQLiteStore's: a reply's thread before it, or the room's messages just before it."""
        if limit <= 0:
            return []
        key = (to_ms(message.ts), message.id)
        if message.tmid is not None:
            replies = (
                self._messages(
                    "WHERE m.tmid = %s AND (m.ts, m.id) < (%s, %s) ORDER BY m.ts DESC, m.id DESC LIMIT %s",
                    (message.tmid, *key, limit - 1),
                )
                if limit > 1
                else []
            )
            parent = self._messages("WHERE m.id = %s", (message.tmid,))
            return [*parent, *reversed(replies)][-limit:]
        before = self._messages(
            "WHERE m.room_id = %s AND m.tmid IS NULL AND (m.ts, m.id) < (%s, %s) AND m.ts >= %s"
            " ORDER BY m.ts DESC, m.id DESC LIMIT %s",
            (message.room_id, *key, to_ms(message.ts - within), limit),
        )
        return list(reversed(before))

    def thread_messages(self, tmid: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        total = self._count("SELECT count(*) FROM messages WHERE tmid = %s", (tmid,))
        replies = self._messages(
            "WHERE m.tmid = %s ORDER BY m.ts, m.id LIMIT %s OFFSET %s", (tmid, max(0, limit), max(0, offset))
        )
        return replies, total

    def reply_position(self, reply: Message) -> int:
        if reply.tmid is None:
            return 0
        return self._count(
            "SELECT count(*) FROM messages WHERE tmid = %s AND (ts, id) < (%s, %s)",
            (reply.tmid, to_ms(reply.ts), reply.id),
        )

    def thread_summaries(self, tmids: Iterable[str]) -> dict[str, ThreadSummary]:
        rows = self._all(
            "SELECT tmid, count(*), max(ts), array_agg(user_id ORDER BY ts, id) FROM messages"
            " WHERE tmid = ANY(%s::text[]) GROUP BY tmid",
            (list(tmids),),
        )
        return {
            tmid: ThreadSummary(tmid, int(count), from_ms(last), tuple(dict.fromkeys(users)))
            for tmid, count, last, users in rows
        }

    def room_threads(self, room_id: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        total = self._count(
            "SELECT count(DISTINCT tmid) FROM messages WHERE room_id = %s AND tmid IS NOT NULL", (room_id,)
        )
        order = self._all(
            "SELECT tmid FROM messages WHERE room_id = %s AND tmid IS NOT NULL GROUP BY tmid"
            " ORDER BY max(ts) DESC, tmid LIMIT %s OFFSET %s",
            (room_id, max(0, limit), max(0, offset)),
        )
        parents = self.get_messages(row[0] for row in order)
        return [parents[row[0]] for row in order if row[0] in parents], total

    def pinned_messages(self, room_id: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        total = self._count(
            "SELECT count(*) FROM messages WHERE room_id = %s AND pinned_at IS NOT NULL", (room_id,)
        )
        found = self._messages(
            "WHERE m.room_id = %s AND m.pinned_at IS NOT NULL ORDER BY m.pinned_at DESC, m.id LIMIT %s OFFSET %s",
            (room_id, max(0, limit), max(0, offset)),
        )
        return found, total

    def find_room_messages(self, room_id: str, text: str, *, offset: int = 0, limit: int) -> list[Message]:
        """Case-insensitive (ASCII, as SQLite's LIKE) literal substring, newest first."""
        contains, _ = _like_contains(text)
        return self._messages(
            "WHERE m.room_id = %s AND ascii_fold(m.text) LIKE %s ORDER BY m.ts DESC, m.id DESC LIMIT %s OFFSET %s",
            (room_id, contains, max(0, limit), max(0, offset)),
        )

    def count_messages(self) -> int:
        return self._count("SELECT count(*) FROM messages")

    def earliest_message_at(self, room_ids: Iterable[str]) -> datetime | None:
        # One index seek per room on messages_room_ts, never a scan of the messages.
        row = self._one(
            "SELECT min((SELECT min(ts) FROM messages WHERE room_id = r)) FROM unnest(%s::text[]) r",
            (list(room_ids),),
        )
        return None if row is None or row[0] is None else from_ms(row[0])

    def shares_a_room(self, user_id: str, username: str) -> bool:
        row = self._one(
            "SELECT 1 FROM users u JOIN subscriptions theirs ON theirs.user_id = u.id AND NOT theirs.banned"
            " JOIN subscriptions mine ON mine.room_id = theirs.room_id AND mine.user_id = %s AND NOT mine.banned"
            " WHERE ascii_fold(u.username) = %s LIMIT 1",
            (user_id, fold(username)),
        )
        return row is not None

    def iter_messages(self, *, batch_size: int = 1000) -> Iterator[list[Message]]:
        """Keyset pagination on (ts, id): each batch is one indexed range read, never an OFFSET scan."""
        if batch_size <= 0:
            raise InvalidValue("batch_size must be positive")
        after: tuple[int, str] = (-(2**62), "")
        while True:
            batch = self._messages(
                "WHERE (m.ts, m.id) > (%s, %s) ORDER BY m.ts, m.id LIMIT %s", (*after, batch_size)
            )
            if not batch:
                return
            yield batch
            after = (to_ms(batch[-1].ts), batch[-1].id)

    def latest_message_change(self) -> int:
        return self._count("SELECT coalesce(max(change), 0) FROM message_changes")

    def message_changes_since(self, change: int, *, limit: int) -> MessageChanges:
        if limit <= 0:
            raise InvalidValue("limit must be positive")
        rows = self._all(
            "SELECT change, message_id FROM message_changes WHERE change > %s ORDER BY change LIMIT %s",
            (change, limit),
        )
        oldest = self._one("SELECT min(change) FROM message_changes")
        # A gap between the asked number and the oldest change kept means some were pruned unread.
        complete = oldest is None or oldest[0] is None or oldest[0] <= change + 1
        ids = dict.fromkeys(row[1] for row in reversed(rows))  # each id once, at its last change
        return MessageChanges(
            message_ids=tuple(reversed(ids)), last=int(rows[-1][0]) if rows else change, complete=complete
        )

    def add_message_listener(self, listener: MessageListener) -> None:
        """Takes effect from the next write on; writes already running report to the listeners they saw."""
        with self._write_lock:
            self._queue.add(listener)

    # -- answers ---------------------------------------------------------------------------------

    def save_answer(self, answer: StoredAnswer) -> None:
        with self._transaction("store the answer") as write:
            pg_rows.insert_answer(write.conn, answer)

    def get_answer(self, answer_id: str) -> StoredAnswer | None:
        with self._errors("read the answer"), self._connection() as conn:
            return pg_rows.read_answer(conn, answer_id)

    def share_answer(self, answer_id: str) -> StoredAnswer:
        with self._transaction("share the answer") as write:
            write.conn.execute(
                "UPDATE answers SET shared_at = %s WHERE id = %s AND shared_at IS NULL", (now_ms(), answer_id)
            )
            answer = pg_rows.read_answer(write.conn, answer_id)
        if answer is None:
            raise RecordNotFound(f"no answer {answer_id!r}")
        return answer

    def rate_answer(self, answer_id: str, user_id: str, rating: str, reason: str = "") -> AnswerFeedback:
        checked_rating, checked_reason = rules.check_feedback(rating, reason)
        with self._transaction("store the feedback") as write:
            if write.conn.execute("SELECT 1 FROM answers WHERE id = %s", (answer_id,)).fetchone() is None:
                raise RecordNotFound(f"no answer {answer_id!r}")
            return pg_rows.upsert_feedback(
                write.conn, answer_id, user_id, checked_rating, checked_reason, now_ms()
            )

    def answer_feedback(self, answer_id: str, user_id: str) -> AnswerFeedback | None:
        with self._errors("read the feedback"), self._connection() as conn:
            return pg_rows.read_feedback(conn, answer_id, user_id)

    def feedback_since(self, since: datetime | None) -> Sequence[tuple[AnswerFeedback, StoredAnswer, str]]:
        with self._errors("read the feedback"), self._connection() as conn:
            return pg_rows.feedback_since(conn, since)

    # -- mirrors of other systems ----------------------------------------------------------------

    def link_external(
        self, origin: str, kind: ExternalKind, external_id: str, local_id: str, *, how: LinkHow
    ) -> None:
        with self._transaction("link an external id") as write:
            pg_rows.link_external(write.conn, origin, kind, external_id, local_id, how)

    def external_ids(self, origin: str, kind: ExternalKind) -> dict[str, str]:
        with self._errors("read the workspace"), self._connection() as conn:
            return pg_rows.external_ids(conn, origin, kind)

    def external_links(self, origin: str, kind: ExternalKind) -> dict[str, ExternalLink]:
        with self._errors("read the workspace"), self._connection() as conn:
            return pg_rows.external_links(conn, origin, kind)

    def update_room(
        self, room_id: str, *, name: str | None = None, fname: str | None = None, topic: str | None = None
    ) -> Room:
        with self._transaction("update a room") as write:
            pg_rows.rename_room(write.conn, room_id, name=name, fname=fname, topic=topic)
            row = write.conn.execute(f"SELECT {ROOM_COLUMNS} FROM rooms WHERE id = %s", (room_id,)).fetchone()
        assert row is not None  # rename_room raised RecordNotFound otherwise
        return room_from_row(row)

    def set_display_name(self, user_id: str, name: str) -> None:
        display = check_display_name(name.strip())
        with self._transaction("rename a user") as write:
            if (
                not display
                or not write.conn.execute(
                    "UPDATE users SET name = %s WHERE id = %s", (display, user_id)
                ).rowcount
            ):
                raise RecordNotFound(f"user {user_id!r} does not exist")

    def set_members(self, room_id: str, user_ids: Sequence[str]) -> tuple[int, int]:
        with self._transaction("set a room's members") as write:
            return pg_rows.set_members(write.conn, room_id, user_ids, now_ms())

    def add_members(self, room_id: str, user_ids: Sequence[str]) -> int:
        with self._transaction("add members to a room") as write:
            return pg_rows.add_members(write.conn, room_id, user_ids, now_ms())

    def origin_message_ids(self, room_id: str, origin: str, *, start: datetime, end: datetime) -> list[str]:
        rows = self._all(
            "SELECT id FROM messages WHERE room_id = %s AND origin = %s AND ts >= %s AND ts < %s ORDER BY ts, id",
            (room_id, origin, to_ms(start), to_ms(end)),
        )
        return [row[0] for row in rows]

    def set_source_urls(self, urls: Mapping[str, str | None]) -> int:
        if not urls:
            return 0
        with self._transaction("set source links") as write:
            return pg_rows.set_source_urls(write.conn, urls)

    def get_sync_state(self, origin: str) -> dict[str, Any] | None:
        with self._errors("read the workspace"), self._connection() as conn:
            return pg_rows.read_sync_state(conn, origin)

    def set_sync_state(self, origin: str, state: Mapping[str, Any]) -> None:
        with self._transaction("save a sync state") as write:
            pg_rows.write_sync_state(write.conn, origin, state, now_ms())

    # -- bulk import -----------------------------------------------------------------------------

    def import_messages(self, rows: Sequence[ImportRow]) -> ImportResult:
        """One batch in one transaction, idempotently (``import_batch.run_import`` has the rules).

        Raises:
            StorageFailure: the database failed; nothing of this batch was written.
        """
        return run_import(rows, self._import_transaction)

    @contextmanager
    def _import_transaction(self) -> Iterator[tuple[PgImportTables, list[MessageEvent] | None]]:
        with self._transaction("import messages") as write:
            yield PgImportTables(write.conn), write.events if write.wants_events else None
