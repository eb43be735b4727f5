"""A follow-up's sources: read it in the light of the earlier turns, search again, merge.

The route hands the answer service a ``FollowUpSearch``: the app's search service (the one
``ai.search`` uses, so the same permission scoping: the caller's subscribed, non-banned rooms, and
every result rebuilt from the store) bound to ``FOLLOW_UP_SEARCH_RESULTS`` results. ``plan`` then
turns a follow-up into the question to answer and the source ids to load:

1. ``resolve_turns`` (pure core) reads the follow-up after the earlier questions ("and who fixed it?"
   after "why did the postgres failover take so long" searches "who fixed it? postgres failover").
2. The search runs as the caller, with that text.
3. ``follow_up_sources`` merges this turn's own ``messages``, the search's results and the earlier
   turns' sources, within the answer's 20.

The service then loads every id under the caller's permissions, as it does for any answer: an
earlier turn's id the caller cannot read refuses the request the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ai_search import (
    FOLLOW_UP_SEARCH_RESULTS,
    AnswerSourceRef,
    AnswerTurn,
    follow_up_sources,
    resolve_turns,
)

from ..retrieval.search_service import SearchRequest, SearchService
from ..store.records import User

__all__ = ["FollowUpPlan", "FollowUpSearch", "plan"]


@dataclass(frozen=True, slots=True)
class FollowUpSearch:
    """The app's search service, run as the caller for a follow-up."""

    service: SearchService

    async def __call__(self, user: User, text: str) -> list[AnswerSourceRef]:
        outcome = await self.service.search(user, SearchRequest(text=text, limit=FOLLOW_UP_SEARCH_RESULTS))
        return [AnswerSourceRef(hit.message.id, hit.score) for hit in outcome.hits]


@dataclass(frozen=True, slots=True)
class FollowUpPlan:
    """What a follow-up is read as (``searched``), and the source ids of its answer."""

    searched: str
    refs: tuple[AnswerSourceRef, ...]


async def plan(
    user: User,
    query: str,
    refs: Sequence[AnswerSourceRef],
    turns: Sequence[AnswerTurn],
    search: FollowUpSearch | None,
) -> FollowUpPlan:
    """The follow-up read after ``turns``, searched as ``user`` (when a search is at hand)."""
    searched = resolve_turns(query, turns)
    found = await search(user, searched) if search is not None else []
    return FollowUpPlan(searched, tuple(follow_up_sources(refs, found, turns)))
