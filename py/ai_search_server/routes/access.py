"""Who may read what: the one place routes ask whether a room, message or person is visible to a caller.

A room the caller is not subscribed to (or is banned from) answers exactly as a room that does not
exist, so the API never confirms that a private room or message exists. People likewise: a caller sees
themself and the people who share a room they read (:func:`visible_user_ids`), and every route that
names a person (``users.info``, ``users.autocomplete``) answers one it may not see exactly as one that
does not exist, so the user directory is not an enumeration oracle.
"""

from __future__ import annotations

from .. import errors
from ..rest import Refusal
from ..store.base import Store
from ..store.records import Message, Room, User

__all__ = [
    "MESSAGE_REFUSAL",
    "ROOM_REFUSAL",
    "readable_message",
    "readable_room",
    "room_by_reference",
    "visible_user",
    "visible_user_ids",
]

ROOM_NOT_FOUND = "Room not found or not accessible"
MESSAGE_NOT_FOUND = "Message not found or not accessible"
# What the routes that look rooms and messages up here declare (``refuses=``) for the OpenAPI document.
ROOM_REFUSAL = Refusal(errors.NotFound.status, ROOM_NOT_FOUND)
MESSAGE_REFUSAL = Refusal(errors.NotFound.status, MESSAGE_NOT_FOUND)


def readable_room(store: Store, user: User, room_id: str) -> Room:
    """Raises errors.NotFound unless the user may read the room."""
    room = store.get_room(room_id)
    sub = store.get_subscription(user.id, room_id) if room is not None else None
    if room is None or sub is None or sub.banned:
        raise errors.NotFound(ROOM_NOT_FOUND, error_type="error-room-not-found")
    return room


def readable_message(store: Store, user: User, message_id: str) -> tuple[Message, Room]:
    """Raises errors.NotFound unless the message exists in a room the user may read."""
    message = store.get_message(message_id)
    if message is None:
        raise errors.NotFound(MESSAGE_NOT_FOUND, error_type="error-message-not-found")
    try:
        room = readable_room(store, user, message.room_id)
    except errors.NotFound:
        raise errors.NotFound(MESSAGE_NOT_FOUND, error_type="error-message-not-found") from None
    return message, room


def room_by_reference(store: Store, user: User, reference: str) -> Room:
    """``#name`` or a bare name: the room of that name the user reads (a direct room first, see
    ``Store.readable_room_by_name``); ``@username``: the direct room with that user.

    Raises:
        errors.NotFound: no such room, or not readable by the user.
    """
    if reference.startswith("@"):
        other = store.get_user_by_username(reference)
        if other is None:
            raise errors.NotFound(ROOM_NOT_FOUND, error_type="error-room-not-found")
        for sub in store.subscriptions_of(user.id):
            room = store.get_room(sub.room_id)
            if (
                room is not None
                and room.type == "d"
                and set(store.members_of(room.id)) == {user.id, other.id}
            ):
                return room
        raise errors.NotFound(ROOM_NOT_FOUND, error_type="error-room-not-found")
    # Resolved among the caller's own rooms only: a room they cannot read never shadows one they can.
    room = store.readable_room_by_name(user.id, reference)
    if room is None:
        raise errors.NotFound(ROOM_NOT_FOUND, error_type="error-room-not-found")
    return room


def visible_user_ids(store: Store, user: User) -> set[str]:
    """The caller and everyone subscribed (not banned) to a room the caller reads."""
    visible = {user.id}
    for room_id in store.readable_room_ids(user.id):
        visible.update(store.members_of(room_id))
    return visible


def visible_user(store: Store, caller: User, other: User | None) -> User | None:
    """``other`` when the caller may see them (themself, or an active person sharing a readable room)."""
    if other is None:
        return None
    if other.id == caller.id:
        return other
    if not other.active or other.id not in visible_user_ids(store, caller):
        return None
    return other
