"""A room's messages by time and by plain text: Rocket.Chat's ``channels.history``, ``groups.history``,
``im.history`` and ``chat.search``, in rooms the caller reads.

Each history route reads rooms of its own kind only (``channels.history`` public channels, and so on),
as upstream does; a room of another kind answers as a room that does not exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from .. import errors
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Router
from ..store.records import RoomType
from .access import ROOM_NOT_FOUND, ROOM_REFUSAL, readable_room
from .params import DEFAULT_COUNT, Count, Id, Offset, Params
from .replies import HistoryReply
from .threads import messages_json

__all__ = ["MAX_SEARCH_TEXT_CHARS", "router"]

router = Router(tags=("History",))

HISTORY_RATE_LIMIT = RateLimit(count=120, period_seconds=60)
# Characters of chat.search's searchText.
MAX_SEARCH_TEXT_CHARS = 500


class HistoryParams(Params):
    roomId: Id = Field(description="Id of the room.")
    latest: datetime | None = Field(default=None, description="ISO 8601: only messages before it.")
    oldest: datetime | None = Field(default=None, description="ISO 8601: only messages after it.")
    inclusive: bool = Field(default=False, description="Include messages at exactly latest or oldest.")
    offset: Offset = 0
    count: Count = DEFAULT_COUNT
    unreads: bool = Field(default=False, description="Accepted for compatibility; ignored.")


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _history(kind: RoomType) -> Callable[[ApiRequest[HistoryParams]], Awaitable[dict[str, Any]]]:
    async def history(req: ApiRequest[HistoryParams]) -> dict[str, Any]:
        store, params = req.services.store, req.params
        room = readable_room(store, req.user, params.roomId)
        if room.type != kind:
            raise errors.NotFound(ROOM_NOT_FOUND, error_type="error-room-not-found")
        found = store.room_messages(
            room.id,
            before=_aware(params.latest),
            after=_aware(params.oldest),
            inclusive=params.inclusive,
            offset=params.offset,
            limit=params.count,
        )
        return {"messages": messages_json(store, found)}

    return history


for _name, _kind, _what in (
    ("channels.history", "c", "public channel"),
    ("groups.history", "p", "private group"),
    ("im.history", "d", "direct room"),
):
    router.get(
        _name,
        HistoryParams,
        title=f"Read a {_what}'s history",
        reply=HistoryReply,
        description=f"Messages of a {_what} you are in, newest first, between oldest and latest.",
        rate_limit=HISTORY_RATE_LIMIT,
        refuses=(ROOM_REFUSAL,),
    )(_history(_kind))  # type: ignore[arg-type]


SearchText = Annotated[
    str, Field(min_length=1, max_length=MAX_SEARCH_TEXT_CHARS, description="Text to find.")
]


class ChatSearchParams(Params):
    roomId: Id = Field(description="Id of the room.")
    searchText: SearchText
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


@router.get(
    "chat.search",
    ChatSearchParams,
    title="Find text in one room",
    description="Messages of one room you read whose text contains searchText (plain, case-insensitive, "
    "newest first). For ranked search across your rooms use ai.search.",
    rate_limit=HISTORY_RATE_LIMIT,
    refuses=(ROOM_REFUSAL,),
)
async def chat_search(req: ApiRequest[ChatSearchParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    room = readable_room(store, req.user, params.roomId)
    found = store.find_room_messages(room.id, params.searchText, offset=params.offset, limit=params.count)
    return {"messages": messages_json(store, found)}
