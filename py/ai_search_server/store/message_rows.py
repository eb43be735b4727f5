"""Messages as SQLite rows: the one SELECT every read uses, and what a message owns besides its row.

A message's attachments, reactions and mentions live in tables of their own (schema migration 4);
every read of messages goes through :func:`read_messages`, which fetches them for the whole batch at
once (three indexed queries, however many messages), so no caller can forget one and no page of
results costs a query per message.

Writers call :func:`write_attachments` and :func:`write_mentions` inside their transaction.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from .base import InvalidValue
from .records import Attachment, Message, Reaction
from .schema import from_ms

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_ATTACHMENT_TEXT_LENGTH",
    "MAX_EMOJI_LENGTH",
    "MESSAGE_SELECT",
    "check_attachments",
    "check_emoji",
    "mentioned_usernames",
    "read_messages",
    "write_attachments",
    "write_mentions",
]

MESSAGE_SELECT = (
    "SELECT m.id, m.room_id, m.user_id, u.username, u.name, m.ts, m.text, m.edited_at,"
    " m.tmid, m.pinned_at, m.pinned_by, m.edited_by"
    " FROM messages m JOIN users u ON u.id = m.user_id"
)
# Files or links on one message (attachments): Rocket.Chat posts one file per message; exports from
# other systems carry a handful. More is refused rather than silently cut.
MAX_ATTACHMENTS = 20
# Characters of an attachment's name, title, description or type.
MAX_ATTACHMENT_TEXT_LENGTH = 1000
# Characters of a reaction's emoji name (":+1:", ":white_check_mark:", a custom ":party-parrot:").
MAX_EMOJI_LENGTH = 64
# An ``@name`` not preceded by a word character or another ``@`` (so ``a@b.io`` mentions nobody).
_MENTION = re.compile(r"(?<![\w@])@([\w.-]+)")
_EMOJI = re.compile(r":[\w+-]{1,62}:")

Row = tuple[Any, ...]


def _json(values: Iterable[str]) -> str:
    return json.dumps(list(values))


def read_messages(conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()) -> list[Message]:
    """The messages ``MESSAGE_SELECT`` + ``where`` finds, in its order, each with all it owns."""
    rows = conn.execute(f"{MESSAGE_SELECT} {where}", params).fetchall()
    if not rows:
        return []
    ids = _json(row[0] for row in rows)
    attachments: dict[str, list[Attachment]] = {}
    for message_id, name, title, description, type_, size in conn.execute(
        "SELECT message_id, name, title, description, type, size FROM attachments"
        " WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id, position",
        (ids,),
    ):
        attachments.setdefault(message_id, []).append(Attachment(name, title, description, type_, size))
    reactions: dict[str, dict[str, list[str]]] = {}
    for message_id, emoji, username in conn.execute(
        "SELECT r.message_id, r.emoji, u.username FROM reactions r JOIN users u ON u.id = r.user_id"
        " WHERE r.message_id IN (SELECT value FROM json_each(?)) ORDER BY r.message_id, r.ts, u.username",
        (ids,),
    ):
        reactions.setdefault(message_id, {}).setdefault(emoji, []).append(username)
    mentions: dict[str, list[str]] = {}
    for message_id, username in conn.execute(
        "SELECT n.message_id, u.username FROM mentions n JOIN users u ON u.id = n.user_id"
        " WHERE n.message_id IN (SELECT value FROM json_each(?)) ORDER BY n.message_id, u.username",
        (ids,),
    ):
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
        attachments=attachments,
        reactions=reactions,
        mentions=mentions,
    )


def check_attachments(attachments: Sequence[Attachment]) -> tuple[Attachment, ...]:
    """Raises InvalidValue for too many attachments, an empty name, over-long text or a negative size."""
    if len(attachments) > MAX_ATTACHMENTS:
        raise InvalidValue(f"a message has at most {MAX_ATTACHMENTS} attachments")
    for attachment in attachments:
        if not attachment.name.strip():
            raise InvalidValue("an attachment needs a name")
        texts = (attachment.name, attachment.title, attachment.description, attachment.type)
        if any(len(text) > MAX_ATTACHMENT_TEXT_LENGTH for text in texts):
            raise InvalidValue(f"an attachment's texts have at most {MAX_ATTACHMENT_TEXT_LENGTH} characters")
        if any("\x00" in text for text in texts):
            raise InvalidValue("an attachment's texts must not hold NUL characters")
        if attachment.size < 0:
            raise InvalidValue("an attachment's size is not negative")
    return tuple(attachments)


def check_emoji(emoji: str) -> str:
    """``:name:`` (a leading and trailing colon are added when missing), at most MAX_EMOJI_LENGTH."""
    emoji = emoji.strip()
    if not emoji.startswith(":"):
        emoji = f":{emoji}:"
    if len(emoji) > MAX_EMOJI_LENGTH or not _EMOJI.fullmatch(emoji):
        raise InvalidValue("an emoji is a name like :+1: or :white_check_mark:")
    return emoji


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
