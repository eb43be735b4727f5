"""Rocket.Chat-shaped JSON for store records, so existing clients and agents read them as they are."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..store.records import Message, Room, Subscription, ThreadSummary, User

__all__ = ["iso", "message_json", "room_json", "subscription_json", "user_json"]


def iso(ts: datetime) -> str:
    """``2026-11-30T12:00:00.000Z``: the form JavaScript's Date#toISOString writes."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def user_json(user: User, *, full: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"_id": user.id, "username": user.username, "name": user.name}
    if full:
        out.update(
            {
                "roles": list(user.roles),
                "active": user.active,
                "createdAt": iso(user.created_at),
                "type": "user",
            }
        )
    return out


def room_json(room: Room, *, usernames: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "_id": room.id,
        "t": room.type,
        "name": room.name,
        "fname": room.fname,
        "ts": iso(room.created_at),
    }
    if room.topic:
        out["topic"] = room.topic
    if usernames is not None:
        out["usernames"] = usernames
    return out


def message_json(message: Message, thread: ThreadSummary | None = None) -> dict[str, Any]:
    """Rocket.Chat's message shape: a reply has ``tmid``; a thread's first message, given its
    ``thread`` summary, has ``tcount``, ``tlm`` and ``replies`` (the repliers' ids)."""
    out: dict[str, Any] = {
        "_id": message.id,
        "rid": message.room_id,
        "msg": message.text,
        "ts": iso(message.ts),
        "u": {"_id": message.user_id, "username": message.username, "name": message.user_name},
        "_updatedAt": iso(message.edited_at or message.ts),
    }
    if message.edited_at is not None:
        out["editedAt"] = iso(message.edited_at)
        if message.edited_by is not None:
            out["editedBy"] = {"_id": message.edited_by}
    if message.tmid is not None:
        out["tmid"] = message.tmid
    if thread is not None:
        out.update({"tcount": thread.count, "tlm": iso(thread.last_reply_at), "replies": list(thread.participants)})
    if message.attachments:
        out["files"] = [{"name": a.name, "type": a.type, "size": a.size} for a in message.attachments]
        out["attachments"] = [
            {"type": "file", "title": a.title or a.name, "description": a.description, "size": a.size}
            for a in message.attachments
        ]
    if message.reactions:
        out["reactions"] = {r.emoji: {"usernames": list(r.usernames)} for r in message.reactions}
    if message.mentions:
        out["mentions"] = [{"username": username, "type": "user"} for username in message.mentions]
    if message.pinned_at is not None:
        out.update({"pinned": True, "pinnedAt": iso(message.pinned_at), "pinnedBy": {"_id": message.pinned_by}})
    return out


def subscription_json(sub: Subscription, room: Room) -> dict[str, Any]:
    return {
        "_id": f"{sub.room_id}{sub.user_id}",
        "rid": sub.room_id,
        "u": {"_id": sub.user_id},
        "t": room.type,
        "name": room.name,
        "fname": room.fname,
        "ts": iso(sub.created_at),
        "open": True,
        "banned": sub.banned,
    }
