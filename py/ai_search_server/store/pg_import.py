"""PostgreSQL's statements for an import batch (``import_batch.ImportTables``), inside the write
transaction: lists travel as one ``text[]`` parameter, names compare by ``ascii_fold``, and the bulk
inserts go through ``executemany`` (psycopg pipelines them: one round trip for the lot)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import psycopg

from . import pg_rows
from .import_batch import ImportedMessage
from .rules import fold

__all__ = ["PgImportTables"]


class PgImportTables:
    """``ImportTables`` on one connection inside ``PostgresStore``'s write transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def users_named(self, usernames: Collection[str]) -> Iterable[tuple[str, str, str]]:
        return self.conn.execute(
            "SELECT id, username, name FROM users WHERE ascii_fold(username) = ANY(%s::text[])",
            ([fold(name) for name in usernames],),
        ).fetchall()

    def rooms_named(self, names: Collection[str]) -> Iterable[tuple[str, str, str]]:
        return self.conn.execute(
            "SELECT id, t, name FROM rooms WHERE ascii_fold(name) = ANY(%s::text[]) ORDER BY created_at, id",
            ([fold(name) for name in names],),
        ).fetchall()

    def messages_with_ids(self, message_ids: Collection[str]) -> Iterable[tuple[str, str, str | None]]:
        return self.conn.execute(
            "SELECT id, room_id, tmid FROM messages WHERE id = ANY(%s::text[])", (list(message_ids),)
        ).fetchall()

    def room_name_clash(self, room_type: str, name: str) -> str | None:
        return pg_rows.room_name_clash(self.conn, room_type, name)

    def insert_room(self, room_id: str, room_type: str, name: str, creator_id: str, now_ms: int) -> None:
        self.conn.execute(
            "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at)"
            " VALUES (%s, %s, %s, %s, '', %s, %s)",
            (room_id, room_type, name, name, creator_id, now_ms),
        )
        pg_rows.insert_room_name_keys(self.conn, room_id, name)

    def insert_user(self, user_id: str, username: str, name: str, now_ms: int) -> None:
        self.conn.execute(
            "INSERT INTO users (id, username, name, password_hash, roles, created_at, active)"
            " VALUES (%s, %s, %s, NULL, %s, %s, true)",
            (user_id, username, name, ["user"], now_ms),
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
        with self.conn.cursor() as cursor:
            # Subscribing twice is a no-op that keeps the first subscription, ban included.
            cursor.executemany(
                "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (%s, %s, false, %s)"
                " ON CONFLICT DO NOTHING",
                [(user_id, room_id, now_ms) for user_id, room_id in subscriptions],
            )
            cursor.executemany(
                "INSERT INTO messages"
                " (id, room_id, user_id, ts, text, tmid, edited_at, pinned_at, pinned_by, origin, source_url)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                messages,
            )
            cursor.executemany(
                "INSERT INTO attachments (message_id, position, name, title, description, type, size)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                attachments,
            )
            cursor.executemany(
                "INSERT INTO reactions (message_id, emoji, user_id, ts) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                reactions,
            )
        for message_id, text in mentioning:
            pg_rows.write_mentions(self.conn, message_id, text)
