"""PostgreSQL's statements for what the store reads and writes beside its plain tables: messages with
what they own, room-name clashes, stored answers and feedback, and the mirrors' tables.

Each is the PostgreSQL form of a statement of ``message_rows.py``, ``schema.py``, ``answer_rows.py``
``sources.py`` or ``oauth_rows.py`` (``OAUTH_SQL``, which that module's functions run); the records made from the rows, the checks and the JSON are those modules' own
(dialect-free) functions, so both stores hand out the same records. Lists travel as one ``text[]``
parameter (``= ANY(%s::text[])``); names compare by ``ascii_fold`` (pg_schema.py). Every function
runs on the caller's connection, inside its transaction when it writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg

from . import names
from .answer_rows import ANSWER_COLUMNS, FEEDBACK_COLUMNS, answer_from_row, answer_values, feedback_from_row
from .base import AlreadyTaken, RecordNotFound
from .message_rows import (
    ATTACHMENT_ORDER,
    ATTACHMENT_SELECT,
    MENTION_SELECT,
    MESSAGE_SELECT,
    REACTION_SELECT,
    assemble_messages,
    mentioned_usernames,
)
from .oauth_rows import GRANT_COLUMNS, GRANT_FROM, OAuthSql
from .records import AnswerFeedback, AnswerRating, Attachment, ExternalLink, Message, StoredAnswer
from .rules import (
    check_display_name,
    check_external_id,
    check_origin,
    check_room_name,
    check_source_url,
    check_topic,
    fold,
    to_ms,
)
from .sources import check_external_kind, check_link_how, sync_state_from_text, sync_state_text

__all__ = [
    "OAUTH_SQL",
    "add_members",
    "external_ids",
    "external_links",
    "feedback_since",
    "insert_answer",
    "insert_room_name_keys",
    "link_external",
    "read_answer",
    "read_feedback",
    "read_messages",
    "read_sync_state",
    "rename_room",
    "room_name_clash",
    "set_members",
    "set_source_urls",
    "upsert_feedback",
    "write_attachments",
    "write_mentions",
    "write_sync_state",
]

Conn = psycopg.Connection[Any]
Row = tuple[Any, ...]

# Usernames sort as SQLite's NOCASE column sorts them: folded.
_REACTION_ORDER = "ORDER BY r.message_id, r.ts, ascii_fold(u.username)"
_MENTION_ORDER = "ORDER BY n.message_id, ascii_fold(u.username)"


def _placeholders(count: int) -> str:
    return ", ".join(["%s"] * count)


# -- messages ---------------------------------------------------------------------------------------


def read_messages(conn: Conn, where: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Message]:
    """The messages ``MESSAGE_SELECT`` + ``where`` finds, in its order, each with all it owns (three
    more queries for the whole batch)."""
    rows = conn.execute(f"{MESSAGE_SELECT} {where}", params).fetchall()
    if not rows:
        return []
    ids = ([row[0] for row in rows],)
    return assemble_messages(
        rows,
        conn.execute(
            f"{ATTACHMENT_SELECT} WHERE message_id = ANY(%s::text[]) {ATTACHMENT_ORDER}", ids
        ).fetchall(),
        conn.execute(
            f"{REACTION_SELECT} WHERE r.message_id = ANY(%s::text[]) {_REACTION_ORDER}", ids
        ).fetchall(),
        conn.execute(
            f"{MENTION_SELECT} WHERE n.message_id = ANY(%s::text[]) {_MENTION_ORDER}", ids
        ).fetchall(),
    )


def write_attachments(conn: Conn, message_id: str, attachments: Sequence[Attachment]) -> None:
    if not attachments:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO attachments (message_id, position, name, title, description, type, size)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (message_id, n, a.name, a.title, a.description, a.type, a.size)
                for n, a in enumerate(attachments)
            ],
        )


def write_mentions(conn: Conn, message_id: str, text: str) -> None:
    """Record who the text mentions (people who exist), replacing what an earlier text mentioned."""
    conn.execute("DELETE FROM mentions WHERE message_id = %s", (message_id,))
    usernames = mentioned_usernames(text)
    if usernames:
        conn.execute(
            "INSERT INTO mentions (message_id, user_id)"
            " SELECT %s, id FROM users WHERE ascii_fold(username) = ANY(%s::text[]) ON CONFLICT DO NOTHING",
            (message_id, [fold(name) for name in usernames]),
        )


# -- room names ----------------------------------------------------------------------------------


def room_name_clash(conn: Conn, room_type: str, name: str) -> str | None:
    """``schema.room_name_clash``'s rule (with its reasons) on PostgreSQL, inside a write transaction."""
    others = "" if room_type != "d" else " AND r.t <> 'd'"
    if conn.execute(f"SELECT 1 FROM rooms r WHERE ascii_fold(r.name) = %s{others}", (fold(name),)).fetchone():
        return f"a room named {name!r} already exists"
    keys = sorted(names.confusable_keys(name))
    if conn.execute(
        "SELECT 1 FROM room_name_keys k JOIN rooms r ON r.id = k.room_id"
        f" WHERE k.key = ANY(%s::text[]){others} LIMIT 1",
        (keys,),
    ).fetchone():
        return (
            f"room name {name!r} looks like the name of an existing room (it differs only in "
            "characters that look alike, such as a dotless i or a Cyrillic letter); choose another"
        )
    if room_type != "d" and names.names_people(
        name, lambda: (row[0] for row in conn.execute("SELECT username FROM users"))
    ):
        return names.direct_name_reason(name)
    return None


