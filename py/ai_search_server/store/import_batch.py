"""One batch of ``SQLiteStore.import_messages``: rows by names, written with a few statements each.

The users, rooms, message ids and thread parents the batch names are read with one query each up
front; rows are then added in order (missing users and rooms created, refusals collected by index);
subscriptions, messages, attachments, reactions and mentions are written with ``executemany`` at the
end. All of it runs inside the store's write transaction.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence

from . import message_rows, rules, schema
from .records import ImportRow, Message, MessageEvent
from .rules import check_display_name, check_room_name, check_text, fold, from_ms, to_ms

__all__ = ["ImportBatch", "check_import_row"]

_ROOM_TYPE_NAMES = {"c": "a public channel", "p": "a private group", "d": "a direct room"}
# Subscribing twice is a no-op that keeps the first subscription, ban included.
_SUBSCRIBE = "INSERT OR IGNORE INTO subscriptions (user_id, room_id, banned, created_at) VALUES (?, ?, 0, ?)"


def _json(values: Iterable[str]) -> str:
    return json.dumps(list(values))


def check_import_row(row: ImportRow) -> tuple[ImportRow, int]:
    """The row with its room name in the stored (NFKC) form, and its time in milliseconds.

    Raises:
        InvalidValue: a value the store refuses (a name, the text, an id, an attachment, an emoji).
    """
    room = check_room_name(row.room)
    if room != row.room:
        row = dataclasses.replace(row, room=room)
    rules.check_room_type(row.room_type)
    rules.check_username(row.username)
    for member in row.members:
        rules.check_username(member)
    if row.user_name is not None:
        check_display_name(row.user_name)
    check_text(row.text)
    rules.check_message_id(row.message_id)
    if row.tmid is not None:
        rules.check_message_id(row.tmid)
    rules.check_attachments(row.attachments)
    for reaction in row.reactions:
        rules.check_emoji(reaction.emoji)
        for username in reaction.usernames:
            rules.check_username(username)
    if row.edited_at is not None:
        to_ms(row.edited_at)
    if row.origin is not None:
        rules.check_origin(row.origin)
    if row.source_url is not None:
        rules.check_source_url(row.source_url)
    return row, to_ms(row.ts)


class ImportBatch:
    """The state of one import transaction (see the module docstring)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[ImportRow],
        *,
        new_id: Callable[[], str],
        events: list[MessageEvent] | None,
    ) -> None:
        self.conn = conn
        self.new_id = new_id
        self.events = events
        self.now = rules.now_ms()
        self.imported = self.unchanged = self.users_created = self.rooms_created = 0
        usernames = {
            name
            for row in rows
            for name in (row.username, *row.members, *(u for r in row.reactions for u in r.usernames))
        }
        # key: folded username -> (id, username, name)
        self.users: dict[str, tuple[str, str, str]] = {
            fold(username): (user_id, username, name)
            for user_id, username, name in conn.execute(
                "SELECT id, username, name FROM users WHERE username IN (SELECT value FROM json_each(?))",
                (_json(usernames),),
            )
        }
        # key: (is direct, folded name) -> (id, type); the oldest direct room of a name wins.
        self.rooms: dict[tuple[bool, str], tuple[str, str]] = {}
        for room_id, room_type, name in conn.execute(
            "SELECT id, t, name FROM rooms WHERE name IN (SELECT value FROM json_each(?))"
            " ORDER BY created_at, id",
            (_json({row.room for row in rows}),),
        ):
            self.rooms.setdefault((room_type == "d", fold(name)), (room_id, room_type))
        self.seen: set[str] = {
            message_id
            for (message_id,) in conn.execute(
                "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                (_json(row.message_id for row in rows),),
            )
        }
        # Thread parents already stored: id -> (room id, its own tmid).
        self.parents: dict[str, tuple[str, str | None]] = {
            message_id: (room_id, tmid)
            for message_id, room_id, tmid in conn.execute(
                "SELECT id, room_id, tmid FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                (_json({row.tmid for row in rows if row.tmid}),),
            )
        }
        self.subscriptions: dict[tuple[str, str], None] = {}
        self.messages: list[
            tuple[
                str,
                str,
                str,
                int,
                str,
                str | None,
                int | None,
                int | None,
                str | None,
                str | None,
                str | None,
            ]
        ] = []
        self.attachments: list[tuple[str, int, str, str, str, str, int]] = []
        self.reactions: list[tuple[str, str, str, int]] = []
        self.mentioning: list[tuple[str, str]] = []  # (message id, text) of texts holding an "@"

    def add(self, row: ImportRow, ts_ms: int) -> str | None:
        """Adds one row; returns why it is refused, or None."""
        if row.message_id in self.seen:
            self.unchanged += 1
            return None
        key = (row.room_type == "d", fold(row.room))
        room = self.rooms.get(key)
        if room is not None and room[1] != row.room_type:
            return f"room {row.room!r} exists as {_ROOM_TYPE_NAMES[room[1]]} ({room[1]}), not {row.room_type}"
        tmid = None
        if row.tmid is not None:
            parent = self.parents.get(row.tmid)
            if parent is None or room is None or parent[0] != room[0]:
                return (
                    f"the thread's first message {row.tmid!r} is not in room {row.room!r} (import it first)"
                )
            tmid = parent[1] or row.tmid
        if room is None:
            # A channel may not take a DM's name, nor any name that looks like another room's.
            clash = schema.room_name_clash(self.conn, row.room_type, row.room)
            if clash is not None:
                return clash
        author_id, author_username, author_name = self._user(row.username, row.user_name)
        if room is None:
            room = (self.new_id(), row.room_type)
            self.conn.execute(
                "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at)"
                " VALUES (?, ?, ?, ?, '', ?, ?)",
                (room[0], row.room_type, row.room, row.room, author_id, self.now),
            )
            schema.insert_room_name_keys(self.conn, room[0], row.room)
            self.rooms[key] = room
            self.rooms_created += 1
        if row.author_joins:
            self.subscriptions[(author_id, room[0])] = None
        for member in row.members:
            self.subscriptions[(self._user(member, None)[0], room[0])] = None
        self.seen.add(row.message_id)
        self.parents[row.message_id] = (room[0], tmid)
        edited_ms = None if row.edited_at is None else to_ms(row.edited_at)
        pinned_ms, pinned_by = (ts_ms, author_id) if row.pinned else (None, None)
        self.messages.append(
            (
                row.message_id,
                room[0],
                author_id,
                ts_ms,
                row.text,
                tmid,
                edited_ms,
                pinned_ms,
                pinned_by,
                row.origin,
                row.source_url,
            )
        )
        for position, a in enumerate(row.attachments):
            self.attachments.append(
                (row.message_id, position, a.name, a.title, a.description, a.type, a.size)
            )
        for reaction in row.reactions:
            emoji = rules.check_emoji(reaction.emoji)
            for username in reaction.usernames:
                self.reactions.append((row.message_id, emoji, self._user(username, None)[0], ts_ms))
        if "@" in row.text:
            self.mentioning.append((row.message_id, row.text))
        if self.events is not None:
            message = Message(
                row.message_id,
                room[0],
                author_id,
                author_username,
                author_name,
                from_ms(ts_ms),
                row.text,
                edited_at=row.edited_at,
                tmid=tmid,
                attachments=row.attachments,
                source_url=row.source_url,
            )
            self.events.append(MessageEvent("posted", message))
        self.imported += 1
        return None

    def _user(self, username: str, name: str | None) -> tuple[str, str, str]:
        key = fold(username)
        user = self.users.get(key)
        if user is None:
            display = name.strip() if name and name.strip() else username
            user = (self.new_id(), username, display)
            self.conn.execute(
                "INSERT INTO users (id, username, name, password_hash, roles, created_at, active)"
                " VALUES (?, ?, ?, NULL, ?, ?, 1)",
                (*user, schema.roles_to_column(("user",)), self.now),
            )
            self.users[key] = user
            self.users_created += 1
        return user

    def flush(self) -> None:
        self.conn.executemany(
            _SUBSCRIBE, [(user_id, room_id, self.now) for user_id, room_id in self.subscriptions]
        )
        self.conn.executemany(
            "INSERT INTO messages"
            " (id, room_id, user_id, ts, text, tmid, edited_at, pinned_at, pinned_by, origin, source_url)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.messages,
        )
        self.conn.executemany(
            "INSERT INTO attachments (message_id, position, name, title, description, type, size)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            self.attachments,
        )
        self.conn.executemany(
            "INSERT OR IGNORE INTO reactions (message_id, emoji, user_id, ts) VALUES (?, ?, ?, ?)",
            self.reactions,
        )
        for message_id, text in self.mentioning:
            message_rows.write_mentions(self.conn, message_id, text)
