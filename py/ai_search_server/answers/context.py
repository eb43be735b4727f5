"""The conversations of an answer's sources: each source's thread, or the stretch of its room around it.

The search finds the message that matches the question's words; the message that answers it is often
another one of the same conversation (the reply that settled the question, the decision at the end
of a thread). The extractive answerer weighs every sentence by its conversation, so this module
loads, for each source:

- in a thread (a reply, or a first message with replies): the thread's first message and up to
  ``CONTEXT_THREAD_REPLIES`` replies, oldest first;
- otherwise: up to ``CONTEXT_ROOM_BEFORE`` earlier and ``CONTEXT_ROOM_AFTER`` later messages of its
  room that are in no thread and continue its conversation: each within
  ``CONTEXT_ROOM_GAP_MINUTES`` of the previous one kept, or within ``CONTEXT_ROOM_HOURS`` and sharing
  a word with the conversation so far (chat's inline conversations: quick turns follow each other,
  slower ones pick up the same words; a room's other chatter sits between them and does neither).

Only messages of the sources' own rooms are read, and only rooms the caller reads now (the sources'
rooms were checked when they were loaded; the check is repeated here, fail closed). Texts come from
the store, never from the client. At most ``MAX_CONTEXT_MESSAGES`` in all, sources first.

Every source and context message gets a ``conversation`` key (``thread:<first message id>``, or
``room:<id>`` shared by a source and the room messages drawn around it), which is what the
extractive answerer groups by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from ai_search import content_stems

from ..store.base import Store
from ..store.records import Message
from .sources import LoadedSource

__all__ = [
    "CONTEXT_ROOM_AFTER",
    "CONTEXT_ROOM_BEFORE",
    "CONTEXT_THREAD_REPLIES",
    "MAX_CONTEXT_MESSAGES",
    "SourceContext",
    "load_context",
]

# Replies of one thread read as context (messages): the demo's longest incident thread has 13.
CONTEXT_THREAD_REPLIES = 30
# Messages of a room read before and after a source that is in no thread (messages): an inline
# conversation rarely starts more than two messages before its best match, and settles within six.
CONTEXT_ROOM_BEFORE = 2
CONTEXT_ROOM_AFTER = 6
# Hours around a source that is in no thread within which its room's messages may belong to its
# conversation: an incident runs through a night, a discussion picks up the next morning.
CONTEXT_ROOM_HOURS = 24
# Minutes between two turns of one inline conversation: a reply in chat comes within minutes.
CONTEXT_ROOM_GAP_MINUTES = 20
# Context messages of one answer in all (messages): 20 sources with a short conversation each.
MAX_CONTEXT_MESSAGES = 120


@dataclass(frozen=True, slots=True)
class SourceContext:
    """The sources with their conversation keys, and the context messages drawn from them."""

    sources: tuple[LoadedSource, ...]
    context: tuple[LoadedSource, ...]


def load_context(
    store: Store,
    readable: frozenset[str],
    sources: Sequence[LoadedSource],
    to_source: Callable[[Message], LoadedSource],
) -> SourceContext:
    """Each source's conversation, read under the caller's rooms (``readable``); see the module docstring.

    ``to_source`` turns a stored message into a ``LoadedSource`` (room name, time format), as the
    service does for the sources themselves.
    """
    messages = store.get_messages(s.msg_id for s in sources)
    parents = store.thread_summaries(m.id for m in messages.values() if m.tmid is None)
    keys: dict[str, str] = {}
    drawn: dict[str, Message] = {}
    threads_read: set[str] = set()
    given = {s.msg_id for s in sources}

    def take(message: Message, key: str) -> None:
        if message.room_id not in readable or len(drawn) >= MAX_CONTEXT_MESSAGES:
            return
        keys.setdefault(message.id, key)
        if message.id not in given and message.text.strip():
            drawn.setdefault(message.id, message)

    for source in sources:
        message = messages.get(source.msg_id)
        if message is None or message.room_id not in readable:
            continue
        thread = message.tmid or (message.id if message.id in parents else None)
        if thread is not None:
            key = f"thread:{thread}"
            keys.setdefault(message.id, key)
            if thread not in threads_read:
                threads_read.add(thread)
                first = store.get_message(thread)
                replies, _total = store.thread_messages(thread, limit=CONTEXT_THREAD_REPLIES)
                for other in [*([first] if first is not None else []), *replies]:
                    if other.room_id == message.room_id:
                        take(other, key)
            continue
        key = keys.setdefault(message.id, f"room:{message.id}")
        for other in _inline_conversation(store, message):
            take(other, key)

    def keyed(loaded: LoadedSource) -> LoadedSource:
        key = keys.get(loaded.msg_id)
        source = dataclasses.replace(loaded.source, conversation=key)
        return dataclasses.replace(loaded, source=source)

    context = tuple(keyed(to_source(m)) for m in drawn.values())
    return SourceContext(tuple(keyed(s) for s in sources), context)


def _words(message: Message) -> frozenset[str]:
    # Numbers do not tie two messages together: every room is full of times and counts.
    return frozenset(word for word in content_stems(message.text) if not word.isdigit())


def _inline_conversation(store: Store, message: Message) -> list[Message]:
    """The room messages around ``message`` that continue its conversation, outward from it (see the
    module docstring)."""
    around = store.messages_around(message, before=CONTEXT_ROOM_BEFORE, after=CONTEXT_ROOM_AFTER)
    inline = [m for m in around if m.tmid is None]
    parents = store.thread_summaries(m.id for m in inline)
    window = timedelta(hours=CONTEXT_ROOM_HOURS)
    candidates = [m for m in inline if m.id not in parents and abs(m.ts - message.ts) <= window]
    position = (
        next(i for i, m in enumerate(candidates) if m.id == message.id) if message in candidates else None
    )
    if position is None:
        return []
    gap = timedelta(minutes=CONTEXT_ROOM_GAP_MINUTES)
    kept: list[Message] = []
    for side in (reversed(candidates[:position]), candidates[position + 1 :]):
        words = set(_words(message))
        last = message
        for other in side:
            other_words = _words(other)
            if abs(other.ts - last.ts) > gap and not other_words & words:
                break
            words |= other_words
            last = other
            kept.append(other)
    return kept