def insert_room_name_keys(conn: Conn, room_id: str, name: str) -> None:
    conn.execute(
        "INSERT INTO room_name_keys (key, room_id) SELECT key, %s FROM unnest(%s::text[]) key"
        " ON CONFLICT DO NOTHING",
        (room_id, sorted(names.confusable_keys(name))),
    )


# -- answers -------------------------------------------------------------------------------------


def insert_answer(conn: Conn, answer: StoredAnswer) -> None:
    """Raises InvalidValue for too many sources (``answer_rows.answer_values``)."""
    conn.execute(f"INSERT INTO answers ({ANSWER_COLUMNS}) VALUES ({_placeholders(9)})", answer_values(answer))


def read_answer(conn: Conn, answer_id: str) -> StoredAnswer | None:
    row = conn.execute(f"SELECT {ANSWER_COLUMNS} FROM answers WHERE id = %s", (answer_id,)).fetchone()
    return None if row is None else answer_from_row(row)


def upsert_feedback(
    conn: Conn, answer_id: str, user_id: str, rating: AnswerRating, reason: str, now: int
) -> AnswerFeedback:
    """One person's rating of one answer, replacing an earlier one (its first time kept)."""
    row = conn.execute(
        f"INSERT INTO answer_feedback ({FEEDBACK_COLUMNS}) VALUES ({_placeholders(6)})"
        " ON CONFLICT (answer_id, user_id) DO UPDATE SET rating = excluded.rating,"
        f" reason = excluded.reason, updated_at = excluded.updated_at RETURNING {FEEDBACK_COLUMNS}",
        (answer_id, user_id, rating, reason, now, now),
    ).fetchone()
    assert row is not None  # INSERT ... RETURNING always returns its row
    return feedback_from_row(row)


def read_feedback(conn: Conn, answer_id: str, user_id: str) -> AnswerFeedback | None:
    row = conn.execute(
        f"SELECT {FEEDBACK_COLUMNS} FROM answer_feedback WHERE answer_id = %s AND user_id = %s",
        (answer_id, user_id),
    ).fetchone()
    return None if row is None else feedback_from_row(row)


def feedback_since(conn: Conn, since: datetime | None) -> Sequence[tuple[AnswerFeedback, StoredAnswer, str]]:
    """Ratings given or changed at ``since`` or later (all for None), oldest first, with their answer
    and the rater's username."""
    rows = conn.execute(
        f"SELECT {', '.join('f.' + c.strip() for c in FEEDBACK_COLUMNS.split(','))},"
        f" {', '.join('a.' + c.strip() for c in ANSWER_COLUMNS.split(','))}, u.username"
        " FROM answer_feedback f JOIN answers a ON a.id = f.answer_id JOIN users u ON u.id = f.user_id"
        " WHERE f.updated_at >= %s ORDER BY f.updated_at, f.answer_id, f.user_id",
        (0 if since is None else to_ms(since),),
    ).fetchall()
    return [(feedback_from_row(row[:6]), answer_from_row(row[6:15]), str(row[15])) for row in rows]


# -- mirrors of other systems (sources.py's statements, with its reasons) -------------------------


