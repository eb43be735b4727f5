"""What a result list says about its own search: the scope receipt and, when nothing was found, why.

The server words these once (the page, REST and MCP callers read the same sentences); they are pure
so the wording is tested without a workspace.

    >>> import datetime
    >>> today = datetime.date(2026, 12, 1)
    >>> describe_search_scope(12, datetime.date(2026, 7, 1), today, today)
    'searched 12 rooms you are in, 1 Jul – today'
    >>> found = [("after", ("after:2026-10-01",), 3, False), ("all", (), 14, False)]
    >>> describe_zero_results(["#incidents", "after:2026-10-01"], found, True)
    '0 in #incidents after:2026-10-01; 3 without after:2026-10-01; 14 in all your rooms'
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence

from ._operators import get_search_filter_operator

__all__ = [
    "describe_candidate_check",
    "describe_no_days",
    "describe_search_scope",
    "describe_unknown_person",
    "describe_unknown_room",
    "describe_zero_results",
]

_MONTH_ABBREVIATIONS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Relaxation keys that are no filter key, and what dropping them reads as.
_SPECIAL_RELAXATIONS = {"quotes": "without the quotes"}


def _day(day: datetime.date, today: datetime.date) -> str:
    if day == today:
        return "today"
    month = _MONTH_ABBREVIATIONS[day.month - 1]
    return f"{day.day} {month}" if day.year == today.year else f"{day.day} {month} {day.year}"


def describe_search_scope(
    rooms: int, first: datetime.date | None, last: datetime.date, today: datetime.date
) -> str:
    """`searched 12 rooms you are in, 1 Jul – today`: how many rooms, from their first message (or
    the date filter) to the last day searched. Days are the caller's (`today` in their zone)."""
    what = f"searched {rooms} room{'' if rooms == 1 else 's'} you are in"
    if rooms == 0:
        return "searched no room: none is both asked for and one you are in"
    if first is None:
        return f"{what}; they hold no messages yet"
    if first > last:
        return f"{what}; no day is left to search"
    if first == last:
        return f"{what}, {_day(first, today)}"
    return f"{what}, {_day(first, today)} – {_day(last, today)}"


def describe_candidate_check(operators: Sequence[str], candidates: int) -> str:
    """`has:, -word checked on the best 100 matches of each branch`: a pipeline that does not apply
    the search line's other filters left them to the proposed candidates, and the receipt says so.

    >>> describe_candidate_check(["has:", "is:"], 100)
    'has:, is: checked on the best 100 matches of each branch'
    """
    return f"{', '.join(operators)} checked on the best {candidates} matches of each branch"


def _count(count: int, more: bool) -> str:
    return f"{count}+" if more else str(count)


def describe_zero_results(
    filters: Sequence[str], relaxations: Iterable[tuple[str, Sequence[str], int, bool]], had_rooms: bool
) -> str:
    """`0 in #incidents after:2026-10-01; 3 without after:2026-10-01; 14 in all your rooms`.

    `filters` are the chips' labels of the search; `relaxations` (key, tokens dropped, count, more)
    what each relaxation found (`more`: at least that many, the page's worth). `had_rooms`: the
    search named rooms, so dropping every filter reads "in all your rooms".
    """
    head = "0 in " + " ".join(filters) if filters else "0 results"
    parts = [head]
    for key, tokens, count, more in relaxations:
        if key == "all":
            where = "in all your rooms" if had_rooms else "without any filter"
        elif key in _SPECIAL_RELAXATIONS:
            where = _SPECIAL_RELAXATIONS[key]
        else:
            where = f"without {' '.join(tokens) or get_search_filter_operator(key).prefix}"
        parts.append(f"{_count(count, more)} {where}")
    return "; ".join(parts)


def describe_unknown_room(name: str) -> str:
    """What a filter naming a room the caller is not in says: never whether such a room exists."""
    return f"no room #{name} that you are in"


def describe_unknown_person(name: str) -> str:
    """What a filter naming a person who shares no room with the caller says (the same whether or
    not such a person exists)."""
    return f"nobody @{name} in the rooms you are in"


def describe_no_days(tokens: Sequence[str]) -> str:
    """What contradicting date filters say (`after:today before:yesterday`)."""
    return f"{' '.join(tokens)} leave no day to search"
