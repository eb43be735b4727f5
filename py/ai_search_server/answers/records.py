"""Answers kept for sharing and rating: storing each answer given, and showing one to a reader.

Every answer the service gives is stored under a fresh random id (``answerId``): its question, text,
provider and the ids of its numbered sources, never their texts. Its owner may share it (its link
then opens for any signed-in reader) and anyone who may open it may rate it.

Showing a stored answer reads its sources again, as the reader: a source in a room the reader does
not read now, or one deleted since, is hidden, and ``ai_search.answer_for_reader`` keeps only what
the visible sources say (see there). An answer the reader may not open answers exactly as one that
does not exist, so an id confirms nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ai_search import AnswerSource, ReaderView, answer_for_reader

from ..store.base import Store, StoreError
from ..store.records import AnswerFeedback, AnswerSourceRecord, StoredAnswer, User
from ..store.rules import new_id
from .answer_errors import AnswerNotFound
from .sources import Citation, LoadedSource, citation, loaded_source

__all__ = ["ANSWER_NOT_FOUND", "OpenedAnswer", "keep_answer", "openable_answer", "reader_view"]

log = logging.getLogger(__name__)

ANSWER_NOT_FOUND = "Answer not found or not shared with you"


@dataclass(frozen=True, slots=True)
class OpenedAnswer:
    """A kept answer as one reader may see it (``ai.search.answer.get``): ``view`` holds only what the
    sources they read now say, ``citations`` only the sources they read."""

    stored: StoredAnswer
    view: ReaderView
    citations: tuple[Citation, ...]
    mine: bool
    feedback: AnswerFeedback | None


def keep_answer(
    store: Store,
    user: User,
    query: str,
    answer: str,
    sources: Sequence[tuple[str, str]],
    provider: dict[str, str],
    searched: str | None,
) -> str | None:
    """Store an answer just given to ``user`` (``sources``: ``(msg_id, rid)`` of ``[1]..``); its id,
    or None when the store failed (the answer is still given, without sharing or rating)."""
    record = StoredAnswer(
        id=new_id(),
        user_id=user.id,
        query=query,
        answer=answer,
        sources=tuple(AnswerSourceRecord(n, msg_id, rid) for n, (msg_id, rid) in enumerate(sources, start=1)),
        provider=dict(provider),
        created_at=datetime.now(UTC),
        searched=searched,
    )
    try:
        store.save_answer(record)
    except StoreError:
        log.exception("could not store an answer; it is given without an answerId")
        return None
    return record.id


def openable_answer(store: Store, reader: User, answer_id: str) -> StoredAnswer:
    """The answer, if ``reader`` owns it or its owner shared it.

    Raises:
        AnswerNotFound: no such answer, or not the reader's to open.
    """
    stored = store.get_answer(answer_id)
    if stored is None or (stored.user_id != reader.id and stored.shared_at is None):
        raise AnswerNotFound(ANSWER_NOT_FOUND)
    return stored


def _visible_sources(store: Store, reader: User, stored: StoredAnswer) -> list[LoadedSource | None]:
    messages = store.get_messages(s.msg_id for s in stored.sources)
    readable = store.readable_room_ids(reader.id)
    rooms = store.get_rooms({m.room_id for m in messages.values() if m.room_id in readable})
    out: list[LoadedSource | None] = []
    for record in stored.sources:
        message = messages.get(record.msg_id)
        visible = message is not None and message.room_id in readable and message.room_id == record.rid
        out.append(loaded_source(message, rooms) if visible and message is not None else None)
    return out


def reader_view(
    store: Store, reader: User, stored: StoredAnswer, feedback: AnswerFeedback | None
) -> OpenedAnswer:
    """A stored answer as ``reader`` may see it (``ai.search.answer.get``)."""
    loaded = _visible_sources(store, reader, stored)
    sources: list[AnswerSource | None] = [s.source if s is not None else None for s in loaded]
    view = answer_for_reader(stored.answer, sources)
    cited = dict.fromkeys(n for sentence in view.sentences for n in sentence.citations)
    citations = tuple(citation(n, shown) for n in cited if (shown := loaded[n - 1]) is not None)
    return OpenedAnswer(stored, view, citations, stored.user_id == reader.id, feedback)
