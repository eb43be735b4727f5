"""``GET /api/v1/ai.search``: permission-scoped hybrid search over the caller's messages.

Two ways to ask, one result:

- upstream's parameters: ``query`` (1–500 characters), ``intelligentCount`` (floored, clamped to
  1..50, default 5), comma lists ``rids``, ``roomNames``, ``fromUsernames`` (trimmed, empties
  dropped, 25 kept), ``rid``, ``fromUsername``, ``startDate`` / ``endDate`` ('' or a date or
  date-time; a date is midnight UTC);
- the one-line query as ``q`` (``in:#ops from:@alice after:2026-11-01 deploy``), parsed on the server
  by the same grammar the page runs in the browser.

Either may add ``searchType`` (``keyword``, ``semantic`` or ``hybrid``: the weight setting), as the
upstream's hybrid documentation describes. Any other parameter is a 400 naming it.

Each result is rebuilt from the store (``_id, rid, msgId, text, ts, u, score, room``), plus
``highlights`` (``[start, end)`` code-point ranges of matched words in ``text``), ``matchReason``
(``keyword``, ``semantic`` or ``both``) and, for a message imported or mirrored from another system,
``sourceUrl`` (its link there). ``meta`` carries upstream's three flags and ``retrieval``:
which pipeline answered, each branch's state, and notices for the page when the search degraded.
"""

from __future__ import annotations

import math
import re
import zoneinfo
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from ai_search import (
    AI_SEARCH_PAGE_SIZE,
    MAX_INTELLIGENT_SEARCH_RESULTS,
    MAX_SEARCH_FILTER_VALUES,
    MAX_SEARCH_QUERY_LENGTH,
    build_filter_hints,
    find_refused_search_filters,
    parse_search_filter_text,
)

from .. import errors
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Router
from ..retrieval.diagnosis import diagnose
from ..retrieval.search_query import search_request
from ..retrieval.search_service import SearchRequest
from .params import NoParams, Params
from .replies import SearchReply, SearchStatusReply
from .shapes import search_hit_json, search_meta_json, search_status_json

__all__ = ["MAX_COMMA_LIST_CHARS", "MAX_QUERY_LINE_CHARS", "SearchLineParams", "SearchParams", "router"]

router = Router(tags=("AI search",))

# Searches per user and minute, as upstream.
SEARCH_RATE_LIMIT = RateLimit(count=120, period_seconds=60)
# Characters of a comma-separated list parameter (upstream's schema).
MAX_COMMA_LIST_CHARS = 4096
# Characters of `rid` and `fromUsername` (upstream's schema).
MAX_SINGLE_VALUE_CHARS = 256
# Characters of a date parameter: an ISO date-time with fractions and an offset fits.
MAX_DATE_CHARS = 40
# Characters of the one-line query: the words (500) plus up to 25 room and 25 user filters.
MAX_QUERY_LINE_CHARS = 4096
# Characters of a time zone: the longest IANA name is 32 ("America/Argentina/ComodRivadavia").
MAX_TIME_ZONE_CHARS = 64
# An offset the browser may send instead of a zone name: +05:30, -08:00, Z.
_OFFSET = re.compile(r"([+-])([01][0-9]|2[0-3]):?([0-5][0-9])")

CommaList = Annotated[str, Field(max_length=MAX_COMMA_LIST_CHARS)]
SingleValue = Annotated[str, Field(max_length=MAX_SINGLE_VALUE_CHARS)]
DateValue = Annotated[
    str, Field(max_length=MAX_DATE_CHARS, description="'' or YYYY-MM-DD or an ISO date-time.")
]
Count = Annotated[float, Field(allow_inf_nan=False, description="Results wanted; floored, clamped to 1..50.")]
TimeZoneParam = Annotated[
    str,
    Field(
        max_length=MAX_TIME_ZONE_CHARS,
        description="The caller's time zone, an IANA name (Europe/Paris) or an offset (+05:30); "
        "relative dates in q (after:yesterday) are read in it. Default UTC.",
    ),
]
SearchTypeParam = Annotated[
    Literal["keyword", "semantic", "hybrid"],
    Field(description="keyword or semantic branch only, or hybrid (the configured semantic weight)."),
]


