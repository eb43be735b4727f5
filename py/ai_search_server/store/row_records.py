"""Records from the rows both stores select (users, rooms, tokens, subscriptions), and the token
rules they apply to those rows.

Each store selects the same columns in the same order (``USER_COLUMNS`` and the rest) in its own
dialect; what a column holds is the same in both but for the roles, which each store decodes first
(SQLite keeps JSON text, PostgreSQL ``text[]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from .base import InvalidValue
from .records import Room, SessionLifetime, Subscription, Token, TokenKind, User
from .rules import from_ms

__all__ = [
    "MAX_TOKEN_LENGTH",
    "ROOM_COLUMNS",
    "SUBSCRIPTION_COLUMNS",
    "TOKEN_COLUMNS",
    "TOKEN_LAST_USED_RESOLUTION_MS",
    "USER_COLUMNS",
    "check_token_kind",
    "room_from_row",
    "subscription_from_row",
    "token_expired",
    "token_from_row",
    "user_from_row",
]

# A token's last_used_at is rewritten at most this often (milliseconds): one write per minute per
# token instead of one per request.
TOKEN_LAST_USED_RESOLUTION_MS = 60_000
# Characters of a presented token; ours are 43. Longer input is refused before hashing.
MAX_TOKEN_LENGTH = 256

USER_COLUMNS = "id, username, name, roles, created_at, password_hash IS NOT NULL, active"
ROOM_COLUMNS = "id, t, name, fname, created_at, creator_id, topic"
TOKEN_COLUMNS = "id, user_id, kind, label, created_at, last_used_at"
SUBSCRIPTION_COLUMNS = "user_id, room_id, banned, created_at"
_TOKEN_KINDS = ("session", "pat")

Row = tuple[Any, ...]


def user_from_row(row: Row, roles: Sequence[str]) -> User:
    """A user from ``USER_COLUMNS``, with its roles as the store decoded them."""
    return User(
        id=row[0],
        username=row[1],
        name=row[2],
        roles=tuple(roles),
        created_at=from_ms(row[4]),
        has_password=bool(row[5]),
        active=bool(row[6]),
    )


def room_from_row(row: Row) -> Room:
    return Room(
        id=row[0],
        type=row[1],
        name=row[2],
        fname=row[3],
        created_at=from_ms(row[4]),
        creator_id=row[5],
        topic=row[6],
    )


def token_from_row(row: Row) -> Token:
    return Token(
        id=row[0],
        user_id=row[1],
        kind=row[2],
        label=row[3],
        created_at=from_ms(row[4]),
        last_used_at=None if row[5] is None else from_ms(row[5]),
    )


def subscription_from_row(row: Row) -> Subscription:
    return Subscription(user_id=row[0], room_id=row[1], banned=bool(row[2]), created_at=from_ms(row[3]))


def token_expired(row: Row, lifetime: SessionLifetime, now: int) -> bool:
    """Whether a ``TOKEN_COLUMNS`` row is past the lifetime at ``now`` (milliseconds)."""
    created: int = row[4]
    last_used: int = row[5] if row[5] is not None else created
    return now - created >= lifetime.max_age_ms or now - last_used >= lifetime.idle_ms


def check_token_kind(kind: str) -> TokenKind:
    if kind not in _TOKEN_KINDS:
        raise InvalidValue(f"token kind must be 'session' or 'pat' (not {kind!r})")
    return cast(TokenKind, kind)
