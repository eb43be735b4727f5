"""SQLite's statements for an import batch (``import_batch.ImportTables``), inside the write transaction.

Lists of names and ids travel as one JSON parameter read by ``json_each()``, so a batch's length
never meets SQLite's limit on bound variables; ``NOCASE`` columns make the name lookups fold case.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Sequence

from . import message_rows, schema
from .import_batch import ImportedMessage

__all__ = ["SQLiteImportTables"]

# Subscribing twice is a no-op that keeps the first subscription, ban included.
_SUBSCRIBE = "INSERT OR IGNORE INTO subscriptions (user_id, room_id, banned, created_at) VALUES (?, ?, 0, ?)"


def _json(values: Iterable[str]) -> str:
    return json.dumps(list(values))


class SQLiteImportTables:
    """``ImportTables`` on one connection inside ``SQLiteStore``'s write transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def users_named(self, usernames: Collection[str]) -> Iterable[tuple[str, str, str]]:
        return self.conn.execute(
            "SELECT id, username, name FROM users WHERE username IN (SELECT value FROM json_each(?))",
            (_json(usernames),),
        ).fetchall()

    def rooms_named(self, names: Collection[str]) -> Iterable[tuple[str, str, str]]:
        return self.conn.execute(
            "SELECT id, t, name FROM rooms WHERE name IN (SELECT value FROM json_each(?))"
            " ORDER BY created_at, id",
            (_json(names),),
        ).fetchall()

    def messages_with_ids(self, message_ids: Collection[str]) -> Iterable[tuple[str, str, str | None]]:
        return self.conn.execute(
            "SELECT id, room_id, tmid FROM messages WHERE id IN (SELECT value FROM json_each(?))",
            (_json(message_ids),),
        ).fetchall()

    def room_name_clash(self, room_type: str, name: str) -> str | None:
        return schema.room_name_clash(self.conn, room_type, name)

    def insert_room(self, room_id: str, room_type: str, name: str, creator_id: str, now_ms: int) -> None:
        self.conn.execute(
            "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at) VALUES (?, ?, ?, ?, '', ?, ?)",
            (room_id, room_type, name, name, creator_id, now_ms),
        )
        schema.insert_room_name_keys(self.conn, room_id, name)

    def insert_user(self, user_id: str, username: str, name: str, now_ms: int) -> None:
        self.conn.execute(
            "INSERT INTO users (id, username, name, password_hash, roles, created_at, active)"
            " VALUES (?, ?, ?, NULL, ?, ?, 1)",
            (user_id, username, name, schema.roles_to_column(("user",)), now_ms),
        )

    def write(
        self,
        subscriptions: Sequence[tuple[str, str]],
        messages: Sequence[ImportedMessage],
        attachments: Sequence[tuple[str, int, str, str, str, str, int]],
        reactions: Sequence[tuple[str, str, str, int]],
        mentioning: Sequence[tuple[str, str]],
        now_ms: int,
    ) -> None:
        conn = self.conn
        conn.executemany(_SUBSCRIBE, [(user_id, room_id, now_ms) for user_id, room_id in subscriptions])
        conn.executemany(
            "INSERT INTO messages"
            " (id, room_id, user_id, ts, text, tmid, edited_at, pinned_at, pinned_by, origin, source_url)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            messages,
        )
        conn.executemany(
            "INSERT INTO attachments (message_id, position, name, title, description, type, size)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            attachments,
        )
        conn.executemany(
            "INSERT OR IGNORE INTO reactions (message_id, emoji, user_id, ts) VALUES (?, ?, ?, ?)", reactions
        )
        for message_id, text in mentioning:
            message_rows.write_mentions(conn, message_id, text)