def _date(value: str, name: str) -> datetime | None:
    """'' -> None; a date -> midnight UTC; a date-time -> aware (UTC when it names no zone)."""
    text = value.strip()
    if not text:
        return None
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time(), UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise errors.InvalidParams(
            f"Invalid parameters: '{name}' must be empty, a date or a date-time"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _comma_list(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    items = [item.strip() for item in value.split(",")]
    return tuple(item for item in items if item)[:MAX_SEARCH_FILTER_VALUES]


def _count(value: float | None) -> int:
    if value is None:
        return AI_SEARCH_PAGE_SIZE
    return min(MAX_INTELLIGENT_SEARCH_RESULTS, max(1, math.floor(value)))


def _single(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def _zone(value: str | None) -> tzinfo:
    """The caller's zone: an IANA name through the zone database, or a fixed offset (exact only away
    from daylight-saving changes, which an offset cannot know)."""
    text = (value or "").strip()
    if not text or text.upper() in ("UTC", "Z"):
        return UTC
    offset = _OFFSET.fullmatch(text)
    if offset:
        sign = -1 if offset[1] == "-" else 1
        return timezone(sign * timedelta(hours=int(offset[2]), minutes=int(offset[3])))
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise errors.InvalidParams(
            "Invalid parameters: 'tz' must be a time zone name such as Europe/Paris or an offset such as +05:30"
        ) from None


class _Common(Params):
    intelligentCount: Count | None = None
    tz: TimeZoneParam | None = None
    rid: SingleValue | None = Field(default=None, description="Search only this room (an id).")
    rids: CommaList | None = Field(default=None, description="Comma-separated room ids to search in.")
    searchType: SearchTypeParam | None = None


class SearchParams(_Common):
    query: Annotated[str, Field(min_length=1, max_length=MAX_SEARCH_QUERY_LENGTH)] = Field(
        description="What to search for (1–500 characters)."
    )
    roomNames: CommaList | None = Field(default=None, description="Comma-separated room names to search in.")
    fromUsernames: CommaList | None = Field(default=None, description="Comma-separated authors' usernames.")
    fromUsername: SingleValue | None = Field(default=None, description="One author's username.")
    startDate: DateValue | None = Field(default=None, description="Only messages from then on.")
    endDate: DateValue | None = Field(default=None, description="Only messages up to then.")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain a non-space character")
        return value


class SearchLineParams(_Common):
    q: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_LINE_CHARS)] = Field(
        description="The one-line query: words plus in:#room from:@user after:2026-11-01 before:-7d "
        'on:yesterday during:last-week has:link is:thread sort:new, and -in:, -from:, -word, -"a phrase" '
        "to leave out."
    )


def _request(params: SearchParams | SearchLineParams) -> SearchRequest:
    zone = _zone(params.tz)
    if isinstance(params, SearchParams):
        return SearchRequest(
            text=params.query.strip(),
            limit=_count(params.intelligentCount),
            rids=_comma_list(params.rids),
            rid=_single(params.rid),
            search_type=params.searchType,
            room_names=_comma_list(params.roomNames),
            from_usernames=_comma_list(params.fromUsernames),
            from_username=_single(params.fromUsername),
            start_date=_date(params.startDate or "", "startDate"),
            end_date=_date(params.endDate or "", "endDate"),
            zone=zone,
        )
    parsed = parse_search_filter_text(params.q)
    text = parsed.search_text.strip()
    if not text:
        raise errors.InvalidParams("Invalid parameters: 'q' needs words to search for besides its filters")
    if len(text) > MAX_SEARCH_QUERY_LENGTH:
        raise errors.InvalidParams(
            f"Invalid parameters: the words of 'q' are over {MAX_SEARCH_QUERY_LENGTH} characters"
        )
    request = search_request(
        text, parsed.filters, limit=_count(params.intelligentCount), search_type=params.searchType, zone=zone
    )
    return replace(request, rids=_comma_list(params.rids), rid=_single(params.rid))


@router.get(
    "ai.search",
    SearchParams,
    SearchLineParams,
    title="Search messages",
    reply=SearchReply,
    description="Search the messages of the rooms the authenticated user can read: keyword and semantic "
    "matches fused, each result rebuilt from the workspace with highlights and why it matched.",
    variant_descriptions=(
        "Search with upstream's parameters: query plus optional rooms, authors and dates.",
        "Search with one line as typed in the search box: q=in:#ops from:@alice after:2026-11-01 deploy.",
    ),
    rate_limit=SEARCH_RATE_LIMIT,
)
async def ai_search(req: ApiRequest[SearchParams | SearchLineParams]) -> dict[str, Any]:
    request = _request(req.params)
    service = await req.services.search.get()
    outcome = await service.search(req.user, request)
    line = req.params.q if isinstance(req.params, SearchLineParams) else ""
    return {
        "intelligent": [search_hit_json(hit) for hit in outcome.hits],
        "meta": search_meta_json(
            service.status(),
            outcome.report,
            diagnosis=await diagnose(service, req.user, request, outcome),
            hints=build_filter_hints(find_refused_search_filters(line)),
        ),
    }


@router.get(
    "ai.search.status",
    NoParams,
    title="Search status",
    reply=SearchStatusReply,
    description="Whether search and answers run, how much of the workspace the index has embedded, and "
    "how far the second stage (the re-ranking model) has come: its vectors are filled in the background.",
)
async def ai_search_status(req: ApiRequest[NoParams]) -> dict[str, Any]:
    service = await req.services.search.get()
    return search_status_json(service)