def link_external(conn: Conn, origin: str, kind: str, external_id: str, local_id: str, how: str) -> None:
    check_origin(origin)
    table = "users" if check_external_kind(kind) == "user" else "rooms"
    check_external_id(external_id)
    check_link_how(how)
    if not conn.execute(f"SELECT 1 FROM {table} WHERE id = %s", (local_id,)).fetchone():
        raise RecordNotFound(f"{kind} {local_id!r} does not exist")
    conn.execute(
        "INSERT INTO external_ids (origin, kind, external_id, local_id, how) VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT (origin, kind, external_id) DO UPDATE SET local_id = excluded.local_id, how = excluded.how",
        (origin, kind, external_id, local_id, how),
    )


def external_links(conn: Conn, origin: str, kind: str) -> dict[str, ExternalLink]:
    table = "users" if check_external_kind(kind) == "user" else "rooms"
    rows = conn.execute(
        f"SELECT e.external_id, e.local_id, e.how FROM external_ids e JOIN {table} t ON t.id = e.local_id"
        " WHERE e.origin = %s AND e.kind = %s",
        (origin, kind),
    ).fetchall()
    return {row[0]: ExternalLink(row[1], check_link_how(row[2])) for row in rows}


def external_ids(conn: Conn, origin: str, kind: str) -> dict[str, str]:
    return {external_id: link.local_id for external_id, link in external_links(conn, origin, kind).items()}


def rename_room(conn: Conn, room_id: str, *, name: str | None, fname: str | None, topic: str | None) -> None:
    """Raises AlreadyTaken for a name that clashes, RecordNotFound for an unknown room."""
    row = conn.execute("SELECT t, name FROM rooms WHERE id = %s FOR UPDATE", (room_id,)).fetchone()
    if row is None:
        raise RecordNotFound(f"room {room_id!r} does not exist")
    if name is not None:
        name = check_room_name(name)
        # The room's own keys go first, so it is never its own look-alike; a refusal rolls them back.
        conn.execute("DELETE FROM room_name_keys WHERE room_id = %s", (room_id,))
        clash = None if fold(name) == fold(row[1]) else room_name_clash(conn, row[0], name)
        if clash is not None:
            raise AlreadyTaken(clash)
        conn.execute("UPDATE rooms SET name = %s WHERE id = %s", (name, room_id))
        insert_room_name_keys(conn, room_id, name)
    if fname is not None and fname.strip():
        conn.execute(
            "UPDATE rooms SET fname = %s WHERE id = %s", (check_display_name(fname.strip()), room_id)
        )
    if topic is not None:
        conn.execute("UPDATE rooms SET topic = %s WHERE id = %s", (check_topic(topic), room_id))


def set_members(conn: Conn, room_id: str, user_ids: Sequence[str], now_ms: int) -> tuple[int, int]:
    """Returns (subscribed, unsubscribed); bans are kept either way."""
    wanted = list(dict.fromkeys(user_ids))
    added = _subscribe(conn, room_id, wanted, now_ms)
    removed = conn.execute(
        "DELETE FROM subscriptions WHERE room_id = %s AND NOT banned AND user_id <> ALL(%s::text[])",
        (room_id, wanted),
    ).rowcount
    return added, removed


def add_members(conn: Conn, room_id: str, user_ids: Sequence[str], now_ms: int) -> int:
    """Returns how many were subscribed; nobody is unsubscribed, bans are kept."""
    return _subscribe(conn, room_id, list(dict.fromkeys(user_ids)), now_ms)


def _subscribe(conn: Conn, room_id: str, wanted: list[str], now_ms: int) -> int:
    if not conn.execute("SELECT 1 FROM rooms WHERE id = %s", (room_id,)).fetchone():
        raise RecordNotFound(f"room {room_id!r} does not exist")
    missing = conn.execute(
        "SELECT w FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, n)"
        " WHERE NOT EXISTS (SELECT 1 FROM users WHERE id = w) ORDER BY n LIMIT 1",
        (wanted,),
    ).fetchone()
    if missing:
        raise RecordNotFound(f"user {missing[0]!r} does not exist")
    return int(
        conn.execute(
            "INSERT INTO subscriptions (user_id, room_id, banned, created_at)"
            " SELECT w, %s, false, %s FROM unnest(%s::text[]) w ON CONFLICT DO NOTHING",
            (room_id, now_ms, wanted),
        ).rowcount
    )


def set_source_urls(conn: Conn, urls: Mapping[str, str | None]) -> int:
    """Set (or clear, with None) the source link of existing messages; returns how many changed."""
    ids = list(urls)
    links = [
        None if urls[message_id] is None else check_source_url(str(urls[message_id])) for message_id in ids
    ]
    return conn.execute(
        "UPDATE messages m SET source_url = v.url FROM unnest(%s::text[], %s::text[]) AS v(id, url)"
        " WHERE m.id = v.id AND m.source_url IS DISTINCT FROM v.url",
        (ids, links),
    ).rowcount


