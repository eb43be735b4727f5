"""SQLiteStore: the embedded workspace store, one SQLite file in WAL mode.

Threads: the ASGI server calls the store from the event loop and from worker threads. Each thread gets
its own connection (WAL lets readers run beside the writer), and every write takes one process-wide
lock around a ``BEGIN IMMEDIATE`` transaction, so writers in this process queue on the lock instead of
spinning on SQLite's busy handler; ``BUSY_TIMEOUT_MS`` only bounds the wait for *other* processes.

Listeners run after the commit, outside the write lock, in commit order (``listeners.py``): each
writer queues its events while it still holds the write lock, and a write returns only once its
events are delivered.

Errors: ``sqlite3`` exceptions never leave this module. "database or disk is full" and "database is
locked" become ``StorageFailure`` with a message that says so; constraint failures become
``AlreadyTaken``, ``RecordNotFound`` or ``InvalidValue``.

Usage::

    store = SQLiteStore(data_dir / "workspace.db")
    alice = store.create_user("alice", password="s3cret")
    ops = store.create_room("c", "ops", creator_id=alice.id)
    store.post_message(ops.id, alice.id, "deploy finished")
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from ai_search import MAX_ROOM_SEARCH_PATTERN_LENGTH

from . import answer_rows, message_rows, oauth_rows, passwords, rules, schema, sources
from .base import AlreadyTaken, InvalidValue, MessageListener, RecordNotFound, StorageFailure
from .import_batch import run_import
from .listeners import ListenerQueue
from .oauth_grants import OAuthGrants
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
from .rules import check_display_name, check_room_name, check_text, from_ms, new_id, now_ms, to_ms
from .sqlite_import import SQLiteImportTables

__all__ = [
    "BUSY_TIMEOUT_MS",
    "MAX_TOKEN_LENGTH",
    "TOKEN_LAST_USED_RESOLUTION_MS",
    "SQLiteStore",
]

# How long a write waits for another process's write lock before failing (milliseconds).
BUSY_TIMEOUT_MS = 5000

_LIKE_SPECIAL = re.compile(r"([\\%_])")
# Subscribing twice is a no-op that keeps the first subscription, ban included.
_SUBSCRIBE = "INSERT OR IGNORE INTO subscriptions (user_id, room_id, banned, created_at) VALUES (?, ?, 0, ?)"
_log = logging.getLogger(__name__)

Row = tuple[Any, ...]


def _like_contains(text: str) -> tuple[str, str]:
    """LIKE patterns (contains, starts-with) matching ``text`` literally: % and _ are escaped."""
    literal = _LIKE_SPECIAL.sub(r"\\\1", text[:MAX_ROOM_SEARCH_PATTERN_LENGTH])
    return f"%{literal}%", f"{literal}%"


def _json_list(values: Iterable[str]) -> str:
    # Lists travel as one JSON parameter read by json_each(), so their length never meets SQLite's
    # limit on bound variables.
    return json.dumps(list(values))


def _user(row: Row) -> User:
    return user_from_row(row, schema.roles_from_column(row[3]))


def _thread_of(conn: sqlite3.Connection, room_id: str, tmid: str) -> str:
    """The thread a reply to ``tmid`` joins: ``tmid`` itself, or its own thread when it is a reply.

    Raises RecordNotFound when no message of ``room_id`` has that id: a message of another room answers the
    same as none, so a reply never reveals what other rooms hold.
    """
    row = conn.execute("SELECT tmid FROM messages WHERE id = ? AND room_id = ?", (tmid, room_id)).fetchone()
    if row is None:
        raise RecordNotFound(f"no message {tmid!r} in this room to reply to")
    return str(row[0] or tmid)


class _Write:
    """What a write transaction hands its body: the connection, and the events to deliver after commit."""

    __slots__ = ("conn", "events", "wants_events")

    def __init__(self, conn: sqlite3.Connection, wants_events: bool) -> None:
        self.conn = conn
        self.wants_events = wants_events
        self.events: list[MessageEvent] = []


class SQLiteStore(OAuthGrants):
    """The ``Store`` on one SQLite file. See the module docstring for threads, listeners and errors.

    Raises:
        StorageFailure: the file cannot be opened, refuses WAL mode, or has a newer schema.
    """

    def __init__(self, path: Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._queue = ListenerQueue()
        self._closed = False
        schema.migrate(self._connection())

    @property
    def data_dir(self) -> Path:
        """The folder of the database file: the search index is kept beside it."""
        return self.path.parent

    # -- plumbing --------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageFailure("the workspace store is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = schema.connect(self.path, busy_timeout_ms=self._busy_timeout_ms)
            with self._connections_lock:
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as error:
            text = str(error)
            if "UNIQUE" in text:
                raise AlreadyTaken(f"cannot {action}: it already exists ({text})") from error
            if "FOREIGN KEY" in text:
                raise RecordNotFound(
                    f"cannot {action}: a user or room it refers to does not exist"
                ) from error
            raise InvalidValue(f"cannot {action}: {text}") from error
        except sqlite3.Error as error:
            text = str(error)
            if "full" in text:
                message = f"cannot {action}: the workspace database or its disk is full ({text})"
            elif "locked" in text or "busy" in text:
                message = (
                    f"cannot {action}: the workspace database stayed locked by another process "
                    f"for more than {self._busy_timeout_ms} ms"
                )
            else:
                message = f"cannot {action}: the workspace database failed ({text})"
            raise StorageFailure(message) from error

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._errors("read the workspace"):
            return self._connection().execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        with self._errors("read the workspace"):
            row: Row | None = self._connection().execute(sql, params).fetchone()
            return row

    @contextmanager
    def _transaction(self, action: str) -> Iterator[_Write]:
        conn = self._connection()
        listeners = self._queue.listeners
        write = _Write(conn, wants_events=bool(listeners))
        with self._errors(action), self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield write
                conn.execute("COMMIT")
            except BaseException:
                self._rollback(conn)
                raise
            self._queue.enqueue(listeners, write.events)
        if write.events and listeners:
            self._queue.deliver()

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        # SQLite rolls back by itself after some errors (SQLITE_FULL among them).
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                _log.exception("rolling back a failed write failed too")

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Closes every thread's connection. Idempotent; the store is unusable afterwards."""
        if self._closed:
            return
        self._closed = True
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with suppress(sqlite3.Error):  # only an optimisation hint; closing matters more
                conn.execute("PRAGMA optimize")
            conn.close()

    def __enter__(self) -> SQLiteStore:
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
            if write.conn.execute("SELECT 1 FROM users WHERE username = ?", (username,)).fetchone():
                raise AlreadyTaken(f"username {username!r} is already taken")
            write.conn.execute(
                "INSERT INTO users (id, username, name, password_hash, roles, created_at, active)"
                " VALUES (?, ?, ?, ?, ?, ?, 1)",
                (user_id, username, display, password_hash, schema.roles_to_column(checked_roles), created),
            )
        return User(user_id, username, display, checked_roles, from_ms(created), password_hash is not None)

    def get_user(self, user_id: str) -> User | None:
        row = self._one(f"SELECT {USER_COLUMNS} FROM users WHERE id = ?", (user_id,))
        return None if row is None else _user(row)

    def get_user_by_username(self, username: str) -> User | None:
        username = username.removeprefix("@")
        row = self._one(f"SELECT {USER_COLUMNS} FROM users WHERE username = ?", (username,))
        return None if row is None else _user(row)

    def get_users(self, user_ids: Iterable[str]) -> dict[str, User]:
        rows = self._all(
            f"SELECT {USER_COLUMNS} FROM users WHERE id IN (SELECT value FROM json_each(?))",
            (_json_list(user_ids),),
        )
        return {row[0]: _user(row) for row in rows}

    def find_users(
        self,
        text: str,
        *,
        limit: int,
        exclude: Sequence[str] = (),
        user_ids: Iterable[str] | None = None,
    ) -> list[User]:
        """Active users only; ``exclude`` holds usernames (case-insensitive), as upstream's autocomplete
        ``exception`` list does; ``user_ids``, when given, restricts the search to those users."""
        if limit <= 0:
            return []
        contains, prefix = _like_contains(text.removeprefix("@"))
        restrict = None if user_ids is None else _json_list(user_ids)
        rows = self._all(
            f"SELECT {USER_COLUMNS} FROM users"
            " WHERE active = 1 AND (username LIKE ?1 ESCAPE '\\' OR name LIKE ?1 ESCAPE '\\')"
            " AND username NOT IN (SELECT value FROM json_each(?3))"
            " AND (?5 IS NULL OR id IN (SELECT value FROM json_each(?5)))"
            " ORDER BY username LIKE ?2 ESCAPE '\\' DESC, username, id LIMIT ?4",
            (contains, prefix, _json_list(name.removeprefix("@") for name in exclude), limit, restrict),
        )
        return [_user(row) for row in rows]

    def verify_password(self, username: str, password: str) -> User | None:
        """The user when the password matches and the user is active.

        Unknown users, users without a password and inactive users cost one scrypt run like everyone
        else; empty or over-long passwords are refused before the lookup, the same way for all.
        """
        if not password or len(password) > passwords.MAX_PASSWORD_LENGTH:
            return None
        row = self._one(
            f"SELECT {USER_COLUMNS}, password_hash FROM users WHERE username = ?",
            (username.removeprefix("@"),),
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

    def set_password(self, user_id: str, password: str) -> None:
        password_hash = passwords.hash_password(password)
        with self._transaction("set a password") as write:
            updated = write.conn.execute(
                "UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id)
            ).rowcount
            if not updated:
                raise RecordNotFound(f"user {user_id!r} does not exist")

    def set_roles(self, user_id: str, roles: Sequence[str]) -> None:
        column = schema.roles_to_column(rules.check_roles(roles))
        with self._transaction("set roles") as write:
            if not write.conn.execute("UPDATE users SET roles = ? WHERE id = ?", (column, user_id)).rowcount:
                raise RecordNotFound(f"user {user_id!r} does not exist")

    def set_active(self, user_id: str, active: bool) -> None:
        """Deactivated users cannot log in, their tokens stop resolving, and they hold no permission."""
        with self._transaction("set a user active") as write:
            updated = write.conn.execute(
                "UPDATE users SET active = ? WHERE id = ?", (int(active), user_id)
            ).rowcount
            if not updated:
                raise RecordNotFound(f"user {user_id!r} does not exist")

    def permissions_of(self, user: User) -> frozenset[str]:
        """Inactive users have none; 'admin' has every permission, whatever the table says."""
        if not user.active:
            return frozenset()
        if "admin" in user.roles:
            return rules.ALL_PERMISSIONS
        rows = self._all(
            "SELECT DISTINCT permission FROM role_permissions WHERE role IN (SELECT value FROM json_each(?))",
            (_json_list(user.roles),),
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
            "INSERT OR IGNORE INTO role_permissions (role, permission) VALUES (?, ?)"
            if grant
            else "DELETE FROM role_permissions WHERE role = ? AND permission = ?"
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
            if not write.conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone():
                raise RecordNotFound(f"user {user_id!r} does not exist")
            if (
                kind == "pat"
                and write.conn.execute(
                    "SELECT 1 FROM tokens WHERE user_id = ? AND kind = 'pat' AND label = ?", (user_id, label)
                ).fetchone()
            ):
                raise AlreadyTaken(f"a personal access token named {label!r} already exists")
            write.conn.execute(
                "INSERT INTO tokens (id, user_id, kind, label, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (token.id, user_id, kind, label, passwords.hash_token(plain), to_ms(token.created_at)),
            )
        return token, plain

    def resolve_token(
        self, user_id: str, plain: str, *, session_lifetime: SessionLifetime | None = None
    ) -> Token | None:
        """The token when ``plain`` belongs to ``user_id`` and the user is active; a session token
        past ``session_lifetime`` is deleted instead. The idle time counts from ``last_used_at``, which
        is kept to TOKEN_LAST_USED_RESOLUTION_MS (a minute), far finer than any lifetime in days."""
        if not plain or len(plain) > MAX_TOKEN_LENGTH:
            return None
        row = self._one(
            "SELECT t.id, t.user_id, t.kind, t.label, t.created_at, t.last_used_at FROM tokens t"
            " JOIN users u ON u.id = t.user_id WHERE t.hash = ? AND t.user_id = ? AND u.active = 1",
            (passwords.hash_token(plain), user_id),
        )
        if row is None:
            return None
        now = now_ms()
        if row[2] == "session" and session_lifetime is not None and token_expired(row, session_lifetime, now):
            with self._transaction("end an expired session") as write:
                write.conn.execute("DELETE FROM tokens WHERE id = ?", (row[0],))
            return None
        if row[5] is None or now - row[5] >= TOKEN_LAST_USED_RESOLUTION_MS:
            with self._transaction("record a token's use") as write:
                write.conn.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", (now, row[0]))
            row = (*row[:5], now)
        return token_from_row(row)

    def delete_expired_sessions(self, user_id: str, lifetime: SessionLifetime) -> int:
        now = now_ms()
        with self._transaction("delete expired sessions") as write:
            return write.conn.execute(
                "DELETE FROM tokens WHERE user_id = ? AND kind = 'session'"
                " AND (created_at <= ? OR coalesce(last_used_at, created_at) <= ?)",
                (user_id, now - lifetime.max_age_ms, now - lifetime.idle_ms),
            ).rowcount

    def list_tokens(self, user_id: str, kind: TokenKind) -> list[Token]:
        rows = self._all(
            f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE user_id = ? AND kind = ? ORDER BY created_at, id",
            (user_id, kind),
        )
        return [token_from_row(row) for row in rows]

    def delete_token(self, user_id: str, token_id: str) -> bool:
        with self._transaction("delete a token") as write:
            sql = "DELETE FROM tokens WHERE user_id = ? AND id = ?"
            return bool(write.conn.execute(sql, (user_id, token_id)).rowcount)

    def delete_token_by_label(self, user_id: str, label: str, kind: TokenKind = "pat") -> bool:
        with self._transaction("delete a token") as write:
            sql = "DELETE FROM tokens WHERE user_id = ? AND kind = ? AND label = ?"
            return bool(write.conn.execute(sql, (user_id, kind, label)).rowcount)

    # -- OAuth (oauth_grants.OAuthGrants, with oauth_rows.SQLITE_SQL's statements) ---------------

    _oauth_sql = oauth_rows.SQLITE_SQL

    @contextmanager
    def _oauth_reading(self) -> Iterator[sqlite3.Connection]:
        with self._errors("read the workspace"):
            yield self._connection()

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
                "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT id FROM users)",
                (_json_list(member_ids),),
            ).fetchall()
            if found:
                raise RecordNotFound(f"user {found[0][0]!r} does not exist")
            clash = schema.room_name_clash(write.conn, type, name)
            if clash is not None:
                raise AlreadyTaken(clash)
            write.conn.execute(
                "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (room.id, type, name, display, topic, creator_id, created),
            )
            schema.insert_room_name_keys(write.conn, room.id, name)
            write.conn.executemany(
                "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (?, ?, 0, ?)",
                [(member, room.id, created) for member in member_ids],
            )
        return room

    def get_room(self, room_id: str) -> Room | None:
        row = self._one(f"SELECT {ROOM_COLUMNS} FROM rooms WHERE id = ?", (room_id,))
        return None if row is None else room_from_row(row)

    def get_room_by_name(self, name: str) -> Room | None:
        """An exact name beats an fname; a channel or group beats a direct room; then the oldest."""
        name = name.removeprefix("#")
        row = self._one(
            f"SELECT {ROOM_COLUMNS} FROM rooms WHERE name = ?1 OR fname = ?1"
            " ORDER BY name = ?1 DESC, t = 'd', created_at, id LIMIT 1",
            (name,),
        )
        return None if row is None else room_from_row(row)

    def readable_room_by_name(self, user_id: str, name: str) -> Room | None:
        """Among the rooms the user reads (subscribed, not banned) only: an exact name beats an fname;
        a direct room beats a channel or group of the same name, so a name that meant a DM never
        comes to mean another room; then the oldest. One leading '#' is ignored."""
        name = name.removeprefix("#")
        row = self._one(
            f"SELECT {', '.join('r.' + c for c in ROOM_COLUMNS.split(', '))} FROM rooms r"
            " JOIN subscriptions s ON s.room_id = r.id AND s.user_id = ?2 AND s.banned = 0"
            " WHERE r.name = ?1 OR r.fname = ?1"
            " ORDER BY r.name = ?1 DESC, r.t = 'd' DESC, r.created_at, r.id LIMIT 1",
            (name, user_id),
        )
        return None if row is None else room_from_row(row)

    def get_rooms(self, room_ids: Iterable[str]) -> dict[str, Room]:
        rows = self._all(
            f"SELECT {ROOM_COLUMNS} FROM rooms WHERE id IN (SELECT value FROM json_each(?))",
            (_json_list(room_ids),),
        )
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
            f"SELECT {ROOM_COLUMNS} FROM rooms WHERE (name LIKE ? ESCAPE '\\' OR fname LIKE ? ESCAPE '\\')"
        ]
        params: list[Any] = [contains, contains]
        if room_ids is not None:
            sql.append("AND id IN (SELECT value FROM json_each(?))")
            params.append(_json_list(room_ids))
        if types is not None:
            sql.append("AND t IN (SELECT value FROM json_each(?))")
            params.append(_json_list(rules.check_room_type(t) for t in types))
        sql.append("ORDER BY name LIKE ? ESCAPE '\\' DESC, name, id LIMIT ?")
        params += [prefix, limit]
        return [room_from_row(row) for row in self._all(" ".join(sql), params)]

    def _require_user_and_room(self, conn: sqlite3.Connection, user_id: str, room_id: str) -> None:
        if not conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone():
            raise RecordNotFound(f"user {user_id!r} does not exist")
        if not conn.execute("SELECT 1 FROM rooms WHERE id = ?", (room_id,)).fetchone():
            raise RecordNotFound(f"room {room_id!r} does not exist")

    def subscribe(self, user_id: str, room_id: str) -> Subscription:
        """Idempotent; subscribing again keeps a ban."""
        with self._transaction("subscribe") as write:
            self._require_user_and_room(write.conn, user_id, room_id)
            write.conn.execute(_SUBSCRIBE, (user_id, room_id, now_ms()))
            row = write.conn.execute(
                f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE user_id = ? AND room_id = ?",
                (user_id, room_id),
            ).fetchone()
        return subscription_from_row(row)

    def unsubscribe(self, user_id: str, room_id: str) -> None:
        """Idempotent. A ban outlives unsubscribing, so leaving and re-joining cannot lift it."""
        with self._transaction("unsubscribe") as write:
            write.conn.execute(
                "DELETE FROM subscriptions WHERE user_id = ? AND room_id = ? AND banned = 0",
                (user_id, room_id),
            )

    def set_banned(self, user_id: str, room_id: str, banned: bool) -> None:
        """Banning someone not subscribed records the ban, so a later subscribe stays banned."""
        with self._transaction("ban or unban") as write:
            self._require_user_and_room(write.conn, user_id, room_id)
            if banned:
                write.conn.execute(
                    "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (?, ?, 1, ?)"
                    " ON CONFLICT (user_id, room_id) DO UPDATE SET banned = 1",
                    (user_id, room_id, now_ms()),
                )
            else:
                write.conn.execute(
                    "UPDATE subscriptions SET banned = 0 WHERE user_id = ? AND room_id = ?",
                    (user_id, room_id),
                )

    def get_subscription(self, user_id: str, room_id: str) -> Subscription | None:
        row = self._one(
            f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE user_id = ? AND room_id = ?",
            (user_id, room_id),
        )
        return None if row is None else subscription_from_row(row)

    def subscriptions_of(self, user_id: str, *, include_banned: bool = False) -> list[Subscription]:
        # banned <= 0 keeps only the unbanned rows; banned <= 1 keeps all.
        rows = self._all(
            f"SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE user_id = ? AND banned <= ?"
            " ORDER BY created_at, room_id",
            (user_id, int(include_banned)),
        )
        return [subscription_from_row(row) for row in rows]

    def readable_room_ids(self, user_id: str) -> frozenset[str]:
        rows = self._all("SELECT room_id FROM subscriptions WHERE user_id = ? AND banned = 0", (user_id,))
        return frozenset(row[0] for row in rows)

    def members_of(self, room_id: str) -> list[str]:
        """User ids subscribed and not banned, in the order they joined."""
        rows = self._all(
            "SELECT user_id FROM subscriptions WHERE room_id = ? AND banned = 0 ORDER BY created_at, user_id",
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
        """``ts`` is kept to the millisecond. Raises AlreadyTaken when ``message_id`` is taken, RecordNotFound when
        ``tmid`` names no message of this room (a reply to a reply joins the first message's thread)."""
        check_text(text)
        attachments = rules.check_attachments(attachments)
        ts_ms = now_ms() if ts is None else to_ms(ts)
        message_id = new_id() if message_id is None else rules.check_message_id(message_id)
        with self._transaction("post a message") as write:
            self._require_user_and_room(write.conn, user_id, room_id)
            if write.conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone():
                raise AlreadyTaken(f"message {message_id!r} already exists")
            thread = None if tmid is None else _thread_of(write.conn, room_id, tmid)
            write.conn.execute(
                "INSERT INTO messages (id, room_id, user_id, ts, text, tmid) VALUES (?, ?, ?, ?, ?, ?)",
                (message_id, room_id, user_id, ts_ms, text, thread),
            )
            message_rows.write_attachments(write.conn, message_id, attachments)
            message_rows.write_mentions(write.conn, message_id, text)
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
        """``edited_by`` is who edited, when that is not the author."""
        check_text(text)
        edited_ms = now_ms() if edited_at is None else to_ms(edited_at)
        with self._transaction("edit a message") as write:
            sql = "UPDATE messages SET text = ?, edited_at = ?, edited_by = ? WHERE id = ?"
            if not write.conn.execute(sql, (text, edited_ms, edited_by, message_id)).rowcount:
                raise RecordNotFound(f"message {message_id!r} does not exist")
            message_rows.write_mentions(write.conn, message_id, text)
            message = self._read_one(write.conn, message_id)
            write.events.append(MessageEvent("edited", message))
        return message

    def delete_message(self, message_id: str) -> None:
        """Raises RecordNotFound for an unknown id; listeners get the message as it was. The replies of a
        thread's first message stay (they are other people's words); their thread shows them alone."""
        with self._transaction("delete a message") as write:
            found = message_rows.read_messages(write.conn, "WHERE m.id = ?", (message_id,))
            if not found:
                raise RecordNotFound(f"message {message_id!r} does not exist")
            write.conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            write.events.append(MessageEvent("deleted", found[0]))

    def set_pinned(self, message_id: str, pinned_by: str | None) -> Message:
        """Pin (``pinned_by`` is who) or unpin (None). Raises RecordNotFound for an unknown message or user."""
        with self._transaction("pin a message") as write:
            if (
                pinned_by is not None
                and not write.conn.execute("SELECT 1 FROM users WHERE id = ?", (pinned_by,)).fetchone()
            ):
                raise RecordNotFound(f"user {pinned_by!r} does not exist")
            pinned_at = None if pinned_by is None else now_ms()
            sql = "UPDATE messages SET pinned_at = ?, pinned_by = ? WHERE id = ?"
            if not write.conn.execute(sql, (pinned_at, pinned_by, message_id)).rowcount:
                raise RecordNotFound(f"message {message_id!r} does not exist")
            message = self._read_one(write.conn, message_id)
            write.events.append(MessageEvent("edited", message))
        return message

    def set_reaction(self, message_id: str, user_id: str, emoji: str, react: bool) -> Message:
        """Add (``react``) or take back the user's ``emoji`` on a message; idempotent either way."""
        emoji = rules.check_emoji(emoji)
        with self._transaction("react to a message") as write:
            if not write.conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone():
                raise RecordNotFound(f"message {message_id!r} does not exist")
            if not write.conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone():
                raise RecordNotFound(f"user {user_id!r} does not exist")
            if react:
                write.conn.execute(
                    "INSERT OR IGNORE INTO reactions (message_id, emoji, user_id, ts) VALUES (?, ?, ?, ?)",
                    (message_id, emoji, user_id, now_ms()),
                )
            else:
                write.conn.execute(
                    "DELETE FROM reactions WHERE message_id = ? AND emoji = ? AND user_id = ?",
                    (message_id, emoji, user_id),
                )
            message = self._read_one(write.conn, message_id)
            # Listeners (the search index's `has:reaction`) hear it at once, not at the next log read.
            write.events.append(MessageEvent("edited", message))
        return message

    @staticmethod
    def _read_one(conn: sqlite3.Connection, message_id: str) -> Message:
        return message_rows.read_messages(conn, "WHERE m.id = ?", (message_id,))[0]

    def _messages(self, where: str, params: Sequence[Any] = ()) -> list[Message]:
        with self._errors("read the workspace"):
            return message_rows.read_messages(self._connection(), where, params)

    def get_message(self, message_id: str) -> Message | None:
        found = self._messages("WHERE m.id = ?", (message_id,))
        return found[0] if found else None

    def get_messages(self, message_ids: Iterable[str]) -> dict[str, Message]:
        found = self._messages("WHERE m.id IN (SELECT value FROM json_each(?))", (_json_list(message_ids),))
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
        low = "m.ts >= ?3" if inclusive else "m.ts > ?3"
        high = "m.ts <= ?2" if inclusive else "m.ts < ?2"
        return self._messages(
            f"WHERE m.room_id = ?1 AND (?2 IS NULL OR {high}) AND (?3 IS NULL OR {low})"
            " ORDER BY m.ts DESC, m.id DESC LIMIT ?4 OFFSET ?5",
            (
                room_id,
                None if before is None else to_ms(before),
                None if after is None else to_ms(after),
                limit,
                max(0, offset),
            ),
        )

    def messages_around(self, message: Message, *, before: int, after: int) -> list[Message]:
        """The message with up to ``before`` older and ``after`` newer ones of its room, oldest first."""
        key = (to_ms(message.ts), message.id)
        older = self._messages(
            "WHERE m.room_id = ? AND (m.ts, m.id) < (?, ?) ORDER BY m.ts DESC, m.id DESC LIMIT ?",
            (message.room_id, *key, max(0, before)),
        )
        newer = self._messages(
            "WHERE m.room_id = ? AND (m.ts, m.id) > (?, ?) ORDER BY m.ts, m.id LIMIT ?",
            (message.room_id, *key, max(0, after)),
        )
        return [*reversed(older), message, *newer]

    def earlier_in_conversation(self, message: Message, *, limit: int, within: timedelta) -> list[Message]:
        """Up to ``limit`` messages the message follows in its conversation, oldest first: for a reply,
        its thread's first message and the replies before it; otherwise the messages before it in its
        room (thread replies left out) posted at most ``within`` before it."""
        if limit <= 0:
            return []
        key = (to_ms(message.ts), message.id)
        if message.tmid is not None:
            replies = (
                self._messages(
                    "WHERE m.tmid = ? AND (m.ts, m.id) < (?, ?) ORDER BY m.ts DESC, m.id DESC LIMIT ?",
                    (message.tmid, *key, limit - 1),
                )
                if limit > 1
                else []
            )
            parent = self._messages("WHERE m.id = ?", (message.tmid,))
            return [*parent, *reversed(replies)][-limit:]
        earliest = to_ms(message.ts - within)
        before = self._messages(
            "WHERE m.room_id = ? AND m.tmid IS NULL AND (m.ts, m.id) < (?, ?) AND m.ts >= ?"
            " ORDER BY m.ts DESC, m.id DESC LIMIT ?",
            (message.room_id, *key, earliest, limit),
        )
        return list(reversed(before))

    def thread_messages(self, tmid: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        """A thread's replies, oldest first (the first message itself not included), and their total."""
        total = self._one("SELECT count(*) FROM messages WHERE tmid = ?", (tmid,))
        replies = self._messages(
            "WHERE m.tmid = ? ORDER BY m.ts, m.id LIMIT ? OFFSET ?", (tmid, max(0, limit), max(0, offset))
        )
        return replies, 0 if total is None else int(total[0])

    def reply_position(self, reply: Message) -> int:
        """How many replies of its thread come before ``reply`` (0 for the first, or for a non-reply)."""
        if reply.tmid is None:
            return 0
        row = self._one(
            "SELECT count(*) FROM messages WHERE tmid = ? AND (ts, id) < (?, ?)",
            (reply.tmid, to_ms(reply.ts), reply.id),
        )
        return 0 if row is None else int(row[0])

    def thread_summaries(self, tmids: Iterable[str]) -> dict[str, ThreadSummary]:
        """Reply count, last reply time and repliers of each thread that has replies."""
        rows = self._all(
            "SELECT tmid, count(*), max(ts), json_group_array(user_id) FROM"
            " (SELECT tmid, ts, user_id FROM messages WHERE tmid IN (SELECT value FROM json_each(?))"
            " ORDER BY ts, id) GROUP BY tmid",
            (_json_list(tmids),),
        )
        return {
            tmid: ThreadSummary(tmid, int(count), from_ms(last), tuple(dict.fromkeys(json.loads(users))))
            for tmid, count, last, users in rows
        }

    def room_threads(self, room_id: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        """The first messages of a room's threads, the latest reply first, and how many threads it has."""
        total = self._one(
            "SELECT count(DISTINCT tmid) FROM messages WHERE room_id = ? AND tmid IS NOT NULL", (room_id,)
        )
        order = self._all(
            "SELECT tmid FROM messages WHERE room_id = ? AND tmid IS NOT NULL GROUP BY tmid"
            " ORDER BY max(ts) DESC, tmid LIMIT ? OFFSET ?",
            (room_id, max(0, limit), max(0, offset)),
        )
        parents = self.get_messages(row[0] for row in order)
        return [parents[row[0]] for row in order if row[0] in parents], 0 if total is None else int(total[0])

    def pinned_messages(self, room_id: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        """A room's pinned messages, the latest pinned first, and their total."""
        total = self._one(
            "SELECT count(*) FROM messages WHERE room_id = ? AND pinned_at IS NOT NULL", (room_id,)
        )
        found = self._messages(
            "WHERE m.room_id = ? AND m.pinned_at IS NOT NULL ORDER BY m.pinned_at DESC, m.id LIMIT ? OFFSET ?",
            (room_id, max(0, limit), max(0, offset)),
        )
        return found, 0 if total is None else int(total[0])

    def find_room_messages(self, room_id: str, text: str, *, offset: int = 0, limit: int) -> list[Message]:
        """Messages of a room whose text contains ``text`` (case-insensitive, literal), newest first."""
        contains, _ = _like_contains(text)
        return self._messages(
            "WHERE m.room_id = ? AND m.text LIKE ? ESCAPE '\\' ORDER BY m.ts DESC, m.id DESC LIMIT ? OFFSET ?",
            (room_id, contains, max(0, limit), max(0, offset)),
        )

    def count_messages(self) -> int:
        row = self._one("SELECT count(*) FROM messages")
        return 0 if row is None else int(row[0])

    def earliest_message_at(self, room_ids: Iterable[str]) -> datetime | None:
        # One index seek per room on messages_room_ts, never a scan of the messages.
        row = self._one(
            "SELECT min((SELECT min(ts) FROM messages WHERE room_id = value)) FROM json_each(?)",
            (_json_list(room_ids),),
        )
        return None if row is None or row[0] is None else from_ms(row[0])

    def shares_a_room(self, user_id: str, username: str) -> bool:
        row = self._one(
            "SELECT 1 FROM users u JOIN subscriptions theirs ON theirs.user_id = u.id AND theirs.banned = 0"
            " JOIN subscriptions mine ON mine.room_id = theirs.room_id AND mine.user_id = ? AND mine.banned = 0"
            " WHERE u.username = ? COLLATE NOCASE LIMIT 1",
            (user_id, username),
        )
        return row is not None

    def iter_messages(self, *, batch_size: int = 1000) -> Iterator[list[Message]]:
        """Keyset pagination on (ts, id): each batch is one indexed range read, never an OFFSET scan."""
        if batch_size <= 0:
            raise InvalidValue("batch_size must be positive")
        after: tuple[int, str] = (-(2**62), "")
        while True:
            batch = self._messages(
                "WHERE (m.ts, m.id) > (?, ?) ORDER BY m.ts, m.id LIMIT ?", (*after, batch_size)
            )
            if not batch:
                return
            yield batch
            after = (to_ms(batch[-1].ts), batch[-1].id)

    def latest_message_change(self) -> int:
        row = self._one("SELECT coalesce(max(change), 0) FROM message_changes")
        return 0 if row is None else int(row[0])

    def message_changes_since(self, change: int, *, limit: int) -> MessageChanges:
        if limit <= 0:
            raise InvalidValue("limit must be positive")
        rows = self._all(
            "SELECT change, message_id FROM message_changes WHERE change > ? ORDER BY change LIMIT ?",
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
            answer_rows.insert_answer(write.conn, answer)

    def get_answer(self, answer_id: str) -> StoredAnswer | None:
        with self._errors("read the answer"):
            return answer_rows.read_answer(self._connection(), answer_id)

    def share_answer(self, answer_id: str) -> StoredAnswer:
        with self._transaction("share the answer") as write:
            write.conn.execute(
                "UPDATE answers SET shared_at = ? WHERE id = ? AND shared_at IS NULL", (now_ms(), answer_id)
            )
            answer = answer_rows.read_answer(write.conn, answer_id)
        if answer is None:
            raise RecordNotFound(f"no answer {answer_id!r}")
        return answer

    def rate_answer(self, answer_id: str, user_id: str, rating: str, reason: str = "") -> AnswerFeedback:
        checked_rating, checked_reason = rules.check_feedback(rating, reason)
        with self._transaction("store the feedback") as write:
            if write.conn.execute("SELECT 1 FROM answers WHERE id = ?", (answer_id,)).fetchone() is None:
                raise RecordNotFound(f"no answer {answer_id!r}")
            return answer_rows.upsert_feedback(
                write.conn, answer_id, user_id, checked_rating, checked_reason, now_ms()
            )

    def answer_feedback(self, answer_id: str, user_id: str) -> AnswerFeedback | None:
        with self._errors("read the feedback"):
            return answer_rows.read_feedback(self._connection(), answer_id, user_id)

    def feedback_since(self, since: datetime | None) -> Sequence[tuple[AnswerFeedback, StoredAnswer, str]]:
        with self._errors("read the feedback"):
            return answer_rows.feedback_since(self._connection(), since)

    # -- mirrors of other systems ----------------------------------------------------------------

    def link_external(
        self, origin: str, kind: ExternalKind, external_id: str, local_id: str, *, how: LinkHow
    ) -> None:
        with self._transaction("link an external id") as write:
            sources.link_external(write.conn, origin, kind, external_id, local_id, how)

    def external_ids(self, origin: str, kind: ExternalKind) -> dict[str, str]:
        with self._errors("read the workspace"):
            return sources.external_ids(self._connection(), origin, kind)

    def external_links(self, origin: str, kind: ExternalKind) -> dict[str, ExternalLink]:
        with self._errors("read the workspace"):
            return sources.external_links(self._connection(), origin, kind)

    def update_room(
        self, room_id: str, *, name: str | None = None, fname: str | None = None, topic: str | None = None
    ) -> Room:
        with self._transaction("update a room") as write:
            sources.rename_room(write.conn, room_id, name=name, fname=fname, topic=topic)
            row = write.conn.execute(f"SELECT {ROOM_COLUMNS} FROM rooms WHERE id = ?", (room_id,)).fetchone()
        return room_from_row(row)

    def set_display_name(self, user_id: str, name: str) -> None:
        display = check_display_name(name.strip())
        with self._transaction("rename a user") as write:
            if (
                not display
                or not write.conn.execute(
                    "UPDATE users SET name = ? WHERE id = ?", (display, user_id)
                ).rowcount
            ):
                raise RecordNotFound(f"user {user_id!r} does not exist")

    def set_members(self, room_id: str, user_ids: Sequence[str]) -> tuple[int, int]:
        with self._transaction("set a room's members") as write:
            return sources.set_members(write.conn, room_id, user_ids, now_ms())

    def add_members(self, room_id: str, user_ids: Sequence[str]) -> int:
        with self._transaction("add members to a room") as write:
            return sources.add_members(write.conn, room_id, user_ids, now_ms())

    def origin_message_ids(self, room_id: str, origin: str, *, start: datetime, end: datetime) -> list[str]:
        with self._errors("read the workspace"):
            return sources.origin_message_ids(self._connection(), room_id, origin, to_ms(start), to_ms(end))

    def set_source_urls(self, urls: Mapping[str, str | None]) -> int:
        if not urls:
            return 0
        with self._transaction("set source links") as write:
            return sources.set_source_urls(write.conn, urls)

    def get_sync_state(self, origin: str) -> dict[str, Any] | None:
        with self._errors("read the workspace"):
            return sources.read_sync_state(self._connection(), origin)

    def set_sync_state(self, origin: str, state: Mapping[str, Any]) -> None:
        with self._transaction("save a sync state") as write:
            sources.write_sync_state(write.conn, origin, state, now_ms())

    # -- bulk import -----------------------------------------------------------------------------

    def import_messages(self, rows: Sequence[ImportRow]) -> ImportResult:
        """One batch in one transaction, idempotently (``import_batch.run_import`` has the rules).

        Raises:
            StorageFailure: the database failed; nothing of this batch was written.
        """
        return run_import(rows, self._import_transaction)

    @contextmanager
    def _import_transaction(self) -> Iterator[tuple[SQLiteImportTables, list[MessageEvent] | None]]:
        with self._transaction("import messages") as write:
            yield SQLiteImportTables(write.conn), write.events if write.wants_events else None
