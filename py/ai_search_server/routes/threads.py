"""Threads and context: a thread's replies, a room's threads, and any message amid its conversation.

Rocket.Chat's ``chat.getThreadMessages`` and ``chat.getThreadsList``, with its shapes, plus
``chat.getMessageContext``: what the search page opens when a result is clicked, in one call (the
thread for a reply or a thread's first message, else the messages around it in its room). Every
route reads only rooms the caller reads: a thread in another room answers as one that does not exist.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ..ratelimit import RateLimit
from ..rest import ApiRequest, Router
from ..store.base import Store
from ..store.records import Message
from .access import MESSAGE_REFUSAL, ROOM_REFUSAL, readable_message, readable_room
from .params import DEFAULT_COUNT, Count, Id, Offset, Params
from .replies import MessageContextReply, ThreadMessagesReply, ThreadsReply
from .shapes import message_json

__all__ = ["CONTEXT_MESSAGES", "MAX_CONTEXT_MESSAGES", "messages_json", "router"]

router = Router(tags=("Threads",))

# Reads of threads and context per user and minute: one per result opened, several per thread.
THREAD_RATE_LIMIT = RateLimit(count=300, period_seconds=60)
# Messages of a room shown on each side of a hit outside a thread (messages).
CONTEXT_MESSAGES = 5
# Most messages on each side a caller may ask for (messages).
MAX_CONTEXT_MESSAGES = 25
# Replies of a thread the context view shows at most (messages); a longer thread shows the replies
# around the hit, and says how many there are in all.
CONTEXT_THREAD_REPLIES = 50


def messages_json(store: Store, messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in Rocket.Chat's shape, each thread's first message with its reply summary."""
    summaries = store.thread_summaries(m.id for m in messages if m.tmid is None)
    return [message_json(m, summaries.get(m.id)) for m in messages]


class ThreadMessagesParams(Params):
    tmid: Id = Field(description="Id of the thread's first message.")
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


@router.get(
    "chat.getThreadMessages",
    ThreadMessagesParams,
    title="Read a thread",
    reply=ThreadMessagesReply,
    description="List the replies of a thread in a room the authenticated user can read, oldest first.",
    rate_limit=THREAD_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL,),
)
async def thread_messages(req: ApiRequest[ThreadMessagesParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    parent, _room = readable_message(store, req.user, params.tmid)
    replies, total = store.thread_messages(parent.tmid or parent.id, offset=params.offset, limit=params.count)
    return {
        "messages": messages_json(store, replies),
        "count": len(replies),
        "offset": params.offset,
        "total": total,
    }


class ThreadsListParams(Params):
    rid: Id = Field(description="Id of the room.")
    type: Literal["all"] = Field(default="all", description="Which threads: all of them.")
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


@router.get(
    "chat.getThreadsList",
    ThreadsListParams,
    title="List a room's threads",
    reply=ThreadsReply,
    description="List the threads of a room the authenticated user can read, the latest reply first.",
    rate_limit=THREAD_RATE_LIMIT,
    refuses=(ROOM_REFUSAL,),
)
async def threads_list(req: ApiRequest[ThreadsListParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    room = readable_room(store, req.user, params.rid)
    parents, total = store.room_threads(room.id, offset=params.offset, limit=params.count)
    return {
        "threads": messages_json(store, parents),
        "count": len(parents),
        "offset": params.offset,
        "total": total,
    }


class MessageContextParams(Params):
    msgId: Id = Field(description="Id of the message to show in its conversation.")
    around: Annotated[int, Field(ge=0, le=MAX_CONTEXT_MESSAGES)] = Field(
        default=CONTEXT_MESSAGES,
        description="Messages of the room on each side, for a message outside a thread.",
    )


@router.get(
    "chat.getMessageContext",
    MessageContextParams,
    title="A message in its conversation",
    reply=MessageContextReply,
    description="A message in its conversation: its thread (first message and replies) when it is in one, "
    "else the messages around it in its room, oldest first.",
    rate_limit=THREAD_RATE_LIMIT,
    refuses=(MESSAGE_REFUSAL,),
)
async def message_context(req: ApiRequest[MessageContextParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    message, room = readable_message(store, req.user, params.msgId)
    thread_id = message.tmid or message.id
    replies, total = store.thread_messages(thread_id, limit=CONTEXT_THREAD_REPLIES)
    if message.tmid is not None and message.id not in {r.id for r in replies}:
        # A long thread: the replies around the hit instead of its first ones.
        start = max(0, store.reply_position(message) - CONTEXT_THREAD_REPLIES // 2)
        replies, _ = store.thread_messages(thread_id, offset=start, limit=CONTEXT_THREAD_REPLIES)
    if total:
        parent = store.get_message(thread_id)
        conversation = [parent] if parent is not None else []
        kind = "thread"
        shown = [*conversation, *replies]
    else:
        kind = "room"
        shown = store.messages_around(message, before=params.around, after=params.around)
    return {
        "kind": kind,
        "message": message_json(message),
        "room": {"_id": room.id, "t": room.type, "name": room.name, "fname": room.fname},
        "tmid": thread_id if kind == "thread" else None,
        "replies": total if kind == "thread" else 0,
        "messages": messages_json(store, shown),
    }
