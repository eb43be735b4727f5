"""What the store keeps of other systems it mirrors: external ids, origins, source links, sync state.

An import of a Slack, Mattermost or Zulip export, and the live Rocket.Chat mirror, are the same job
done again and again: a newer export renames a channel, drops a member, deletes a message. These
statements let them do it without SQL of their own (migration 5 made the tables):

- ``external_ids`` maps a source's user and room ids to ours, so ``C024BE91L`` stays one room
  whatever it is called today, and says how each link came to be (``how``: the source created that
  user or room, an admin mapped it, or an import from before links were recorded adopted it by
  name), which bounds what the source may change of it (migration 10);
- ``messages.origin`` says which source a message came from, so a newer export deletes only what
  that source held, never a message written here;
- ``sync_state`` holds a mirror's cursors as JSON, so a crashed sync resumes where it stopped.

Each function runs inside the caller's transaction (``SQLiteStore`` opens it). The checks and the
sync state's JSON (``check_external_kind``, ``sync_state_text``) are every store's; the statements
are SQLite's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from .base import AlreadyTaken, InvalidValue, RecordNotFound
from .records import ExternalKind, ExternalLink, LinkHow
from .rules import (
    check_display_name,
    check_external_id,
    check_origin,
    check_room_name,
    check_source_url,
    check_topic,
    fold,
)
from .schema import insert_room_name_keys, room_name_clash

__all__ = [
    "LINK_HOWS",
    "MAX_SYNC_STATE_BYTES",
    "add_members",
    "check_external_kind",
    "check_link_how",
    "external_ids",
    "external_links",
    "link_external",
    "origin_message_ids",
    "read_sync_state",
    "rename_room",
    "set_members",
    "set_source_urls",
    "sync_state_from_text",
    "sync_state_text",
    "write_sync_state",
]

# Bytes of one origin's sync state as JSON: a cursor per room is ~60 bytes, so a workspace of
# 10,000 rooms fits with room to spare; more means a bug writing something it should not.
MAX_SYNC_STATE_BYTES = 4 * 1024 * 1024
_KINDS = ("user", "room")
# How a link came to be (records.LinkHow), as the column ``external_ids.how`` holds it.
LINK_HOWS: tuple[LinkHow, ...] = ("created", "mapped", "adopted")


def check_external_kind(kind: str) -> ExternalKind:
    if kind not in _KINDS:
        raise InvalidValue(f"an external id names a user or a room, not {kind!r}")
    return kind  # type: ignore[return-value]


def check_link_how(how: str) -> LinkHow:
    if how not in LINK_HOWS:
        raise InvalidValue(f"a link is {', '.join(LINK_HOWS)}, not {how!r}")
    return how


def link_external(
    conn: sqlite3.Connection, origin: str, kind: str, external_id: str, local_id: str, how: str
) -> None:
    """Map (origin, kind, external id) to ``local_id``, replacing an earlier mapping and how it came to be."""
    check_origin(origin)
    check_external_kind(kind)
    check_external_id(external_id)
    check_link_how(how)
    table = "users" if kind == "user" else "rooms"
    if not conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (local_id,)).fetchone():
        raise RecordNotFound(f"{kind} {local_id!r} does not exist")
    conn.execute(
        "INSERT INTO external_ids (origin, kind, external_id, local_id, how) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (origin, kind, external_id) DO UPDATE SET local_id = excluded.local_id, how = excluded.how",
        (origin, kind, external_id, local_id, how),
    )


def external_links(conn: sqlite3.Connection, origin: str, kind: str) -> dict[str, ExternalLink]:
    """Every link of one origin and kind, external id -> (local id, how), to users or rooms that exist."""
    table = "users" if check_external_kind(kind) == "user" else "rooms"
    rows = conn.execute(
        f"SELECT e.external_id, e.local_id, e.how FROM external_ids e JOIN {table} t ON t.id = e.local_id"
        " WHERE e.origin = ? AND e.kind = ?",
        (origin, kind),
    ).fetchall()
    return {external_id: ExternalLink(local_id, check_link_how(how)) for external_id, local_id, how in rows}


def external_ids(conn: sqlite3.Connection, origin: str, kind: str) -> dict[str, str]:
    """Every mapping of one origin and kind, external id -> local id, of users or rooms that exist."""
    return {external_id: link.local_id for external_id, link in external_links(conn, origin, kind).items()}


def rename_room(
    conn: sqlite3.Connection, room_id: str, *, name: str | None, fname: str | None, topic: str | None
) -> None:
    """Rename a room or change its topic. A new name obeys what a new room's would
    (``schema.room_name_clash``: no other room's name, no look-alike of one). Raises AlreadyTaken for a
    name that clashes, RecordNotFound for an unknown room."""
    row = conn.execute("SELECT t, name FROM rooms WHERE id = ?", (room_id,)).fetchone()
    if row is None:
        raise RecordNotFound(f"room {room_id!r} does not exist")
    if name is not None:
        name = check_room_name(name)
        # The room's own keys go first, so it is never its own look-alike; a refusal rolls them back.
        conn.execute("DELETE FROM room_name_keys WHERE room_id = ?", (room_id,))
        clash = None if fold(name) == fold(row[1]) else room_name_clash(conn, row[0], name)
        if clash is not None:
            raise AlreadyTaken(clash)
        conn.execute("UPDATE rooms SET name = ? WHERE id = ?", (name, room_id))
        insert_room_name_keys(conn, room_id, name)
    if fname is not None and fname.strip():
        conn.execute("UPDATE rooms SET fname = ? WHERE id = ?", (check_display_name(fname.strip()), room_id))
    if topic is not None:
        conn.execute("UPDATE rooms SET topic = ? WHERE id = ?", (check_topic(topic), room_id))


def set_members(
    conn: sqlite3.Connection, room_id: str, user_ids: Sequence[str], now_ms: int
) -> tuple[int, int]:
    """Make ``user_ids`` the room's members: subscribe the missing ones, unsubscribe the others.
    A ban is kept either way (a banned member stays banned; a ban outlives leaving). Returns
    (subscribed, unsubscribed)."""
    wanted = json.dumps(list(dict.fromkeys(user_ids)))
    added = _subscribe(conn, room_id, wanted, now_ms)
    removed = conn.execute(
        "DELETE FROM subscriptions WHERE room_id = ? AND banned = 0"
        " AND user_id NOT IN (SELECT value FROM json_each(?))",
        (room_id, wanted),
    ).rowcount
    return added, removed


def add_members(conn: sqlite3.Connection, room_id: str, user_ids: Sequence[str], now_ms: int) -> int:
    """Subscribe those of ``user_ids`` who are not members (a ban kept), unsubscribing nobody;
    returns how many were subscribed."""
    return _subscribe(conn, room_id, json.dumps(list(dict.fromkeys(user_ids))), now_ms)


def _subscribe(conn: sqlite3.Connection, room_id: str, wanted: str, now_ms: int) -> int:
    """Subscribe the users of ``wanted`` (a JSON list of ids) who are not members yet; RecordNotFound
    for an unknown room or user."""
    if not conn.execute("SELECT 1 FROM rooms WHERE id = ?", (room_id,)).fetchone():
        raise RecordNotFound(f"room {room_id!r} does not exist")
    missing = conn.execute(
        "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT id FROM users)", (wanted,)
    ).fetchone()
    if missing:
        raise RecordNotFound(f"user {missing[0]!r} does not exist")
    return conn.execute(
        "INSERT OR IGNORE INTO subscriptions (user_id, room_id, banned, created_at)"
        " SELECT value, ?, 0, ? FROM json_each(?)",
        (room_id, now_ms, wanted),
    ).rowcount


def origin_message_ids(
    conn: sqlite3.Connection, room_id: str, origin: str, start_ms: int, end_ms: int
) -> list[str]:
    """Ids of the room's messages from ``origin`` with start <= ts < end, oldest first."""
    rows = conn.execute(
        "SELECT id FROM messages WHERE room_id = ? AND origin = ? AND ts >= ? AND ts < ? ORDER BY ts, id",
        (room_id, origin, start_ms, end_ms),
    ).fetchall()
    return [row[0] for row in rows]


def set_source_urls(conn: sqlite3.Connection, urls: Mapping[str, str | None]) -> int:
    """Set (or clear, with None) the source link of existing messages; returns how many changed."""
    pairs = [(None if url is None else check_source_url(url), message_id) for message_id, url in urls.items()]
    cursor = conn.executemany(
        "UPDATE messages SET source_url = ? WHERE id = ? AND source_url IS NOT ?",
        [(url, message_id, url) for url, message_id in pairs],
    )
    return cursor.rowcount


def sync_state_text(origin: str, state: Mapping[str, Any]) -> str:
    """The JSON a sync state is kept as; InvalidValue for a bad origin or over MAX_SYNC_STATE_BYTES."""
    check_origin(origin)
    text = json.dumps(state, separators=(",", ":"), sort_keys=True)
    if len(text.encode("utf-8")) > MAX_SYNC_STATE_BYTES:
        raise InvalidValue(f"a sync state holds at most {MAX_SYNC_STATE_BYTES} bytes of JSON")
    return text


def sync_state_from_text(text: str | None) -> dict[str, Any] | None:
    """A kept sync state, or None (none kept, or not an object)."""
    if text is None:
        return None
    state = json.loads(text)
    return state if isinstance(state, dict) else None


def read_sync_state(conn: sqlite3.Connection, origin: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT state FROM sync_state WHERE origin = ?", (origin,)).fetchone()
    return sync_state_from_text(None if row is None else row[0])


def write_sync_state(conn: sqlite3.Connection, origin: str, state: Mapping[str, Any], now_ms: int) -> None:
    text = sync_state_text(origin, state)
    conn.execute(
        "INSERT INTO sync_state (origin, state, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (origin) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
        (origin, text, now_ms),
    )
