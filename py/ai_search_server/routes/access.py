"""Who may read what: the one place routes ask whether a room or message is visible to a caller.

A room the caller is not subscribed to (or is banned from) answers exactly as a room that does not
exist, so the API never confirms that a private room or message exists.
"""

from __future__ import annotations

from .. import errors
from ..api import Refusal
from ..store.base import Store
from ..store.records import Message, Room, User

__all__ = ["MESSAGE_REFUSAL", "ROOM_REFUSAL", "readable_message", "readable_room", "room_by_reference"]

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
    """``#name`` or a bare name: a channel or group; ``@username``: the direct room with that user.

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
    room = store.get_room_by_name(reference)
    if room is None:
        raise errors.NotFound(ROOM_NOT_FOUND, error_type="error-room-not-found")
    return readable_room(store, user, room.id)
