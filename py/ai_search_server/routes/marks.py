"""Marks people put on messages: reactions and pins (Rocket.Chat's ``chat.react``, ``chat.pinMessage``,
``chat.unPinMessage`` and ``chat.getPinnedMessages``), in rooms the caller reads."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from .. import errors
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router
from ..store import base as store_base
from ..store.rules import MAX_EMOJI_LENGTH, check_emoji
from .access import MESSAGE_REFUSAL, ROOM_REFUSAL, readable_message, readable_room
from .params import DEFAULT_COUNT, Count, Id, Offset, Params
from .shapes import message_json
from .threads import messages_json

__all__ = ["router"]

router = Router(tags=("Chat",))

# Reactions and pins per user and minute: a person clicking, not a script.
MARK_RATE_LIMIT = RateLimit(count=60, period_seconds=60)
LIST_RATE_LIMIT = RateLimit(count=120, period_seconds=60)

Emoji = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_EMOJI_LENGTH,
        description="The emoji, as :name: (the colons are optional).",
    ),
]


class ReactParams(Params):
    messageId: Id = Field(description="Id of the message.")
    emoji: Emoji
    shouldReact: bool | None = Field(
        default=None, description="true adds the reaction, false takes it back; absent toggles it."
    )


@router.post(
    "chat.react",
    ReactParams,
    title="React to a message",
    destructive=True,
    description="Add, take back or toggle your emoji reaction on a message of a room you read.",
    rate_limit=MARK_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL,),
)
async def react(req: ApiRequest[ReactParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    message, _room = readable_message(store, req.user, params.messageId)
    try:
        emoji = check_emoji(params.emoji)
    except store_base.InvalidValue as error:
        raise errors.InvalidParams(f"Invalid parameters: 'emoji': {error}") from None
    mine = any(r.emoji == emoji and req.user.username in r.usernames for r in message.reactions)
    react_now = (not mine) if params.shouldReact is None else params.shouldReact
    store.set_reaction(message.id, req.user.id, emoji, react_now)
    return {}


class PinParams(Params):
    messageId: Id = Field(description="Id of the message.")


_PIN_REFUSALS = (MESSAGE_REFUSAL, Refusal(errors.Forbidden.status, "The caller lacks pin-message"))


@router.post(
    "chat.pinMessage",
    PinParams,
    title="Pin a message",
    idempotent=True,
    description="Pin a message of a room you read (pin-message permission).",
    permissions=("pin-message",),
    rate_limit=MARK_RATE_LIMIT,
    refuses=_PIN_REFUSALS,
)
async def pin_message(req: ApiRequest[PinParams]) -> dict[str, Any]:
    store = req.services.store
    message, _room = readable_message(store, req.user, req.params.messageId)
    return {"message": message_json(store.set_pinned(message.id, req.user.id))}


@router.post(
    "chat.unPinMessage",
    PinParams,
    title="Unpin a message",
    destructive=True,
    idempotent=True,
    description="Unpin a message of a room you read (pin-message permission).",
    permissions=("pin-message",),
    rate_limit=MARK_RATE_LIMIT,
    refuses=_PIN_REFUSALS,
)
async def unpin_message(req: ApiRequest[PinParams]) -> dict[str, Any]:
    store = req.services.store
    message, _room = readable_message(store, req.user, req.params.messageId)
    store.set_pinned(message.id, None)
    return {}


class PinnedParams(Params):
    roomId: Id = Field(description="Id of the room.")
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


@router.get(
    "chat.getPinnedMessages",
    PinnedParams,
    title="List pinned messages",
    description="List the pinned messages of a room you read, the latest pinned first.",
    rate_limit=LIST_RATE_LIMIT,
    refuses=(ROOM_REFUSAL,),
)
async def pinned_messages(req: ApiRequest[PinnedParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    room = readable_room(store, req.user, params.roomId)
    found, total = store.pinned_messages(room.id, offset=params.offset, limit=params.count)
    return {
        "messages": messages_json(store, found),
        "count": len(found),
        "offset": params.offset,
        "total": total,
    }