def read_sync_state(conn: Conn, origin: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT state FROM sync_state WHERE origin = %s", (origin,)).fetchone()
    return sync_state_from_text(None if row is None else row[0])


def write_sync_state(conn: Conn, origin: str, state: Mapping[str, Any], now_ms: int) -> None:
    conn.execute(
        "INSERT INTO sync_state (origin, state, updated_at) VALUES (%s, %s, %s)"
        " ON CONFLICT (origin) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
        (origin, sync_state_text(origin, state), now_ms),
    )


# -- OAuth grants (oauth_rows.py's rules; booleans are PostgreSQL's own) -----------------------------

OAUTH_SQL = OAuthSql(
    delete_stale_clients=(
        "DELETE FROM oauth_clients WHERE created_at < %s"
        " AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)"
        " AND NOT EXISTS (SELECT 1 FROM oauth_codes k WHERE k.client_id = oauth_clients.id)"
    ),
    count_clients="SELECT count(*) FROM oauth_clients",
    insert_client=(
        "INSERT INTO oauth_clients (id, secret_hash, name, metadata, created_at) VALUES (%s, %s, %s, %s, %s)"
    ),
    read_client="SELECT id, name, metadata, secret_hash, created_at FROM oauth_clients WHERE id = %s",
    delete_expired_codes="DELETE FROM oauth_codes WHERE expires_at < %s",
    insert_code=(
        "INSERT INTO oauth_codes (hash, grant_id, client_id, user_id, redirect_uri, scope, resource,"
        f" code_challenge, code_challenge_method, expires_at) VALUES ({_placeholders(10)})"
    ),
    # Locked: another process redeeming the same code waits, then sees it used.
    read_code=(
        "SELECT grant_id, client_id, user_id, redirect_uri, scope, resource, code_challenge,"
        " code_challenge_method, expires_at, used_at FROM oauth_codes WHERE hash = %s FOR UPDATE"
    ),
    mark_code_used="UPDATE oauth_codes SET used_at = %s WHERE hash = %s",
    delete_tokens_of_grant="DELETE FROM oauth_tokens WHERE grant_id = %s",
    delete_dead_tokens=(
        "DELETE FROM oauth_tokens WHERE user_id = %s AND access_expires_at <= %s"
        " AND coalesce(refresh_expires_at, 0) <= %s"
    ),
    grant_exists="SELECT 1 FROM oauth_tokens WHERE grant_id = %s LIMIT 1",
    delete_oldest_grants=(
        "DELETE FROM oauth_tokens WHERE grant_id IN (SELECT grant_id FROM oauth_tokens"
        " WHERE user_id = %s AND rotated_at IS NULL ORDER BY created_at DESC, id DESC OFFSET %s)"
    ),
    insert_tokens=(
        "INSERT INTO oauth_tokens (id, grant_id, user_id, client_id, scope, resource, access_hash,"
        f" refresh_hash, created_at, access_expires_at, refresh_expires_at) VALUES ({_placeholders(11)})"
    ),
    resolve_access=(
        f"SELECT {GRANT_COLUMNS}{GRANT_FROM} WHERE t.access_hash = %s AND t.rotated_at IS NULL"
        " AND t.access_expires_at > %s AND u.active"
    ),
    touch="UPDATE oauth_tokens SET last_used_at = %s WHERE id = %s",
    grant_by_refresh=f"SELECT {GRANT_COLUMNS}, t.rotated_at{GRANT_FROM} WHERE t.refresh_hash = %s AND u.active",
    mark_rotated="UPDATE oauth_tokens SET rotated_at = %s WHERE id = %s AND rotated_at IS NULL",
    delete_grant_of_user="DELETE FROM oauth_tokens WHERE grant_id = %s AND user_id = %s",
    grant_of_token=(
        "SELECT grant_id FROM oauth_tokens WHERE (access_hash = %s OR refresh_hash = %s) AND client_id = %s"
    ),
    list_grants=(
        f"SELECT {GRANT_COLUMNS}{GRANT_FROM} WHERE t.user_id = %s AND t.rotated_at IS NULL"
        " AND (t.access_expires_at > %s OR coalesce(t.refresh_expires_at, 0) > %s) ORDER BY t.created_at, t.id"
    ),
)
