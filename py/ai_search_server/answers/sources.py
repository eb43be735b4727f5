"""An answer's sources as loaded from the store, and its citations of them: what the service, the
context and the kept answers share (a module of its own, so that each imports it and none imports
another)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ai_search import AnswerSource, to_iso_timestamp

from ..store.records import Message, Room

__all__ = ["Citation", "LoadedSource", "citation", "loaded_source"]


@dataclass(frozen=True, slots=True)
class LoadedSource:
    """A source the caller may read, as loaded from the store, numbered by its position (1-based).

    ``username``, ``user_name`` and ``room`` say whose message it is and where, so a citation of a
    message the page does not list can still be shown by its author and room (never by a number).
    """

    msg_id: str
    rid: str
    source: AnswerSource
    username: str = ""
    user_name: str = ""
    room: Room | None = None


def loaded_source(message: Message, rooms: Mapping[str, Room], score: float | None = None) -> LoadedSource:
    """A stored message as an answer source: its text, author, room name and time."""
    room = rooms.get(message.room_id)
    room_name = (room.fname or room.name) if room is not None else None
    source = AnswerSource(
        message.text,
        message.username,
        room_name,
        to_iso_timestamp(message.ts),
        score,
        author_name=message.user_name or None,
    )
    return LoadedSource(message.id, message.room_id, source, message.username, message.user_name, room)


@dataclass(frozen=True, slots=True)
class Citation:
    """An answer's ``[n]``, and the message it cites: its id, room, author and room record (for a page
    that does not list the message: it names it by author and room)."""

    n: int
    msg_id: str
    rid: str
    username: str = ""
    user_name: str = ""
    room: Room | None = None


def citation(n: int, loaded: LoadedSource) -> Citation:
    """Source ``n`` as a citation."""
    return Citation(n, loaded.msg_id, loaded.rid, loaded.username, loaded.user_name, loaded.room)
