"""Why a search found nothing, and what each relaxation of it would find.

When a search answers no result, each family of its filters is dropped in turn (``RELAXATIONS``)
and the search runs again as the same caller, through the same service: so every count is of
messages the caller may read, found by the same ranking and floors, and a relaxation the page
offers finds exactly what it said. The first page's worth counts (``count`` with ``more`` when
there were at least that many). A name that is no room or person of the caller's says so in words
that never tell whether such a room or person exists.

This runs only for searches without results, at most ``len(RELAXATIONS) + 1`` more searches, most
of which a filter family absent from the line skips.
"""

from __future__ import annotations

from dataclasses import dataclass

from ai_search import (
    build_applied_filter_chips,
    describe_no_days,
    describe_unknown_person,
    describe_unknown_room,
    describe_zero_results,
    format_search_filter_value,
    get_search_filter_operator,
)

from ..store.records import User
from .search_query import relaxations_of, request_filters, request_line
from .search_service import SearchOutcome, SearchRequest, SearchScope, SearchService

__all__ = ["Diagnosis", "RelaxationFound", "diagnose", "unknown_names"]

_DATE_KEYS = ("after", "before", "on", "during")


@dataclass(frozen=True, slots=True)
class RelaxationFound:
    """One relaxation tried: its key (a filter key, `quotes` or `all`), the tokens it drops, what it
    found, and the line that searches for it."""

    key: str
    dropped: tuple[str, ...]
    count: int
    more: bool
    line: str


@dataclass(frozen=True, slots=True)
class Diagnosis:
    text: str
    relaxations: tuple[RelaxationFound, ...]


def unknown_names(scope: SearchScope) -> tuple[str, ...]:
    """The sentences for names the caller cannot search by (never whether they exist)."""
    return (
        *map(describe_unknown_room, scope.unknown_rooms),
        *map(describe_unknown_person, scope.unknown_people),
    )


def _dropped(request: SearchRequest, relaxed: SearchRequest) -> tuple[str, ...]:
    before = {chip.token for chip in build_applied_filter_chips(request_filters(request))}
    after = {chip.token for chip in build_applied_filter_chips(request_filters(relaxed))}
    return tuple(token for token in sorted(before - after))


async def diagnose(
    service: SearchService, user: User, request: SearchRequest, outcome: SearchOutcome
) -> Diagnosis | None:
    """What a search without results would find with less; None when it found something or search
    is off."""
    scope = outcome.report.scope
    if outcome.hits or not outcome.report.ran or scope is None:
        return None
    filters = request_filters(request)
    # What narrowed the search; an order (sort:new) narrows nothing.
    labels = [
        c.label for c in build_applied_filter_chips(filters, today=scope.today) if c.filter_key != "sort"
    ]
    if scope.no_days:
        tokens = [
            format_search_filter_value(key, value)
            for key in _DATE_KEYS
            for value in get_search_filter_operator(key).values_of(filters)
        ]
        return Diagnosis(describe_no_days(tokens), ())
    found: list[RelaxationFound] = []
    for relaxation, relaxed in relaxations_of(request):
        again = await service.search(user, relaxed)
        count = len(again.hits)
        found.append(
            RelaxationFound(
                relaxation.key,
                _dropped(request, relaxed),
                count,
                count >= relaxed.limit,
                request_line(relaxed),
            )
        )
    had_rooms = bool(request.room_names or request.rids or request.rid)
    text = describe_zero_results(labels, ((f.key, f.dropped, f.count, f.more) for f in found), had_rooms)
    return Diagnosis(text, tuple(found))
