"""Records the store hands out: plain frozen values, never live rows.

Every layer above the store (routes, retrieval, MCP) works with these, so none of them writes SQL
and a second store implementation (PostgreSQL) only has to produce the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

RoomType = Literal["c", "p", "d"]  # public channel, private group, direct message
TokenKind = Literal["session", "pat"]  # login session token, personal access token
Role = Literal["admin", "user", "bot"]


@dataclass(frozen=True, slots=True)
class User:
    id: str
    username: str
    name: str
    roles: tuple[str, ...]
    created_at: datetime
    has_password: bool
    active: bool = True


@dataclass(frozen=True, slots=True)
class Room:
    id: str
    type: RoomType
    name: str
    fname: str
    created_at: datetime
    creator_id: str | None = None
    topic: str = ""


@dataclass(frozen=True, slots=True)
class Subscription:
    user_id: str
    room_id: str
    banned: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    room_id: str
    user_id: str
    username: str
    user_name: str
    ts: datetime  # aware, UTC
    text: str
    edited_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Token:
    id: str
    user_id: str
    kind: TokenKind
    label: str
    created_at: datetime
    last_used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """A change the store made to a message, delivered to listeners after the commit.

    The embedded pipeline listens to keep its keyword and vector indexes current.
    """

    kind: Literal["posted", "edited", "deleted"]
    message: Message


@dataclass(frozen=True, slots=True)
class MessageChanges:
    """Messages changed after a change number, for readers that follow the store from any process.

    ``message_ids`` were posted, edited or deleted (each once, in the order of their last change);
    read them back to know which. ``last`` is the change number to ask after next time. ``complete`` is
    False when changes after the asked number were already pruned from the log: the reader missed
    some and must rescan the store.
    """

    message_ids: tuple[str, ...]
    last: int
    complete: bool
