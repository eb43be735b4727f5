"""What the search box shows around the grammar: suggestions, chips and the AI toggle's tooltip.

    >>> from ai_search._grammar import get_active_search_filter
    >>> active = get_active_search_filter("deploy in:#op")
    >>> [s.value for s in build_filter_suggestions(active, [{"_id": "r1", "name": "ops"}])]
    ['ops']
    >>> [c.label for c in build_applied_filter_chips(SearchFilters(room_names=("ops", "infra")))]
    ['#ops', '#infra']

Suggestions follow upstream's newest client: `value` is the raw filter value (apply it with
`apply_search_filter_token`), `filter_key` names the operator, and a room carries its `rid`. Rooms
and users come in as `RoomOption`/`UserOption` records or as the JSON mappings the REST routes return
(`_id` or `rid`, `name`, `fname`, `t`; `_id`, `username`, `name`). Text goes through `t(key, **params)`;
`translate_english` (the default) knows every key used here.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ._constants import AI_SEARCH_FILTER_SUGGESTION_LIMIT
from ._grammar import ActiveSearchFilter
from ._operators import (
    SEARCH_FILTER_OPERATORS,
    SearchFilterOperator,
    SearchFilters,
    get_search_filter_operator,
)

__all__ = [
    "ENGLISH_MESSAGES",
    "FilterChip",
    "FilterSuggestion",
    "RoomOption",
    "Translate",
    "UserOption",
    "build_applied_filter_chips",
    "build_filter_suggestions",
    "build_user_filter_suggestions",
    "get_ai_search_button_tooltip",
    "merge_filter_suggestions",
    "translate_english",
]

ENGLISH_MESSAGES: Mapping[str, str] = {
    "Search_filter_in_rooms": "Only messages in {rooms}",
    "Search_filter_from_users": "Only messages from {users}",
    "Search_filter_after_date": "Only messages after {date}",
    "Search_filter_before_date": "Only messages before {date}",
    "Search_filter_in": "In",
    "Search_filter_from": "From",
    "Search_filter_after": "After",
    "Search_filter_before": "Before",
    "Search_in_this_room": "Search in this room",
    "Search_messages_from_this_username": "Search messages from this username",
    "Search_messages_from_this_user": "Search messages from this user",
    "Today": "Today",
    "Yesterday": "Yesterday",
    "Last_7_days": "Last 7 days",
    "AI_Search_license_required_tooltip": "AI search is not included in this workspace's license",
    "AI_Search_disabled_tooltip": "AI search is turned off by the workspace administrator",
    "Enable_AI_Search": "Turn on AI search",
    "Disable_AI_Search": "Turn off AI search",
}


class Translate(Protocol):
    def __call__(self, key: str, /, **params: str) -> str: ...


def translate_english(key: str, /, **params: str) -> str:
    """The English text of `key` with `{name}` fields filled from `params`; an unknown key is returned
    as it is, like i18n libraries do, so a missing text shows up instead of failing."""
    template = ENGLISH_MESSAGES.get(key)
    return key if template is None else template.format_map(_KeepMissing(params))


class _KeepMissing(dict[str, str]):
    # A field nobody passed stays `{name}` in the text rather than raising in the middle of the UI.
    def __missing__(self, name: str) -> str:
        return "{" + name + "}"


@dataclass(frozen=True, slots=True)
class RoomOption:
    rid: str
    name: str = ""
    fname: str = ""
    room_type: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RoomOption:
        """A room from REST JSON (`_id` or `rid`, `name`, `fname`, `t`); missing keys read as empty."""
        return cls(
            str(data.get("_id") or data.get("rid") or ""),
            str(data.get("name") or ""),
            str(data.get("fname") or ""),
            str(data.get("t") or ""),
        )


@dataclass(frozen=True, slots=True)
class UserOption:
    user_id: str
    username: str
    name: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> UserOption:
        """A user from REST JSON (`_id`, `username`, `name`); missing keys read as empty."""
        return cls(str(data.get("_id") or ""), str(data.get("username") or ""), str(data.get("name") or ""))


@dataclass(frozen=True, slots=True)
class FilterSuggestion:
    """One completion: `key` is unique in a list (for the UI), `value` the raw filter value."""

    key: str
    group: str
    title: str
    description: str
    value: str
    icon: str
    filter_key: str
    rid: str | None = None


@dataclass(frozen=True, slots=True)
class FilterChip:
    """One applied value; remove it with `remove_search_filter(filters, chip.filter_key, chip.value)`."""

    key: str
    filter_key: str
    value: str
    label: str
    title: str


_Rooms = Iterable[RoomOption | Mapping[str, Any]]


def _rooms(rooms: _Rooms) -> Iterable[RoomOption]:
    return (room if isinstance(room, RoomOption) else RoomOption.from_mapping(room) for room in rooms)


def _room_suggestions(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: _Rooms,
    t: Translate,
    today: datetime.date,
) -> list[FilterSuggestion]:
    suggestions = []
    for room in _rooms(rooms):
        value = room.name or room.fname
        if not value:  # nothing to put after `in:`
            continue
        suggestions.append(
            FilterSuggestion(
                key=f"{op.key}-{room.rid or value}",
                group=op.suggestion_group,
                # The display name, without `#`: the icon already says "room" (upstream's newest spec).
                title=room.fname or room.name,
                description=t("Search_in_this_room"),
                value=value,
                icon=op.icon,
                filter_key=op.key,
                rid=room.rid or None,
            )
        )
        if len(suggestions) == AI_SEARCH_FILTER_SUGGESTION_LIMIT:
            break
    return suggestions


def _typed_user_suggestion(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: _Rooms,
    t: Translate,
    today: datetime.date,
) -> list[FilterSuggestion]:
    value = active.lookup_text
    if not value:  # `from:` alone: applying it would leave an invalid token; user lookups fill in
        return []
    return [
        FilterSuggestion(
            key=f"{op.key}-current",
            group=op.suggestion_group,
            title=f"{op.key}:{value}",
            description=t("Search_messages_from_this_username"),
            value=value,
            icon=op.icon,
            filter_key=op.key,
        )
    ]


# Date shortcuts, in the order shown: (message key, days before today).
_DATE_SHORTCUTS = (("Today", 0), ("Yesterday", 1), ("Last_7_days", 7))


def _date_suggestions(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: _Rooms,
    t: Translate,
    today: datetime.date,
) -> list[FilterSuggestion]:
    suggestions = []
    for message_key, days in _DATE_SHORTCUTS:
        value = (today - datetime.timedelta(days=days)).isoformat()
        suggestions.append(
            FilterSuggestion(
                key=f"{op.key}-{value}",
                group=op.suggestion_group,
                title=f"{op.key}:{value}",
                description=t(message_key),
                value=value,
                icon=op.icon,
                filter_key=op.key,
            )
        )
    return suggestions


_Suggester = Callable[
    [
        SearchFilterOperator,
        ActiveSearchFilter,
        _Rooms,
        Translate,
        datetime.date,
    ],
    list[FilterSuggestion],
]
# Where each kind of operator gets its suggestions from; a new operator of a known kind needs nothing here.
_SUGGESTERS: Mapping[str, _Suggester] = {
    "room": _room_suggestions,
    "user": _typed_user_suggestion,
    "date": _date_suggestions,
}


def build_filter_suggestions(
    active: ActiveSearchFilter | None,
    rooms: _Rooms = (),
    t: Translate | None = None,
    today: datetime.date | None = None,
) -> tuple[FilterSuggestion, ...]:
    """Completions for the token under the caret: up to `AI_SEARCH_FILTER_SUGGESTION_LIMIT` of
    `rooms` for `in:`, the typed name for `from:`, and today / yesterday / 7 days ago for dates.

    `rooms` are the answer to a lookup by `get_room_lookup_text(active)` (`_room_lookup`). `today`
    defaults to the local calendar date (never UTC: a user near midnight means their own today).
    """
    if active is None:
        return ()
    op = get_search_filter_operator(active.key)
    day = today if today is not None else datetime.date.today()
    return tuple(_SUGGESTERS[op.kind](op, active, rooms, t or translate_english, day))


def build_user_filter_suggestions(
    active: ActiveSearchFilter | None,
    users: Iterable[UserOption | Mapping[str, Any]],
    t: Translate | None = None,
) -> tuple[FilterSuggestion, ...]:
    """Up to `AI_SEARCH_FILTER_SUGGESTION_LIMIT` of `users` for a `from:` token, else nothing."""
    if active is None or get_search_filter_operator(active.key).kind != "user":
        return ()
    op = get_search_filter_operator(active.key)
    translate = t or translate_english
    suggestions = []
    for item in users:
        user = item if isinstance(item, UserOption) else UserOption.from_mapping(item)
        if not user.username:
            continue
        suggestions.append(
            FilterSuggestion(
                key=f"{op.key}-{user.user_id or user.username}",
                group=op.suggestion_group,
                title=f"@{user.username}",
                description=user.name or translate("Search_messages_from_this_user"),
                value=user.username,
                icon=op.icon,
                filter_key=op.key,
            )
        )
        if len(suggestions) == AI_SEARCH_FILTER_SUGGESTION_LIMIT:
            break
    return tuple(suggestions)


def merge_filter_suggestions(
    primary: Iterable[FilterSuggestion], fallback: Iterable[FilterSuggestion]
) -> tuple[FilterSuggestion, ...]:
    """`primary`, then the `fallback` items that would apply a different filter (same key and value,
    compared case-insensitively as the grammar does, counts as the same)."""
    merged = list(primary)
    seen = {(s.filter_key, s.value.lower()) for s in merged}
    for suggestion in fallback:
        identity = (suggestion.filter_key, suggestion.value.lower())
        if identity not in seen:
            seen.add(identity)
            merged.append(suggestion)
    return tuple(merged)


def build_applied_filter_chips(filters: SearchFilters, t: Translate | None = None) -> tuple[FilterChip, ...]:
    """One chip per value, in the table's order (rooms, users, after, before), so each value can be
    removed on its own. `rids` have no name to show and get no chip."""
    translate = t or translate_english
    chips = []
    for op in SEARCH_FILTER_OPERATORS:
        for value in op.values_of(filters):
            label = op.chip_label.format(value=value)
            chips.append(
                FilterChip(
                    key=f"{op.key}:{value.lower()}",
                    filter_key=op.key,
                    value=value,
                    label=label,
                    title=translate(
                        op.chip_title_key, **{op.chip_title_param: op.chip_title_value.format(value=value)}
                    ),
                )
            )
    return tuple(chips)


def get_ai_search_button_tooltip(
    has_license: bool, enabled: bool, active: bool, t: Translate | None = None
) -> str:
    """The AI toggle's tooltip: why it is unavailable (license first, then the setting), else what a
    click does."""
    translate = t or translate_english
    if not has_license:
        return translate("AI_Search_license_required_tooltip")
    if not enabled:
        return translate("AI_Search_disabled_tooltip")
    return translate("Disable_AI_Search" if active else "Enable_AI_Search")
