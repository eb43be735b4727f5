"""One batch of a store's ``import_messages``: rows by names, written with a few statements each.

The users, rooms, message ids and thread parents the batch names are read with one query each up
front; rows are then added in order (missing users and rooms created, refusals collected by index);
subscriptions, messages, attachments, reactions and mentions are written in bulk at the end. All of
it runs inside the store's write transaction.

The rules live here once; each store supplies its statements as an ``ImportTables`` (SQLite's in
``sqlite_import.py``, PostgreSQL's in ``pg_import.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from . import rules
from .base import InvalidValue
from .records import ImportResult, ImportRow, Message, MessageEvent
from .rules import check_display_name, check_room_name, check_text, fold, from_ms, to_ms

__all__ = ["ImportBatch", "ImportTables", "ImportedMessage", "check_import_row", "run_import"]

_ROOM_TYPE_NAMES = {"c": "a public channel", "p": "a private group", "d": "a direct room"}

# One message row: id, room id, user id, ts, text, tmid, edited_at, pinned_at, pinned_by, origin,
# source_url (times in milliseconds).
ImportedMessage = tuple[
    str, str, str, int, str, str | None, int | None, int | None, str | None, str | None, str | None
]


class ImportTables(Protocol):
    """A store's statements for one import batch, run inside its write transaction. Names compare
    case-insensitively (``rules.fold``), as the store's own lookups do."""

    def users_named(self, usernames: Collection[str]) -> Iterable[tuple[str, str, str]]:
        """(id, username, name) of the users with these usernames."""
        ...

    def rooms_named(self, names: Collection[str]) -> Iterable[tuple[str, str, str]]:
        """(id, type, name) of the rooms with these names, oldest first."""
        ...

    def messages_with_ids(self, message_ids: Collection[str]) -> Iterable[tuple[str, str, str | None]]:
        """(id, room id, tmid) of the stored messages with these ids."""
        ...

    def room_name_clash(self, room_type: str, name: str) -> str | None:
        """Why a new room of this type may not take this name, or None."""
        ...

    def insert_room(self, room_id: str, room_type: str, name: str, creator_id: str, now_ms: int) -> None: ...
    def insert_user(self, user_id: str, username: str, name: str, now_ms: int) -> None:
        """A user without a password, with the user role."""
        ...

    def write(
        self,
        subscriptions: Sequence[tuple[str, str]],
        messages: Sequence[ImportedMessage],
        attachments: Sequence[tuple[str, int, str, str, str, str, int]],
        reactions: Sequence[tuple[str, str, str, int]],
        mentioning: Sequence[tuple[str, str]],
        now_ms: int,
    ) -> None:
        """Subscribe (user id, room id) pairs (an existing subscription and its ban kept), insert the
        messages, their attachments and reactions (a repeated reaction ignored), and record the
        mentions of each (message id, text)."""
        ...


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
        tables: ImportTables,
        rows: Sequence[ImportRow],
        *,
        new_id: Callable[[], str],
        events: list[MessageEvent] | None,
    ) -> None:
        self.tables = tables
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
            for user_id, username, name in tables.users_named(usernames)
        }
        # key: (is direct, folded name) -> (id, type); the oldest direct room of a name wins.
        self.rooms: dict[tuple[bool, str], tuple[str, str]] = {}
        for room_id, room_type, name in tables.rooms_named({row.room for row in rows}):
            self.rooms.setdefault((room_type == "d", fold(name)), (room_id, room_type))
        self.seen: set[str] = {
            message_id for message_id, _, _ in tables.messages_with_ids({row.message_id for row in rows})
        }
        # Thread parents already stored: id -> (room id, its own tmid).
        self.parents: dict[str, tuple[str, str | None]] = {
            message_id: (room_id, tmid)
            for message_id, room_id, tmid in tables.messages_with_ids({row.tmid for row in rows if row.tmid})
        }
        self.subscriptions: dict[tuple[str, str], None] = {}
        self.messages: list[ImportedMessage] = []
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
            clash = self.tables.room_name_clash(row.room_type, row.room)
            if clash is not None:
                return clash
        author_id, author_username, author_name = self._user(row.username, row.user_name)
        if room is None:
            room = (self.new_id(), row.room_type)
            self.tables.insert_room(room[0], row.room_type, row.room, author_id, self.now)
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
            self.tables.insert_user(*user, self.now)
            self.users[key] = user
            self.users_created += 1
        return user

    def flush(self) -> None:
        self.tables.write(
            list(self.subscriptions),
            self.messages,
            self.attachments,
            self.reactions,
            self.mentioning,
            self.now,
        )


# What a store opens for one batch: its write transaction, as the batch's tables and the list its
# listeners' events go to (None when nobody listens).
ImportTransaction = Callable[[], AbstractContextManager[tuple[ImportTables, list[MessageEvent] | None]]]


def run_import(rows: Sequence[ImportRow], transaction: ImportTransaction) -> ImportResult:
    """A store's ``import_messages``: rows checked, then the valid ones added in one transaction.

    Missing users are created without a password (``user_name`` as their display name), missing
    rooms are created with the row's author as creator, and the author and ``members`` are
    subscribed (a ban is kept). A row whose message id already exists is counted as unchanged and
    has no effect at all, so re-importing a file never undoes what admins did since. Rows the store
    refuses (bad values, a room name taken by a room of another type) are reported by index.
    """
    rejected: list[tuple[int, str]] = []
    valid: list[tuple[int, ImportRow, int]] = []
    for index, row in enumerate(rows):
        try:
            valid.append((index, *check_import_row(row)))
        except InvalidValue as error:
            rejected.append((index, str(error)))
    if not valid:
        return ImportResult(0, 0, 0, 0, tuple(rejected))
    with transaction() as (tables, events):
        batch = ImportBatch(tables, [row for _, row, _ in valid], new_id=rules.new_id, events=events)
        for index, row, ts_ms in valid:
            reason = batch.add(row, ts_ms)
            if reason:
                rejected.append((index, reason))
        batch.flush()
    rejected.sort()
    return ImportResult(
        imported=batch.imported,
        unchanged=batch.unchanged,
        users_created=batch.users_created,
        rooms_created=batch.rooms_created,
        rejected=tuple(rejected),
    )
