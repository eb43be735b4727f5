"""Messages: post into a room the caller reads, and fetch one message by id."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from ..api import ApiRequest, RateLimitRule, Router
from ..limits import MAX_MESSAGE_TEXT_CHARS
from .access import MESSAGE_REFUSAL, ROOM_REFUSAL, readable_message, readable_room, room_by_reference
from .params import Id, NameReference, Params
from .shapes import message_json

router = Router(tags=("Chat",))

# Messages one user may post per minute through the API.
POST_RATE_LIMIT = RateLimitRule(count=60, period_seconds=60)
# Single-message reads per user and minute; generous, it is the cheapest route.
READ_RATE_LIMIT = RateLimitRule(count=1200, period_seconds=60)


def _storable_text(value: str) -> str:
    # The store's own rules for a message (store/schema.py check_text), checked where the caller learns
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


class PostByRoomId(Params):
    roomId: Id = Field(description="Id of the room to post into.")
    text: Text


class PostByChannel(Params):
    channel: NameReference = Field(
        description="#channel-name, or @username for the direct room with that user."
    )
    text: Text


@router.post(
    "chat.postMessage",
    PostByRoomId,
    PostByChannel,
    description="Post a message into a room the authenticated user is a member of.",
    variant_descriptions=(
        "Post a message into a room, given the room's id.",
        "Post a message into a room, given #channel-name or @username (direct message).",
    ),
    rate_limit=POST_RATE_LIMIT,
    refuses=(ROOM_REFUSAL,),
)
async def post_message(req: ApiRequest[PostByRoomId | PostByChannel]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    if isinstance(params, PostByRoomId):
        room = readable_room(store, req.user, params.roomId)
    else:
        room = room_by_reference(store, req.user, params.channel)
    message = store.post_message(room.id, req.user.id, params.text)
    return {"ts": int(message.ts.timestamp() * 1000), "channel": room.name, "message": message_json(message)}


class GetMessageParams(Params):
    msgId: Id = Field(description="Id of the message.")


@router.get(
    "chat.getMessage",
    GetMessageParams,
    description="Get one message by id, if it is in a room the authenticated user can read.",
    rate_limit=READ_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL,),
)
async def get_message(req: ApiRequest[GetMessageParams]) -> dict[str, Any]:
    message, _room = readable_message(req.services.store, req.user, req.params.msgId)
    return {"message": message_json(message)}
