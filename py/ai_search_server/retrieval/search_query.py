"""A search line's filters as a ``SearchRequest``, and the relaxations a search that found nothing tries.

The core parses the line (``ai_search.parse_search_filter_text``); this module maps its
``SearchFilters`` onto the request the service runs, and back, so a relaxed request is also a line
the page can search with one click. ``RELAXATIONS`` is one table: each row drops one family of
filters (``after:``, ``in:``, ``-from:``, the quotes of a phrase...), in the order a diagnosis lists
them.

    >>> from ai_search import parse_search_filter_text
    >>> parsed = parse_search_filter_text("deploy in:#ops after:-7d")
    >>> request = search_request(parsed.search_text, parsed.filters, limit=5)
    >>> [r.key for r, _ in relaxations_of(request)]
    ['in', 'after', 'all']
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ai_search import SearchFilters, serialize_search_query

from .search_service import SearchRequest, SearchType

__all__ = ["RELAXATIONS", "Relaxation", "relaxations_of", "request_filters", "request_line", "search_request"]

# The date fields of SearchFilters, kept as typed on the request and read on the service's clock.
_DATE_FIELDS = ("start_date", "end_date", "on_date", "during")


def search_request(
    text: str,
    filters: SearchFilters,
    *,
    limit: int,
    search_type: SearchType | None = None,
    zone: datetime.tzinfo = datetime.UTC,
) -> SearchRequest:
    """The request for `text` and the filters of its line; date values stay as typed."""
    dates = SearchFilters(**{name: getattr(filters, name) for name in _DATE_FIELDS})
    return SearchRequest(
        text=text,
        limit=limit,
        rids=filters.rids,
        rid=filters.rid,
        room_names=filters.room_names,
        from_usernames=filters.from_usernames,
        from_username=filters.from_username,
        search_type=search_type,
        excluded_room_names=filters.excluded_room_names,
        excluded_usernames=filters.excluded_usernames,
        has=filters.has,
        excluded_has=filters.excluded_has,
        is_=filters.is_,
        excluded_is=filters.excluded_is,
        excluded_words=filters.excluded_words,
        sort="new" if filters.sort == "new" else "relevance",
        dates=dates,
        zone=zone,
    )


def request_filters(request: SearchRequest) -> SearchFilters:
    """The line's filters of `request` (what `search_request` took apart). Absolute `start_date` and
    `end_date` date-times (upstream's parameters) have no token and are left out."""
    return replace(
        request.dates,
        room_names=request.room_names,
        from_usernames=request.from_usernames,
        excluded_room_names=request.excluded_room_names,
        excluded_usernames=request.excluded_usernames,
        has=request.has,
        excluded_has=request.excluded_has,
        is_=request.is_,
        excluded_is=request.excluded_is,
        excluded_words=request.excluded_words,
        sort="new" if request.sort == "new" else None,
    )


def request_line(request: SearchRequest) -> str:
    """The one line that searches for `request` (room ids, which the line cannot name, aside)."""
    return serialize_search_query(request.text, request_filters(request))


@dataclass(frozen=True, slots=True)
class Relaxation:
    """One family of filters a search without results tries without: `key` names it (a filter key,
    `quotes` or `all`), `clears` the request fields it empties (to their defaults)."""

    key: str
    clears: tuple[str, ...]


_PHRASE_QUOTES = "quotes"
#: In the order a diagnosis tries them: rooms first (the usual culprit), dates, content, then all.
RELAXATIONS: tuple[Relaxation, ...] = (
    Relaxation("in", ("room_names", "rids", "rid")),
    Relaxation("from", ("from_usernames", "from_username")),
    Relaxation("after", ("dates.start_date", "start_date")),
    Relaxation("before", ("dates.end_date", "end_date")),
    Relaxation("on", ("dates.on_date",)),
    Relaxation("during", ("dates.during",)),
    Relaxation("has", ("has",)),
    Relaxation("is", ("is_",)),
    Relaxation("-in", ("excluded_room_names",)),
    Relaxation("-from", ("excluded_usernames",)),
    Relaxation("-has", ("excluded_has",)),
    Relaxation("-is", ("excluded_is",)),
    Relaxation("-", ("excluded_words",)),
    Relaxation(_PHRASE_QUOTES, ()),
)
_ALL = Relaxation(
    "all",
    tuple(dict.fromkeys(name for relaxation in RELAXATIONS for name in relaxation.clears)),
)
_DEFAULTS = SearchRequest(text="")


def _cleared(request: SearchRequest, relaxation: Relaxation) -> SearchRequest:
    changes: dict[str, Any] = {}
    dates: dict[str, Any] = {}
    for name in relaxation.clears:
        if name.startswith("dates."):
            dates[name.removeprefix("dates.")] = None
        else:
            changes[name] = getattr(_DEFAULTS, name)
    if dates:
        changes["dates"] = replace(request.dates, **dates)
    if relaxation.key in (_PHRASE_QUOTES, _ALL.key):
        changes["text"] = " ".join(request.text.replace('"', " ").split()) or request.text
    return replace(request, **changes)


def relaxations_of(request: SearchRequest) -> Iterator[tuple[Relaxation, SearchRequest]]:
    """Each relaxation that changes `request`, with the request it leaves; then all of them at once
    (the search in every room the caller reads), unless that is the only relaxation there is."""
    found = [(r, relaxed) for r in RELAXATIONS if (relaxed := _cleared(request, r)) != request]
    yield from found
    everything = _cleared(request, _ALL)
    if len(found) > 1 and everything != request:
        yield _ALL, everything
