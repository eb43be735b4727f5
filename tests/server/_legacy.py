"""Rooms as a store without the room-name rules wrote them: straight into the workspace file.

A workspace made before channels and DMs were kept apart may already hold a channel with a DM's
name. The store refuses to make one now, so tests that need such a room write it with SQL, as that
older store would have, and then check what names mean to people.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import psycopg

from ai_search_server.store.base import Store
from ai_search_server.store.postgres import PostgresStore
from ai_search_server.store.records import Room

__all__ = ["write_legacy_room"]


def write_legacy_room(
    store: Store, room_id: str, kind: str, name: str, member_ids: Sequence[str], *, created_at_ms: int = 0
) -> Room:
    """A ``kind`` room named ``name`` with ``member_ids`` subscribed, written into the store's file
    (or its PostgreSQL database)."""
    if isinstance(store, PostgresStore):
        with psycopg.connect(store.url) as pg, pg.cursor() as cursor:
            cursor.execute(
                "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at)"
                " VALUES (%s, %s, %s, %s, '', NULL, %s)",
                (room_id, kind, name, name, created_at_ms),
            )
            cursor.executemany(
                "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (%s, %s, false, 0)",
                [(member, room_id) for member in member_ids],
            )
        found = store.get_room(room_id)
        assert found is not None
        return found
    with sqlite3.connect(store.path) as db:  # type: ignore[attr-defined]
        db.execute(
            "INSERT INTO rooms (id, t, name, fname, topic, creator_id, created_at) VALUES (?, ?, ?, ?, '', NULL, ?)",
            (room_id, kind, name, name, created_at_ms),
        )
        db.executemany(
            "INSERT INTO subscriptions (user_id, room_id, banned, created_at) VALUES (?, ?, 0, 0)",
            [(member, room_id) for member in member_ids],
        )
    db.close()
    room = store.get_room(room_id)
    assert room is not None
    return room
