"""Messages: post into a room the caller reads (or into a thread of it), fetch, edit and delete one.

Editing and deleting follow Rocket.Chat's rules: your own message always, someone else's only with
``edit-message`` / ``delete-message`` (admins); deleting your own needs ``delete-own-message``, which
members have. A message in a room the caller cannot read answers as one that does not exist.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from .. import errors
from ..api_limits import MAX_ID_CHARS, MAX_MESSAGE_TEXT_CHARS
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router
from ..store import base as store_base
from ..store.records import Message, Room
from .access import (
    MESSAGE_NOT_FOUND,
    MESSAGE_REFUSAL,
    ROOM_REFUSAL,
    readable_message,
    readable_room,
    room_by_reference,
)
from .params import Id, NameReference, Params
from .replies import MessageReply, PostedMessageReply
from .shapes import message_json

router = Router(tags=("Chat",))

# Messages one user may post per minute through the API.
POST_RATE_LIMIT = RateLimit(count=60, period_seconds=60)
# Single-message reads per user and minute; generous, it is the cheapest route.
READ_RATE_LIMIT = RateLimit(count=1200, period_seconds=60)


def _storable_text(value: str) -> str:
    # The store's own rules for a message (store/rules.py check_text), checked where the caller learns
    # which parameter is wrong: FTS5 and other SQLite functions stop reading a string at NUL.
    if not value.strip():
        raise ValueError("must hold a non-space character")
    if "\x00" in value:
        raise ValueError("must not hold NUL characters")
    return value


Text = Annotated[
    str,
    Field(min_length=1, max_length=MAX_MESSAGE_TEXT_CHARS, description="The message text."),
    AfterValidator(_storable_text),
]


ThreadId = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="Id of a message of the room: the new message is a reply in its thread.",
    ),
]


class PostByRoomId(Params):
    roomId: Id = Field(description="Id of the room to post into.")
    text: Text
    tmid: ThreadId = None


class PostByChannel(Params):
    channel: NameReference = Field(
        description="#channel-name, or @username for the direct room with that user."
    )
    text: Text
    tmid: ThreadId = None


@router.post(
    "chat.postMessage",
    PostByRoomId,
    PostByChannel,
    title="Post a message",
    reply=PostedMessageReply,
    description="Post a message into a room the authenticated user is a member of.",
    variant_descriptions=(
        "Post a message into a room, given the room's id.",
        "Post a message into a room, given #channel-name or @username (direct message).",
    ),
    rate_limit=POST_RATE_LIMIT,
    refuses=(ROOM_REFUSAL, MESSAGE_REFUSAL),
)
async def post_message(req: ApiRequest[PostByRoomId | PostByChannel]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    if isinstance(params, PostByRoomId):
        room = readable_room(store, req.user, params.roomId)
    else:
        room = room_by_reference(store, req.user, params.channel)
    try:
        message = store.post_message(room.id, req.user.id, params.text, tmid=params.tmid)
    except store_base.RecordNotFound:  # the thread's first message is not in this room
        raise errors.NotFound(MESSAGE_NOT_FOUND, error_type="error-invalid-thread") from None
    return {"ts": int(message.ts.timestamp() * 1000), "channel": room.name, "message": message_json(message)}


class GetMessageParams(Params):
    msgId: Id = Field(description="Id of the message.")


@router.get(
    "chat.getMessage",
    GetMessageParams,
    title="Get a message",
    reply=MessageReply,
    description="Get one message by id, if it is in a room the authenticated user can read.",
    rate_limit=READ_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL,),
)
async def get_message(req: ApiRequest[GetMessageParams]) -> dict[str, Any]:
    message, _room = readable_message(req.services.store, req.user, req.params.msgId)
    return {"message": message_json(message)}


class UpdateParams(Params):
    roomId: Id = Field(description="Id of the message's room.")
    msgId: Id = Field(description="Id of the message to edit.")
    text: Text


def _own_or_permitted(req: ApiRequest[Any], message: Message, others_permission: str) -> None:
    if message.user_id != req.user.id and others_permission not in req.caller_permissions:
        raise errors.Forbidden(
            "Only the author, or someone with the permission, may change this message",
            error_type="error-action-not-allowed",
        )


@router.post(
    "chat.update",
    UpdateParams,
    title="Edit a message",
    destructive=True,
    idempotent=True,
    description="Edit a message's text: your own, or anyone's with the edit-message permission.",
    rate_limit=POST_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL, Refusal(errors.Forbidden.status, "Not the author, and no edit-message")),
)
async def update_message(req: ApiRequest[UpdateParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    message, _room = _message_in(req, params.roomId, params.msgId)
    _own_or_permitted(req, message, "edit-message")
    editor = None if message.user_id == req.user.id else req.user.id
    edited = store.edit_message(message.id, params.text, edited_by=editor)
    return {"message": message_json(edited)}


class DeleteParams(Params):
    roomId: Id = Field(description="Id of the message's room.")
    msgId: Id = Field(description="Id of the message to delete.")
    asUser: bool = Field(default=False, description="Accepted for compatibility; ignored.")


@router.post(
    "chat.delete",
    DeleteParams,
    title="Delete a message",
    destructive=True,
    idempotent=True,
    description="Delete a message: your own (delete-own-message), or anyone's with delete-message.",
    rate_limit=POST_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL, Refusal(errors.Forbidden.status, "Not allowed to delete this message")),
)
async def delete_message(req: ApiRequest[DeleteParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    message, _room = _message_in(req, params.roomId, params.msgId)
    own = message.user_id == req.user.id
    needed = "delete-own-message" if own else "delete-message"
    if needed not in req.caller_permissions and "delete-message" not in req.caller_permissions:
        raise errors.Forbidden("Not allowed to delete this message", error_type="error-action-not-allowed")
    store.delete_message(message.id)
    return {"_id": message.id, "ts": int(message.ts.timestamp() * 1000), "message": {"_id": message.id}}


def _message_in(req: ApiRequest[Any], room_id: str, message_id: str) -> tuple[Message, Room]:
    """The message, readable by the caller and in ``room_id``; else the one answer for "no such"."""
    message, room = readable_message(req.services.store, req.user, message_id)
    if room.id != room_id:
        raise errors.NotFound(MESSAGE_NOT_FOUND, error_type="error-message-not-found")
    return message, room
