"""Messages as rows: the one SELECT every read uses, and what a message owns besides its row.

A message's attachments, reactions and mentions live in tables of their own (schema migration 4);
every read of messages goes through :func:`read_messages`, which fetches them for the whole batch at
once (three indexed queries, however many messages), so no caller can forget one and no page of
results costs a query per message.

Writers call :func:`write_attachments` and :func:`write_mentions` inside their transaction. The
statements here are SQLite's; the SELECTs' columns and :func:`assemble_messages` are every store's
(the PostgreSQL store reads the same columns with its own placeholders).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from .records import Attachment, Message, Reaction
from .rules import from_ms

__all__ = [
    "ATTACHMENT_ORDER",
    "ATTACHMENT_SELECT",
    "MENTION_ORDER",
    "MENTION_SELECT",
    "MESSAGE_SELECT",
    "REACTION_ORDER",
    "REACTION_SELECT",
    "assemble_messages",
    "mentioned_usernames",
    "read_messages",
    "write_attachments",
    "write_mentions",
]

MESSAGE_SELECT = (
    "SELECT m.id, m.room_id, m.user_id, u.username, u.name, m.ts, m.text, m.edited_at,"
    " m.tmid, m.pinned_at, m.pinned_by, m.edited_by, m.source_url"
    " FROM messages m JOIN users u ON u.id = m.user_id"
)
# What a message owns besides its row, each read for a batch of messages: SELECT ... WHERE <the
# batch's ids> ORDER BY ... (the order assemble_messages expects).
ATTACHMENT_SELECT = "SELECT message_id, name, title, description, type, size FROM attachments"
ATTACHMENT_ORDER = "ORDER BY message_id, position"
REACTION_SELECT = "SELECT r.message_id, r.emoji, u.username FROM reactions r JOIN users u ON u.id = r.user_id"
REACTION_ORDER = "ORDER BY r.message_id, r.ts, u.username"
MENTION_SELECT = "SELECT n.message_id, u.username FROM mentions n JOIN users u ON u.id = n.user_id"
MENTION_ORDER = "ORDER BY n.message_id, u.username"
# An ``@name`` not preceded by a word character or another ``@`` (so ``a@b.io`` mentions nobody).
_MENTION = re.compile(r"(?<![\w@])@([\w.-]+)")

Row = tuple[Any, ...]


def _json(values: Iterable[str]) -> str:
    return json.dumps(list(values))


def read_messages(conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()) -> list[Message]:
    """The messages ``MESSAGE_SELECT`` + ``where`` finds, in its order, each with all it owns."""
    rows = conn.execute(f"{MESSAGE_SELECT} {where}", params).fetchall()
    if not rows:
        return []
    ids = _json(row[0] for row in rows)
    return assemble_messages(
        rows,
        conn.execute(
            f"{ATTACHMENT_SELECT} WHERE message_id IN (SELECT value FROM json_each(?)) {ATTACHMENT_ORDER}",
            (ids,),
        ),
        conn.execute(
            f"{REACTION_SELECT} WHERE r.message_id IN (SELECT value FROM json_each(?)) {REACTION_ORDER}",
            (ids,),
        ),
        conn.execute(
            f"{MENTION_SELECT} WHERE n.message_id IN (SELECT value FROM json_each(?)) {MENTION_ORDER}", (ids,)
        ),
    )


def assemble_messages(
    rows: Sequence[Row],
    attachment_rows: Iterable[Row],
    reaction_rows: Iterable[Row],
    mention_rows: Iterable[Row],
) -> list[Message]:
    """Messages from their rows (``MESSAGE_SELECT``'s columns) and the rows of what they own, read with
    ``ATTACHMENT_SELECT``, ``REACTION_SELECT`` and ``MENTION_SELECT`` in their orders, whatever the SQL
    dialect that fetched them."""
    attachments: dict[str, list[Attachment]] = {}
    for message_id, name, title, description, type_, size in attachment_rows:
        attachments.setdefault(message_id, []).append(Attachment(name, title, description, type_, size))
    reactions: dict[str, dict[str, list[str]]] = {}
    for message_id, emoji, username in reaction_rows:
        reactions.setdefault(message_id, {}).setdefault(emoji, []).append(username)
    mentions: dict[str, list[str]] = {}
    for message_id, username in mention_rows:
        mentions.setdefault(message_id, []).append(username)
    return [
        _message(
            row,
            tuple(attachments.get(row[0], ())),
            tuple(Reaction(e, tuple(users)) for e, users in reactions.get(row[0], {}).items()),
            tuple(mentions.get(row[0], ())),
        )
        for row in rows
    ]


def _message(
    row: Row, attachments: tuple[Attachment, ...], reactions: tuple[Reaction, ...], mentions: tuple[str, ...]
) -> Message:
    return Message(
        id=row[0],
        room_id=row[1],
        user_id=row[2],
        username=row[3],
        user_name=row[4],
        ts=from_ms(row[5]),
        text=row[6],
        edited_at=None if row[7] is None else from_ms(row[7]),
        tmid=row[8],
        pinned_at=None if row[9] is None else from_ms(row[9]),
        pinned_by=row[10],
        edited_by=row[11],
        source_url=row[12],
        attachments=attachments,
        reactions=reactions,
        mentions=mentions,
    )


def write_attachments(conn: sqlite3.Connection, message_id: str, attachments: Sequence[Attachment]) -> None:
    conn.executemany(
        "INSERT INTO attachments (message_id, position, name, title, description, type, size)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(message_id, n, a.name, a.title, a.description, a.type, a.size) for n, a in enumerate(attachments)],
    )


def mentioned_usernames(text: str) -> list[str]:
    """The ``@name``s of a text, in order, each once (``@all`` and ``@here`` included: callers look them up)."""
    return list(dict.fromkeys(_MENTION.findall(text)))


def write_mentions(conn: sqlite3.Connection, message_id: str, text: str) -> None:
    """Record who the text mentions (people who exist), replacing what an earlier text mentioned."""
    conn.execute("DELETE FROM mentions WHERE message_id = ?", (message_id,))
    names = mentioned_usernames(text)
    if names:
        conn.execute(
            "INSERT OR IGNORE INTO mentions (message_id, user_id)"
            " SELECT ?, id FROM users WHERE username IN (SELECT value FROM json_each(?))",
            (message_id, _json(names)),
        )
